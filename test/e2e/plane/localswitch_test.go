package plane

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// TestLocalControlPlaneSwitch: the control plane switch of DAY2.md on a local cluster. Its
// control plane set to 0 replicas stops its processes, and the TenantControlPlane, the
// StewardControlPlane and the TenantCluster say so; set back to 1 it serves again on the same
// endpoint, with the data it had. More than one replica is refused with a message saying why.
func TestLocalControlPlaneSwitch(t *testing.T) {
	framework.LongestFirst(t, 80*time.Second)
	ctx := context.Background()
	ns := framework.Namespace(t, "e2e-switch")
	const name = "switch"
	localCluster(t, ns, name, framework.PinnedVersion, bootstrap.OSTalos, 0)
	// Ready, not only ControlPlaneReady: the minted kubeconfig's identity is bound in the tenant
	// by the access step, which Ready waits for and ControlPlaneReady does not.
	tc := framework.WaitReady(t, ns, name, 0, 3*time.Minute)
	endpoint, tenantNS := tc.Status.ControlPlaneEndpoint, tc.Status.TenantNamespace
	d := framework.DynamicClient(t)
	tcp, err := d.Resource(framework.TenantCPGVR).Namespace(tenantNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(tcp.GetUID())
	_, tenant := framework.MintKubeconfig(t, ns, name)
	kept := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: "default"}, Data: map[string]string{"survives": "the switch"}}
	if _, err := tenant.CoreV1().ConfigMaps("default").Create(ctx, kept, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tcpReports := func(status string, replicas int64) func(tc *v1alpha1.TenantCluster) bool {
		return func(*v1alpha1.TenantCluster) bool {
			tcp, err := d.Resource(framework.TenantCPGVR).Namespace(tenantNS).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			s, _, _ := unstructured.NestedString(tcp.Object, "status", "kubernetesResources", "version", "status")
			r, _, _ := unstructured.NestedInt64(tcp.Object, "status", "kubernetesResources", "deployment", "replicas")
			return s == status && r == replicas
		}
	}

	// Off: every process exits on its SIGTERM (kube-apiserver too: the provider kills none).
	pids := framework.TenantPids(t, filepath.Join(framework.Plane.Dir, "tenants", uid))
	framework.MustKubectl(t, "patch", "tc", name, "-n", ns, "--type=merge", "-p", `{"spec":{"controlPlane":{"replicas":0}}}`)
	stoppedAt := time.Now()
	framework.WaitCluster(t, ns, name, time.Minute, "TenantControlPlane Sleeping with 0 replicas", tcpReports("Sleeping", 0))
	t.Logf("stopped %.1fs after the patch", time.Since(stoppedAt).Seconds())
	if got := framework.TenantProcesses(t, uid); len(got) != 0 {
		t.Errorf("processes still running with replicas 0: %v", got)
	}
	for component, pid := range pids {
		if killedAfterGrace(t, pid) {
			t.Errorf("%s (pid %d) did not exit on SIGTERM: the provider killed it after its grace", component, pid)
		}
	}
	tc = framework.WaitCluster(t, ns, name, 30*time.Second, "ControlPlaneReady says stopped", func(tc *v1alpha1.TenantCluster) bool {
		c := meta.FindStatusCondition(tc.Status.Conditions, "ControlPlaneReady")
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "stopped")
	})
	if tc.Status.ControlPlaneEndpoint != endpoint {
		t.Errorf("endpoint %q while stopped, want the published %q", tc.Status.ControlPlaneEndpoint, endpoint)
	}
	// The StewardControlPlane's status is the next controller's write after the
	// TenantControlPlane's: it follows within seconds, not at the same instant.
	var scpReplicas int64 = -1
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		scp, err := d.Resource(framework.StewardCPGVR).Namespace(tenantNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		scpReplicas, _, _ = unstructured.NestedInt64(scp.Object, "status", "replicas")
		return scpReplicas == 0, nil
	}); err != nil {
		t.Errorf("StewardControlPlane status.replicas %d 30 s after the stop, want 0", scpReplicas)
	}
	if _, err := tenant.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{}); err == nil {
		t.Error("the tenant's API still answers with replicas 0")
	}

	// More than one cannot run here: refused, and it says why.
	framework.MustKubectl(t, "patch", "tc", name, "-n", ns, "--type=merge", "-p", `{"spec":{"controlPlane":{"replicas":2}}}`)
	framework.WaitCluster(t, ns, name, time.Minute, "replicas 2 refused", func(tc *v1alpha1.TenantCluster) bool {
		c := meta.FindStatusCondition(tc.Status.Conditions, "ControlPlaneReady")
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "one kube-apiserver per tenant on this machine")
	})
	if got := framework.TenantProcesses(t, uid); len(got) != 0 {
		t.Errorf("replicas 2 started processes: %v", got)
	}

	// On again: the same endpoint, the same data.
	framework.MustKubectl(t, "patch", "tc", name, "-n", ns, "--type=merge", "-p", `{"spec":{"controlPlane":{"replicas":1}}}`)
	startedAt := time.Now()
	tc = framework.WaitCluster(t, ns, name, 2*time.Minute, "control plane ready again", func(tc *v1alpha1.TenantCluster) bool {
		return meta.IsStatusConditionTrue(tc.Status.Conditions, "ControlPlaneReady") && tc.Status.ObservedGeneration == tc.Generation
	})
	t.Logf("serving %.1fs after replicas 1", time.Since(startedAt).Seconds())
	if tc.Status.ControlPlaneEndpoint != endpoint {
		t.Errorf("endpoint %q after the restart, want %q (a published endpoint never changes)", tc.Status.ControlPlaneEndpoint, endpoint)
	}
	framework.WaitCluster(t, ns, name, 30*time.Second, "TenantControlPlane Ready with 1 replica", tcpReports("Ready", 1))
	if got, err := tenant.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{}); err != nil || got.Data["survives"] != "the switch" {
		t.Errorf("the tenant's data after the switch: %v (%v)", got, err)
	}
	if got := framework.TenantProcesses(t, uid); !maps.Equal(got, framework.OneOfEachComponent) {
		t.Errorf("tenant processes %v, want one of each", got)
	}

	framework.DeleteCluster(t, ns, name, uid)
}

// killedAfterGrace says whether the local provider's log tells of killing pid after its stop
// grace (the process did not exit on SIGTERM).
func killedAfterGrace(t *testing.T, pid int) bool {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(framework.Plane.Dir, "logs", "butler-localprovider.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, "did not exit within its grace") && strings.Contains(line, fmt.Sprintf(" pid=%d ", pid)) {
			return true
		}
	}
	return false
}
