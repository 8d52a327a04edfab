package plane

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

func TestAPIResourcesThroughAggregation(t *testing.T) {
	out := framework.MustKubectl(t, "api-resources", "--api-group=butler.butlerlabs.dev", "--no-headers")
	for _, want := range []string{
		"addondefinitions ad", "butlerconfigs", "ipallocations ipa", "networkpools np",
		"providerconfigs pc", "teams", "tenantaddons ta", "tenantclusters tc",
	} {
		found := false
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.Join(strings.Fields(line), " "), want) {
				found = true
			}
		}
		if !found {
			t.Errorf("api-resources has no %q:\n%s", want, out)
		}
	}
	status := framework.MustKubectl(t, "get", "apiservice", "v1alpha1.butler.butlerlabs.dev",
		"-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
	if status != "True" {
		t.Errorf("APIService Available=%q", status)
	}
}

func TestGetDescribeExplainWide(t *testing.T) {
	ns := framework.Namespace(t, "e2e-get")
	framework.MustApply(t, tenantCluster(ns, "prod"))

	out := framework.MustKubectl(t, "get", "tc", "-n", ns)
	header := strings.Fields(strings.Split(out, "\n")[0])
	if strings.Join(header, " ") != "NAME PHASE PROGRESS VERSION WORKERS ENDPOINT AGE" {
		t.Errorf("kubectl get tc columns: %q", header)
	}
	if !strings.Contains(out, "prod") || !strings.Contains(out, "v1.31.4") {
		t.Errorf("kubectl get tc:\n%s", out)
	}
	wide := framework.MustKubectl(t, "get", "tenantclusters", "-n", ns, "-o", "wide")
	for _, col := range []string{"OS", "TEAM", "PROVIDER", "talos", "harvester"} {
		if !strings.Contains(wide, col) {
			t.Errorf("-o wide has no %q:\n%s", col, wide)
		}
	}
	all := framework.MustKubectl(t, "get", "tenantclusters", "-A")
	if !strings.Contains(all, ns) {
		t.Errorf("get -A does not list %s:\n%s", ns, all)
	}
	describe := framework.MustKubectl(t, "describe", "tc", "prod", "-n", ns)
	for _, want := range []string{"Name:         prod", "Kubernetes Version:  v1.31.4", "Pod CIDR:"} {
		if !strings.Contains(describe, want) {
			t.Errorf("describe has no %q:\n%s", want, describe)
		}
	}
	explain := framework.MustKubectl(t, "explain", "tenantclusters.spec.workers")
	if !strings.Contains(explain, "replicas") || !strings.Contains(explain, "DESCRIPTION") ||
		len(strings.TrimSpace(explain)) < 200 {
		t.Errorf("explain shows no field descriptions:\n%s", explain)
	}
	explainField := framework.MustKubectl(t, "explain", "tc.spec.kubernetesVersion")
	if !strings.Contains(explainField, "DESCRIPTION:") || strings.Contains(explainField, "<empty>") {
		t.Errorf("explain of a field has no description:\n%s", explainField)
	}
}

func TestServerSideApplyTwoManagers(t *testing.T) {
	ns := framework.Namespace(t, "e2e-ssa")
	manifest := tenantCluster(ns, "prod")
	framework.MustApply(t, manifest, "--server-side", "--field-manager=platform")
	// Applying the same object again as the same manager is a no-op success.
	framework.MustApply(t, manifest, "--server-side", "--field-manager=platform")

	// A second manager that sets a field the first one owns to a new value conflicts.
	other := strings.Replace(manifest, "replicas: 3", "replicas: 5", 1)
	out, err := framework.KubectlAs(t, framework.Plane.Kubeconfig, other, "apply", "--server-side", "--field-manager=team", "-f", "-")
	if err == nil || !strings.Contains(out, "conflict") || !strings.Contains(out, "platform") ||
		!strings.Contains(out, ".spec.workers.replicas") {
		t.Fatalf("want a conflict with manager platform on .spec.workers.replicas, got err=%v:\n%s", err, out)
	}
	framework.MustApply(t, other, "--server-side", "--field-manager=team", "--force-conflicts")
	if got := framework.MustKubectl(t, "get", "tc", "prod", "-n", ns, "-o", "jsonpath={.spec.workers.replicas}"); got != "5" {
		t.Errorf("replicas after forced apply = %q, want 5", got)
	}
	managers := framework.MustKubectl(t, "get", "tc", "prod", "-n", ns, "--show-managed-fields", "-o", "jsonpath={.metadata.managedFields[*].manager}")
	if !strings.Contains(managers, "platform") || !strings.Contains(managers, "team") {
		t.Errorf("managed fields managers = %q, want platform and team", managers)
	}
}

