package architecture

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// contractLiterals are the strings pkg/external (or Cluster API's module) defines once: a
// controller spelling one again is the drift the contract is there to stop.
var contractLiterals = []string{
	`"butler-apiserver"`, `"butler-localprovider"`, // the field managers
	`"butler.butlerlabs.dev/tenant-cluster-namespace"`, `"butler.butlerlabs.dev/protected"`,
	`"app.kubernetes.io/managed-by"`,
	`"cluster.x-k8s.io/cluster-name"`, `"cluster.x-k8s.io/secret"`,
}

// fieldPath is a read of an object's spec or status by string path: unstructured.Nested* with
// "spec" or "status" in the path, or with a path passed on (path...), which is how a helper
// hides one; or the object's spec or status map indexed directly.
var fieldPath = regexp.MustCompile(`unstructured\.Nested\w+\([^)]*("spec"|"status"|\.\.\.)|(\.Object|UnstructuredContent\(\))\["(spec|status)"\]\.\(`)

// The controllers, builders and providers write the contract's labels and field managers and read
// the spec and status of external objects through pkg/external (docs/architecture.md), never by
// their own literal or path.
func TestExternalContractDefinedOnce(t *testing.T) {
	// Where a literal may stand: its definition, and the binaries' names and user agents.
	allowed := map[string]bool{
		"pkg/external/fieldmanager.go": true, "pkg/external/labels.go": true,
	}
	// Names of the binaries, not field managers.
	binaryNames := regexp.MustCompile(`pflag\.NewFlagSet|UserAgent|User-Agent|Use: |NewEmptyDelegate|CommonName|"butler-apiserver", "butler-apiserver\.|filepath\.Join\(|ID: `)
	// Where a path may stand. The local provider, standing in for capi-steward, copies the
	// StewardControlPlane's subtrees it does not interpret (kubelet, admission controllers, extra
	// arguments, addons) into the TenantControlPlane as they are; it reads the conditions of the
	// StewardControlPlane's status, which it writes (each kept or dropped one by one); and it
	// compares the status it writes, on both kinds, with the one there.
	pathAllowed := map[string][]string{
		"pkg/localprovider/stewardcontrolplane/stewardcontrolplane_desired.go": {`unstructured.NestedFieldCopy(scp.Object, path...)`},
		"pkg/localprovider/stewardcontrolplane/stewardcontrolplane_status.go": {
			`unstructured.NestedSlice(scp.Object, "status", "conditions")`,
			`scp.Object["status"].(map[string]any)`,
		},
		"pkg/localprovider/controlplane/tenantcontrolplane_status.go": {`tcp.Object["status"].(map[string]any)`},
	}
	allowedPath := func(rel, line string) bool {
		return slices.ContainsFunc(pathAllowed[rel], func(read string) bool { return strings.Contains(line, read) })
	}
	for _, rel := range handWrittenSources(t) {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue
			}
			for _, lit := range contractLiterals {
				if strings.Contains(line, lit) && !allowed[rel] && !binaryNames.MatchString(line) {
					t.Errorf("%s:%d spells %s: use pkg/external's (or clusterv1's) constant", rel, i+1, lit)
				}
			}
			if fieldPath.MatchString(line) && !allowedPath(rel, line) {
				t.Errorf("%s:%d reads a spec or status by string path: read it typed (external.FromUnstructured)", rel, i+1)
			}
		}
	}
}

// handWrittenSources are the non-test Go files of pkg and cmd, relative to root, but for
// generated code (generated/ directories, zz_generated files).
func handWrittenSources(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, top := range []string{"pkg", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "generated" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasPrefix(d.Name(), "zz_generated") {
				return nil
			}
			rel, err := filepath.Rel(root, path)
			files = append(files, rel)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}
