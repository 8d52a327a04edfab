package plane

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// TestKubectlButler runs the real `kubectl butler` (kubectl finds cmd/kubectl-butler on PATH)
// against a local cluster of one worker: kubeconfig writes a kubeconfig that lists the Ready
// Node and --merge adds the context named after the cluster to a copy of the admin's kubeconfig;
// describe prints the tree with the control plane, the Machine, its Node and the addons (the Node
// read through a read-only kubeconfig, which reads Nodes but not nodes/proxy); a wrong
// name and a user without the subresource get errors saying which; snapshot and hibernate/wake
// write what the API expects.
func TestKubectlButler(t *testing.T) {
	ns := framework.Namespace(t, "e2e-kubectl-butler")
	const name = "demo"
	localCluster(t, ns, name, framework.PinnedVersion, bootstrap.OSTalos, 1)
	plugin := buildPlugin(t)
	framework.WaitReady(t, ns, name, 1, 4*time.Minute)
	butler := func(args ...string) (string, error) {
		return runPlugin(t, plugin, append(args, "-n", ns, "--kubeconfig", framework.Plane.Kubeconfig)...)
	}

	file := filepath.Join(t.TempDir(), "demo.kubeconfig")
	if out, err := butler("butler", "kubeconfig", name, "--file", file, "--expiration", "1h"); err != nil {
		t.Fatalf("kubectl butler kubeconfig: %v\n%s", err, out)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the minted kubeconfig's file: %v, mode %v, want 0600", err, fi.Mode())
	}
	if out, err := framework.KubectlAs(t, file, "", "get", "nodes", "--no-headers"); err != nil || strings.Count(out, " Ready ") != 1 {
		t.Errorf("kubectl get nodes with the plugin's kubeconfig: %v\n%s", err, out)
	}

	// --merge: the user's kubeconfig (a copy of the admin's) gains the context demo, keeps its own.
	merged := filepath.Join(t.TempDir(), "config")
	admin, err := os.ReadFile(framework.Plane.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(merged, admin, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := runPlugin(t, plugin, "butler", "kubeconfig", name, "--merge", "-n", ns, "--kubeconfig", merged); err != nil {
		t.Fatalf("kubectl butler kubeconfig --merge: %v\n%s", err, out)
	}
	before, err := clientcmd.Load(admin)
	if err != nil {
		t.Fatal(err)
	}
	config, err := clientcmd.LoadFromFile(merged)
	if err != nil || config.Contexts[name] == nil || len(config.Contexts) != len(before.Contexts)+1 || config.CurrentContext != before.CurrentContext {
		t.Fatalf("merged kubeconfig: %v %+v", err, config)
	}
	if out, err := framework.KubectlAs(t, merged, "", "--context", name, "get", "nodes", "--no-headers"); err != nil || strings.Count(out, " Ready ") != 1 {
		t.Errorf("kubectl --context %s get nodes: %v\n%s", name, err, out)
	}
	if out, err := framework.KubectlAs(t, merged, "", "get", "tc", "-n", ns, "--no-headers"); err != nil || !strings.Contains(out, name) {
		t.Errorf("the merged kubeconfig's own current context: %v\n%s", err, out)
	}

	out, err := butler("butler", "describe", name)
	if err != nil {
		t.Fatalf("kubectl butler describe: %v\n%s", err, out)
	}
	t.Logf("kubectl butler describe %s:\n%s", name, out)
	for _, want := range []string{"TenantCluster/" + name, "├─ControlPlane - StewardControlPlane/" + name, "Machine/" + name + "-workers-", "Node/", "└─Addons"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe has no %q", want)
		}
	}
	if lines := linesWith(out, "TenantCluster/", "ControlPlane - ", "Node/"); len(lines) != 3 || !allReady(lines) {
		t.Errorf("describe: the cluster, its control plane and its node are not all True:\n%s", strings.Join(lines, "\n"))
	}

	// The read-only kubeconfig describe uses reads Nodes (butler:node-viewer), but not the
	// kubelet's API through nodes/proxy, nor Secrets.
	readOnly := filepath.Join(t.TempDir(), "readonly.kubeconfig")
	if out, err := butler("butler", "kubeconfig", name, "--read-only", "--file", readOnly); err != nil {
		t.Fatalf("kubectl butler kubeconfig --read-only: %v\n%s", err, out)
	}
	nodes, err := framework.KubectlAs(t, readOnly, "", "get", "nodes", "-o", "name")
	if err != nil || !strings.HasPrefix(nodes, "node/") {
		t.Fatalf("the read-only kubeconfig lists no Nodes: %v\n%s", err, nodes)
	}
	node := strings.TrimPrefix(strings.Fields(nodes)[0], "node/")
	for _, args := range [][]string{{"get", "--raw", "/api/v1/nodes/" + node + "/proxy/pods"}, {"get", "secrets", "-A"}} {
		if out, err := framework.KubectlAs(t, readOnly, "", args...); err == nil || !strings.Contains(out, "Forbidden") {
			t.Errorf("read-only kubectl %s: want Forbidden, got %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	// Errors say which cluster in which namespace, or which right is missing.
	if out, err := butler("butler", "kubeconfig", "nope", "--file", "-"); err == nil || !strings.Contains(out, `TenantCluster "nope" not found in namespace "`+ns+`"`) {
		t.Errorf("kubeconfig of a missing cluster: %v\n%s", err, out)
	}
	if out, err := butler("butler", "kubeconfig", name, "--file", "-", "--as", "nobody"); err == nil || !strings.Contains(out, "no right") || !strings.Contains(out, "tenantclusters/kubeconfig") {
		t.Errorf("kubeconfig without the right: %v\n%s", err, out)
	}

	// snapshot, hibernate and wake write what the API documents.
	if out, err := butler("butler", "snapshot", name, "--name", "by-plugin"); err != nil {
		t.Errorf("kubectl butler snapshot: %v\n%s", err, out)
	} else if snap, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusterSnapshots(ns).Get(context.Background(), "by-plugin", metav1.GetOptions{}); err != nil || snap.Spec.ClusterRef.Name != name {
		t.Errorf("the plugin's snapshot: %v %+v", err, snap)
	}
	for _, verb := range []string{"hibernate", "wake"} {
		if out, err := butler("butler", verb, name); err != nil {
			t.Fatalf("kubectl butler %s: %v\n%s", verb, err, out)
		}
		tc, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil || tc.Spec.Hibernation == nil || tc.Spec.Hibernation.Hibernated != (verb == "hibernate") {
			t.Errorf("after kubectl butler %s: %v %+v", verb, err, tc.Spec.Hibernation)
		}
	}
}

// buildPlugin builds cmd/kubectl-butler into a directory of its own and returns it.
func buildPlugin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-butler"), "../../../cmd/kubectl-butler")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building kubectl-butler: %v\n%s", err, out)
	}
	return dir
}

// runPlugin runs kubectl with the plugin's directory first on PATH.
func runPlugin(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// linesWith are the lines of out that contain one of the markers.
func linesWith(out string, markers ...string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		for _, m := range markers {
			if strings.Contains(l, m) {
				lines = append(lines, l)
				break
			}
		}
	}
	return lines
}

// allReady says whether each line's READY column is True (the name may have spaces:
// "ControlPlane - Kind/name").
func allReady(lines []string) bool {
	for _, l := range lines {
		if !slices.Contains(strings.Fields(l), "True") {
			return false
		}
	}
	return true
}