func TestScaleAndWait(t *testing.T) {
	ns := framework.Namespace(t, "e2e-scale")
	framework.MustApply(t, tenantCluster(ns, "prod"))

	// kubectl wait for a replica count set by kubectl scale, started before the scale.
	wait := exec.Command("kubectl", "--kubeconfig", framework.Plane.Kubeconfig, "wait", "tc/prod", "-n", ns,
		"--for=jsonpath={.spec.workers.replicas}=7", "--timeout=60s")
	var waitOut strings.Builder
	wait.Stdout, wait.Stderr = &waitOut, &waitOut
	if err := wait.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if out := framework.MustKubectl(t, "scale", "tc", "prod", "-n", ns, "--replicas=7"); !strings.Contains(out, "scaled") {
		t.Errorf("kubectl scale: %s", out)
	}
	if err := wait.Wait(); err != nil {
		t.Fatalf("kubectl wait: %v\n%s", err, waitOut.String())
	}
	if got := framework.MustKubectl(t, "get", "--raw", "/apis/butler.butlerlabs.dev/v1alpha1/namespaces/"+ns+"/tenantclusters/prod/scale"); !strings.Contains(got, `"replicas":7`) {
		t.Errorf("scale subresource: %s", got)
	}

	// A status written through /status satisfies a wait on status.phase.
	wait = exec.Command("kubectl", "--kubeconfig", framework.Plane.Kubeconfig, "wait", "tc/prod", "-n", ns,
		"--for=jsonpath={.status.phase}=Ready", "--timeout=60s")
	waitOut.Reset()
	wait.Stdout, wait.Stderr = &waitOut, &waitOut
	if err := wait.Start(); err != nil {
		t.Fatal(err)
	}
	framework.MustKubectl(t, "patch", "tc", "prod", "-n", ns, "--subresource=status", "--type=merge", "-p", `{"status":{"phase":"Ready"}}`)
	if err := wait.Wait(); err != nil {
		t.Fatalf("kubectl wait --for=jsonpath={.status.phase}=Ready: %v\n%s", err, waitOut.String())
	}
}

func TestWatchSeesUpdate(t *testing.T) {
	ns := framework.Namespace(t, "e2e-watch")
	framework.MustApply(t, tenantCluster(ns, "prod"))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	watch := exec.CommandContext(ctx, "kubectl", "--kubeconfig", framework.Plane.Kubeconfig, "get", "tc", "prod", "-n", ns,
		"-w", "--output-watch-events", "-o", "json")
	stdout, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = watch.Wait() }()

	events := make(chan map[string]any)
	go func() {
		dec := json.NewDecoder(bufio.NewReader(stdout))
		for {
			var ev map[string]any
			if dec.Decode(&ev) != nil {
				close(events)
				return
			}
			events <- ev
		}
	}()
	next := func() map[string]any {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("kubectl get -w ended")
			}
			return ev
		case <-ctx.Done():
			t.Fatal("no watch event within a minute")
		}
		return nil
	}
	if ev := next(); ev["type"] != "ADDED" {
		t.Fatalf("first event %v, want ADDED", ev["type"])
	}
	framework.MustKubectl(t, "label", "tc", "prod", "-n", ns, "e2e=seen")
	ev := next()
	labels, _ := ev["object"].(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)
	if ev["type"] != "MODIFIED" || labels["e2e"] != "seen" {
		t.Fatalf("event after the label: type %v labels %v, want MODIFIED with e2e=seen", ev["type"], labels)
	}
}

// The ButlerConfig's TEAMS and CLUSTERS columns are counted by the controllers.
func TestButlerConfigCounts(t *testing.T) {
	ctx := context.Background()
	configs := framework.Plane.Butler.ButlerV1alpha1().ButlerConfigs()
	if _, err := configs.Get(ctx, "butler", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		framework.MustApply(t, "apiVersion: butler.butlerlabs.dev/v1alpha1\nkind: ButlerConfig\nmetadata:\n  name: butler\nspec: {}\n")
		t.Cleanup(func() { _ = configs.Delete(ctx, "butler", metav1.DeleteOptions{}) })
	}
	ns := framework.Namespace(t, "e2e-counts")
	framework.MustApply(t, tenantCluster(ns, "counted"))

	// Other tests' objects may still come and go: wait until the columns agree with a list.
	var got, want string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		teams, err := framework.Plane.Butler.ButlerV1alpha1().Teams().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		clusters, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		want = fmt.Sprintf("butler TEAMS=%d CLUSTERS=%d", len(teams.Items), len(clusters.Items))
		out, err := framework.Kubectl(t, "get", "butlerconfigs", "--no-headers")
		if err != nil {
			return false, err
		}
		// NAME MODE EXPOSURE TEAMS CLUSTERS AGE
		if f := strings.Fields(out); len(f) == 6 {
			got = fmt.Sprintf("%s TEAMS=%s CLUSTERS=%s", f[0], f[3], f[4])
		}
		return got == want && len(clusters.Items) > 0, nil
	})
	if err != nil {
		t.Fatalf("kubectl get butlerconfigs: %q, want %q: %v", got, want, err)
	}
}
