package plane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
	"github.com/butlerdotdev/butler-apiserver/test/localplane"
)

// TestLocalSpareControlPlane runs the plane's provider with --spare-control-planes=1: a
// TenantCluster that sets nothing goes Ready on the spare's kube-apiserver, not started again
// (one start in its log, the same pid), serves kubectl through its admin kubeconfig, and the
// pool refills with another spare. A provider restart adopts it as it runs; it hibernates and
// wakes in the spare's directory, and rotates its CA and service-account key. Deleted, it leaves nothing: the spare's directory, the link
// to it, its process and its datastore prefix are gone. The provider is restarted as it was
// afterwards, which removes the refilled spare.
func TestLocalSpareControlPlane(t *testing.T) {
	framework.RestartProviderWith(t, "--spare-control-planes=1")
	state := filepath.Join(framework.Plane.Dir, "tenants")
	spare := waitReadySpare(t, state, "")
	spareDir := filepath.Join(state, spare)
	apiPid := framework.TenantPids(t, spareDir)["kube-apiserver"]
	etcd := framework.TenantEtcd(t, apiPid)
	prefix := strings.TrimSuffix(framework.ProcessFlags(t, apiPid)["etcd-prefix"], "/") + "/"

	ns := framework.Namespace(t, "e2e-spare")
	framework.MustApply(t, framework.LocalProviderConfigManifest(ns))
	const name = "spared"
	framework.MustApply(t, framework.LocalClusterManifest(ns, name, framework.PinnedVersion, bootstrap.OSTalos, 0))
	tc := framework.WaitReady(t, ns, name, 0, 3*time.Minute)
	tcp, err := framework.DynamicClient(t).Resource(framework.TenantCPGVR).Namespace(tc.Status.TenantNamespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(tcp.GetUID())
	if target, err := os.Readlink(filepath.Join(state, uid)); err != nil || target != spare {
		t.Fatalf("the tenant's state directory links to %q (%v), want the spare %s", target, err, spare)
	}
	if schema, _, _ := unstructured.NestedString(tcp.Object, "status", "storage", "setup", "schema"); schema+"/" != strings.TrimPrefix(prefix, "/") {
		t.Errorf("the TenantControlPlane's schema is %q, want the spare's prefix %s", schema, prefix)
	}
	pids := framework.TenantPids(t, spareDir)
	if pids["kube-apiserver"] != apiPid || pids["kube-controller-manager"] == 0 || pids["kube-scheduler"] == 0 {
		t.Errorf("processes %v: want the spare's kube-apiserver (pid %d) and the tenant's controllers", pids, apiPid)
	}
	if starts := apiServerStarts(t, spareDir); starts != 1 {
		t.Errorf("the spare's kube-apiserver was started %d times, want once: the claim restarted it", starts)
	}
	if flags := framework.ProcessFlags(t, pids["kube-controller-manager"]); flags["cluster-name"] != name {
		t.Errorf("kube-controller-manager's --cluster-name=%q, want %q", flags["cluster-name"], name)
	}

	kubeconfig := framework.TenantAdminKubeconfig(t, ns, name)
	if out := framework.MustKubectlAs(t, kubeconfig, "", "get", "configmap", "cluster-info", "-n", "kube-public", "-o", "name"); !strings.Contains(out, "cluster-info") {
		t.Errorf("kubectl through the admin kubeconfig: %s", out)
	}
	refill := waitReadySpare(t, state, spare)
	t.Logf("the pool refilled with %s", refill)

	// A provider restart adopts the claimed tenant's processes where they run (and removes the
	// spare of its last run); a hibernation stops them and a wake starts them there again.
	args, startWith := localplane.KillForRestartWith(t, framework.Plane.Dir, "butler-localprovider")
	startWith(args)
	waitReadySpare(t, state, refill)
	if pid := framework.TenantPids(t, spareDir)["kube-apiserver"]; pid != apiPid || apiServerStarts(t, spareDir) != 1 {
		t.Errorf("after a provider restart the tenant's kube-apiserver is pid %d (was %d), started %d times", pid, apiPid, apiServerStarts(t, spareDir))
	}
	if _, err := os.Stat(filepath.Join(state, refill)); !os.IsNotExist(err) {
		t.Errorf("the last run's spare %s is left after the restart (%v)", refill, err)
	}
	framework.MustKubectl(t, "patch", "tc", name, "-n", ns, "--type=merge", "-p", `{"spec":{"hibernation":{"hibernated":true}}}`)
	framework.WaitCluster(t, ns, name, 3*time.Minute, "Hibernated", framework.Hibernated)
	framework.MustKubectl(t, "patch", "tc", name, "-n", ns, "--type=merge", "-p", `{"spec":{"hibernation":{"hibernated":false}}}`)
	framework.WaitReady(t, ns, name, 0, 3*time.Minute)
	framework.MustKubectlAs(t, kubeconfig, "", "get", "namespaces")
	if starts := apiServerStarts(t, spareDir); starts != 2 {
		t.Errorf("the woken tenant's kube-apiserver was started %d times in the spare's directory, want 2", starts)
	}
	// A rotation of its CA and service-account key, in two phases, as of any tenant's.
	for _, step := range []struct {
		operation string
		phase     v1alpha1.CredentialsRotationPhase
	}{{"rotate-credentials-start", v1alpha1.RotationPrepared}, {"rotate-credentials-complete", v1alpha1.RotationCompleted}} {
		framework.MustKubectl(t, "annotate", "tc", name, "-n", ns, "butler.butlerlabs.dev/operation="+step.operation)
		framework.WaitCluster(t, ns, name, 3*time.Minute, string(step.phase), func(tc *v1alpha1.TenantCluster) bool {
			r := framework.RotationOfCluster(tc)
			return r != nil && r.Phase == step.phase && tc.Status.Phase == v1alpha1.TenantClusterReady
		})
	}
	framework.MustKubectlAs(t, framework.TenantAdminKubeconfig(t, ns, name), "", "get", "namespaces")
	apiPid = framework.TenantPids(t, spareDir)["kube-apiserver"]

	framework.DeleteCluster(t, ns, name, uid)
	for _, p := range []string{spareDir, filepath.Join(state, uid)} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is left after the delete (%v)", p, err)
		}
	}
	if localplane.Alive(apiPid) {
		t.Errorf("the claimed spare's kube-apiserver (pid %d) runs after the delete", apiPid)
	}
	if n := framework.EtcdKeys(t, etcd, prefix); n != 0 {
		t.Errorf("%d keys left under %s after the delete", n, prefix)
	}
}

