package framework

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/test/localplane"
)

// PinnedVersion is the Kubernetes version whose binaries the plane has (hack/build-kube.sh);
// the local provider builds any other on first use.
const PinnedVersion = "v1.36.3"

// LocalClusterManifest is a TenantCluster of workers machines of os at version on the
// ProviderConfig "local".
func LocalClusterManifest(ns, name, version string, os bootstrap.OS, workers int) string {
	return fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantCluster
metadata: {name: %s, namespace: %s}
spec:
  kubernetesVersion: %s
  providerConfigRef: {name: local}
  workers:
    replicas: %d
    machineTemplate: {os: {type: %s}}
`, name, ns, version, workers, os)
}

// LocalProviderConfigManifest is the local ProviderConfig of namespace ns, as a YAML document
// followed by its separator.
func LocalProviderConfigManifest(ns string) string {
	return fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: ProviderConfig
metadata: {name: local, namespace: %s}
spec: {provider: local}
---
`, ns)
}

// WaitReady waits for the TenantCluster's Ready condition with every worker ready.
func WaitReady(t *testing.T, ns, name string, workers int32, timeout time.Duration) *v1alpha1.TenantCluster {
	t.Helper()
	return WaitCluster(t, ns, name, timeout, fmt.Sprintf("Ready with %d workers", workers), func(tc *v1alpha1.TenantCluster) bool {
		return tc.Status.Phase == v1alpha1.TenantClusterReady && meta.IsStatusConditionTrue(tc.Status.Conditions, "Ready") &&
			tc.Status.ObservedState != nil && tc.Status.ObservedState.Workers.Ready == workers &&
			tc.Status.ObservedGeneration == tc.Generation
	})
}

// MintKubeconfig asks tenantclusters/kubeconfig for a kubeconfig and writes it to a file.
func MintKubeconfig(t *testing.T, ns, name string) (string, kubernetes.Interface) {
	t.Helper()
	out := MustKubectl(t, "create", "--raw", KubeconfigPath(ns, name), "-f", KubeconfigRequestFile(t, KubeconfigRequest))
	var answer struct{ Status struct{ Kubeconfig string } }
	if err := json.Unmarshal([]byte(out), &answer); err != nil {
		t.Fatalf("kubeconfig answer: %v\n%s", err, out)
	}
	data, err := base64.StdEncoding.DecodeString(answer.Status.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	config, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	return path, kubernetes.NewForConfigOrDie(config)
}

// KillPlaneProcess SIGKILLs the plane's process name and returns what starts it again (the plane
// waits RESTART_GRACE seconds for that).
func KillPlaneProcess(t *testing.T, name string) (startAgain func()) {
	t.Helper()
	_, startAgain = localplane.KillForRestart(t, Plane.Dir, name)
	return startAgain
}

// RestartProviderWith SIGKILLs the plane's butler-localprovider and starts it again with extra
// flags added (its tenants' processes are adopted); the test's cleanup restarts it as it was.
func RestartProviderWith(t *testing.T, extra ...string) {
	t.Helper()
	args, startWith := localplane.KillForRestartWith(t, Plane.Dir, "butler-localprovider")
	startWith(append(slices.Clone(args), extra...))
	t.Cleanup(func() {
		_, startWith := localplane.KillForRestartWith(t, Plane.Dir, "butler-localprovider")
		startWith(args)
	})
}

// OneOfEachComponent is what TenantProcesses finds for a running local control plane.
var OneOfEachComponent = map[string]int{"kube-apiserver": 1, "kube-controller-manager": 1, "kube-scheduler": 1}

// TenantProcesses counts the live processes of each control plane component serving the
// tenant control plane uid.
func TenantProcesses(t *testing.T, uid string) map[string]int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !strings.Contains(string(b), uid) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		if !localplane.Alive(pid) {
			continue
		}
		count[filepath.Base(strings.SplitN(string(b), "\x00", 2)[0])]++
	}
	return count
}

// DeleteCluster deletes a TenantCluster, waits until it is gone, and checks that no process of
// its control plane (TenantControlPlane uid) is left.
func DeleteCluster(t *testing.T, ns, name, uid string) {
	t.Helper()
	MustKubectl(t, "delete", "tc", name, "-n", ns, "--wait=false")
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("%s/%s not gone 3 minutes after delete", ns, name)
	}
	if got := TenantProcesses(t, uid); len(got) != 0 {
		t.Errorf("tenant processes left: %v", got)
	}
}
