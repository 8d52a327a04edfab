package standalone

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestKubectl is what a new user tries first, in order: each step runs on what the steps before
// it left (the examples applied, the cluster patched and scaled), and a failed step does not stop
// the ones after it.
func TestKubectl(t *testing.T) {
	examples := filepath.Join(server.root, "artifacts", "examples")
	for _, s := range []struct {
		name  string
		check func(t *testing.T)
	}{
		{"server is ready", func(t *testing.T) { succeeds(t, "get", "--raw", "/readyz") }},
		{"kubectl get tenantclusters answers", func(t *testing.T) {
			contains(t, "No resources found", "get", "tenantclusters", "-A")
		}},
		{"apply creates one object of each kind", func(t *testing.T) {
			contains(t, "tenantaddon.butler.butlerlabs.dev/prod-metrics-server created", "apply", "-f", examples)
		}},
		{"kubectl get butler -A lists all eight", func(t *testing.T) { countObjects(t, 8) }},
		{"kubectl get tc shows the columns", func(t *testing.T) {
			contains(t, "NAME   PHASE   PROGRESS   VERSION   WORKERS   ENDPOINT   AGE", "get", "tc", "-n", "team-a")
		}},
		{"kubectl get tc shows the row", func(t *testing.T) { contains(t, "v1.31.4   0/3", "get", "tc", "-n", "team-a") }},
		{"-o wide adds OS, TEAM, PROVIDER", func(t *testing.T) {
			contains(t, "OS      TEAM     PROVIDER", "get", "tc", "-n", "team-a", "-o", "wide")
		}},
		{"short names and columns of every kind", func(t *testing.T) {
			succeeds(t, "get", "bc,tm,ad", "-o", "name")
			succeeds(t, "get", "np,ipa,pc,ta", "-n", "team-a", "-o", "name")
		}},
		{"bad CIDR, Rocky on v1.31.0 and replicas -1: one 422 naming all three", func(t *testing.T) {
			refusedNaming(t, "", []string{"is invalid", "spec.networking.podCIDR", "spec.kubernetesVersion", "spec.workers.replicas"},
				"apply", "-f", filepath.Join(server.root, "test", "testdata", "invalid-tenantcluster.yaml"))
		}},
		{"the refused cluster was not stored", func(t *testing.T) { contains(t, "NotFound", "get", "tc", "broken", "-n", "team-a") }},
		{"server-side apply", func(t *testing.T) {
			contains(t, "serverside-applied", "apply", "--server-side", "-f", filepath.Join(examples, "06-tenantcluster.yaml"))
		}},
		{"kubectl explain reads the OpenAPI", func(t *testing.T) {
			contains(t, "WorkersSpec is the worker pool", "explain", "tenantcluster.spec.workers")
		}},
		{"field selector on spec.clusterRef.name", func(t *testing.T) {
			contains(t, "prod-metrics-server", "get", "ta", "-n", "team-a", "--field-selector", "spec.clusterRef.name=prod")
		}},
		{"strict field validation names an unknown field", strictValidation},
		{"kubectl patch bumps generation", func(t *testing.T) {
			succeeds(t, "patch", "tc", "prod", "-n", "team-a", "--type=merge", "-p", `{"spec":{"workers":{"replicas":4}}}`)
			jsonpathIs(t, "{.metadata.generation}", "2")
		}},
		{"kubectl scale sets spec.workers.replicas", func(t *testing.T) {
			succeeds(t, "scale", "tenantcluster", "prod", "-n", "team-a", "--replicas=6")
			jsonpathIs(t, "{.spec.workers.replicas}", "6")
		}},
		// Users before what they use: a Team with clusters and a pool with allocations refuse deletion.
		{"a pool with live allocations is not deleted", func(t *testing.T) {
			contains(t, "live allocation(s) hold addresses in it (prod-lb)", "delete", "-f", filepath.Join(examples, "03-networkpool.yaml"))
			succeeds(t, "get", "np", "lab", "-n", "team-a", "-o", "name")
		}},
		{"delete in reverse order removes everything", func(t *testing.T) { deleteInReverse(t, examples) }},
	} {
		t.Run(s.name, s.check)
	}
}

// countObjects fails t unless kubectl get butler -A lists n objects.
func countObjects(t *testing.T, n int) {
	t.Helper()
	out := succeeds(t, "get", "butler", "-A", "-o", "name")
	got := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, ".butlerlabs.dev/") { // not "No resources found", which kubectl writes to stderr
			got++
		}
	}
	if got != n {
		t.Fatalf("kubectl get butler -A: %d objects, want %d:\n%s", got, n, out)
	}
}

// jsonpathIs fails t unless the TenantCluster prod's field at path is want.
func jsonpathIs(t *testing.T, path, want string) {
	t.Helper()
	if got := strings.TrimSpace(succeeds(t, "get", "tc", "prod", "-n", "team-a", "-o", "jsonpath="+path)); got != want {
		t.Fatalf("%s is %q, want %q", path, got, want)
	}
}

// strictValidation replaces prod with its workers field misspelt, which strict validation refuses
// naming the field.
func strictValidation(t *testing.T) {
	lines := strings.Split(succeeds(t, "get", "tc", "prod", "-n", "team-a", "-o", "json"), "\n")
	for i, l := range lines {
		lines[i] = strings.Replace(l, `"workers"`, `"wrokers"`, 1)
	}
	refusedNaming(t, strings.Join(lines, "\n"), []string{`unknown field "spec.wrokers"`}, "replace", "--validate=strict", "-f", "-")
}

// deleteInReverse deletes the examples' files last first, and checks that no object is left.
func deleteInReverse(t *testing.T, examples string) {
	files, err := filepath.Glob(filepath.Join(examples, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples in %s: %v", examples, err)
	}
	slices.Reverse(files)
	for _, f := range files {
		succeeds(t, "delete", "-f", f)
	}
	countObjects(t, 0)
}