// waitReadySpare waits for a spare other than not whose kube-apiserver answers /readyz, and
// gives its directory's name.
func waitReadySpare(t *testing.T, state, not string) string {
	t.Helper()
	var found string
	framework.WaitFor(t, 3*time.Minute, "a Ready spare control plane", func() (bool, string) {
		dirs, _ := filepath.Glob(filepath.Join(state, "spare-*"))
		for _, dir := range dirs {
			if filepath.Base(dir) != not && spareReady(dir) {
				found = filepath.Base(dir)
				return true, ""
			}
		}
		return false, fmt.Sprintf("spares: %v", dirs)
	})
	return found
}

// spareReady says whether dir is an unclaimed spare whose kube-apiserver answers /readyz.
func spareReady(dir string) bool {
	var rec struct {
		Port  int
		Spare bool
	}
	data, err := os.ReadFile(filepath.Join(dir, "tenant.json"))
	if err != nil || json.Unmarshal(data, &rec) != nil || !rec.Spare {
		return false
	}
	ca, err := os.ReadFile(filepath.Join(dir, "pki", "ca.crt"))
	if err != nil {
		return false
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/readyz", rec.Port), nil)
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// apiServerStarts counts the starts in a tenant's kube-apiserver.log (the provider writes a line
// before each).
func apiServerStarts(t *testing.T, dir string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "kube-apiserver.log"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "==== ") && strings.Contains(line, " starting: ") {
			n++
		}
	}
	return n
}
