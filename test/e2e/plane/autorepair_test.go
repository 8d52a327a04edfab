package plane

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/machines"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// TestAutoRepairReplacesADeadWorker: a local cluster of two kwok workers with
// workers.autoRepair (a node Ready Unknown or False for 30 s is unhealthy; at most one may be
// repaired). One worker's node stops reporting — kwok no longer manages it, so nothing renews
// its lease or status, and its Ready goes Unknown as the node lifecycle controller would set it
// after its grace period (set here so as not to wait the 50 s) — and Cluster API's
// MachineHealthCheck marks its Machine unhealthy (an Event on the Machine, in the cluster's
// namespace of Cluster API objects), a new Machine replaces it and the cluster is back to two
// Ready Nodes, the dead one gone. Then both workers stop reporting: nothing is remediated (the same Machines) and the
// cluster's status says auto-repair holds off with both unhealthy, as the health check's
// RemediationRestricted Event does.
func TestAutoRepairReplacesADeadWorker(t *testing.T) {
	framework.LongestFirst(t, 2*time.Minute)
	ctx := context.Background()
	ns := framework.Namespace(t, "e2e-autorepair")
	framework.MustApply(t, framework.LocalProviderConfigManifest(ns)+framework.LocalClusterManifest(ns, "fixme", framework.PinnedVersion, bootstrap.OSTalos, 2)+`    autoRepair:
      enabled: true
      unhealthyConditions:
      - {type: Ready, status: Unknown, timeout: 30s}
      - {type: Ready, status: "False", timeout: 30s}
      nodeStartupTimeout: 1m
      maxUnhealthy: 1
`)
	tenantNS := framework.WaitReady(t, ns, "fixme", 2, 3*time.Minute).Status.TenantNamespace
	_, tenant := framework.MintKubeconfig(t, ns, "fixme")
	dyn := framework.DynamicClient(t)
	before := machinesAt(t, dyn, tenantNS, "fixme")
	nodes, err := readyNodes(ctx, tenant)
	if err != nil || len(nodes) != 2 || len(before) != 2 {
		t.Fatalf("before: %d Ready Nodes (%v), Machines %v", len(nodes), err, before)
	}

	started := time.Now()
	dead := nodes[0].Name
	stopReporting(t, tenant, dead, 0)
	var after map[string]string
	poll(t, 2*time.Minute, "a new Machine instead of the dead one, and two Ready Nodes", func() bool {
		after = machinesAt(t, dyn, tenantNS, "fixme")
		ready, err := readyNodes(ctx, tenant)
		return err == nil && len(after) == 2 && !maps.Equal(after, before) && len(ready) == 2 &&
			!slices.ContainsFunc(ready, func(n corev1.Node) bool { return n.Name == dead })
	})
	t.Logf("node %s stopped reporting -> replaced, two Ready Nodes: %s; Machines %v -> %v", dead, time.Since(started).Round(time.Second),
		slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	kept := 0
	for m := range before {
		if _, ok := after[m]; ok {
			kept++
		}
	}
	if kept != 1 {
		t.Errorf("Machines %v -> %v: want one replaced and one kept", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	}
	framework.WaitReady(t, ns, "fixme", 2, time.Minute)
	if out := framework.MustKubectl(t, "get", "events", "-n", tenantNS, "--field-selector", "reason=MachineMarkedUnhealthy", "-o", "jsonpath={.items[*].involvedObject.name}"); strings.TrimSpace(out) == "" {
		t.Errorf("no MachineMarkedUnhealthy Event in the cluster's namespace %s", tenantNS)
	} else {
		t.Logf("MachineMarkedUnhealthy Events on %s", out)
	}

	// Both dead: too many to repair; the Machines stay and the status says why. The first
	// stops now; the second's Ready went Unknown the timeout ago (the wait itself was shown
	// above), so that the health check finds it unhealthy at once while the first is not healthy
	// either, and says it remediates neither (RemediationRestricted). In the other order it might
	// look between the two and repair the second alone.
	nodes, err = readyNodes(ctx, tenant)
	if err != nil || len(nodes) != 2 {
		t.Fatalf("Ready Nodes: %d, %v", len(nodes), err)
	}
	started = time.Now()
	stopReporting(t, tenant, nodes[0].Name, 0)
	stopReporting(t, tenant, nodes[1].Name, 30*time.Second)
	tc := framework.WaitCluster(t, ns, "fixme", 2*time.Minute, "auto-repair holding off", func(tc *v1alpha1.TenantCluster) bool {
		c := meta.FindStatusCondition(tc.Status.Conditions, "WorkersReady")
		return c != nil && strings.Contains(c.Message, "auto-repair holds off: 2 of 2 workers unhealthy")
	})
	t.Logf("both stopped reporting -> the status says so: %s: %s", time.Since(started).Round(time.Second), meta.FindStatusCondition(tc.Status.Conditions, "WorkersReady").Message)
	poll(t, time.Minute, "the health check's RemediationRestricted Event", func() bool {
		out, _ := framework.Kubectl(t, "get", "events", "-n", tenantNS, "--field-selector", "reason=RemediationRestricted", "-o", "jsonpath={.items[*].message}")
		return strings.Contains(out, "exceeds maxUnhealthy")
	})
	if now := machinesAt(t, dyn, tenantNS, "fixme"); !maps.Equal(now, after) {
		t.Errorf("Machines %v -> %v with both unhealthy: want none remediated", slices.Sorted(maps.Keys(after)), slices.Sorted(maps.Keys(now)))
	}
	// The Team is told on its TenantCluster (Cluster API's Events are in the tenant namespace):
	// the two held back now at least, the repaired one too if the controller looked before it went.
	poll(t, time.Minute, "WorkerUnhealthy Events on the TenantCluster", func() bool {
		out, _ := framework.Kubectl(t, "get", "events", "-n", ns, "--field-selector", "reason=WorkerUnhealthy,involvedObject.name=fixme",
			"-o", "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}")
		return strings.Count(out, "failed auto-repair's health check") >= 2
	})
}

// stopReporting makes a kwok node stop reporting: kwok no longer manages it (nothing renews
// its lease or status), and its Ready goes Unknown as the node lifecycle controller sets it
// once the lease is stale, ago before now.
func stopReporting(t *testing.T, tenant kubernetes.Interface, node string, ago time.Duration) {
	t.Helper()
	ctx := context.Background()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, machines.KwokNodeAnnotation)
	if _, err := tenant.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	n, err := tenant.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Now().Add(-ago))
	for i, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			n.Status.Conditions[i] = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
				Message: "Kubelet stopped posting node status.", LastHeartbeatTime: c.LastHeartbeatTime, LastTransitionTime: now}
		}
	}
	if _, err := tenant.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
