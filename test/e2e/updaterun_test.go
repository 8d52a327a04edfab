package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// TestUpdateRunApproveRBAC: approving a stage is create on updateruns/approve, which only a
// Team's admins hold in their own namespace: the Team's viewer and operator, and another Team's
// admin, are refused (403) by the management cluster's RBAC; approving a stage that does not
// wait is a 409 naming its phase; the admin's approval is recorded and the run finishes. The
// viewer's and the admin's approvals go through `kubectl butler upgrade approve` (the plugin is
// no way round RBAC), and the viewer reads the result with `kubectl butler upgrade status`. The
// strategy selects no cluster, so the worker goes straight to the stage's approval: no tenant
// is started.
func TestUpdateRunApproveRBAC(t *testing.T) {
	const teamA, teamB = "e2e-ur-a", "e2e-ur-b"
	mustApply(t, teamManifest(teamA, "", member("ann", "admin"), member("otto", "operator"), member("vic", "viewer")))
	mustApply(t, teamManifest(teamB, "", member("bea", "admin")))
	t.Cleanup(func() { _, _ = kubectl(t, "delete", "team", teamA, teamB, "--wait=false") })
	poll(t, 2*time.Minute, "ann may approve in her Team's namespace", func() bool {
		out, _ := kubectl(t, "auth", "can-i", "create", "updateruns", "--subresource=approve", "-n", teamA, "--as", "ann")
		return strings.HasSuffix(strings.TrimSpace(out), "yes")
	})
	mustApply(t, fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: UpdateStrategy
metadata: {name: gated, namespace: %[1]s}
spec:
  stages:
  - name: canary
    selector: {matchLabels: {ring: e2e-none}}
    afterStage: [{approval: {}}]
  - name: prod
    selector: {matchLabels: {ring: e2e-none-either}}
---
apiVersion: butler.butlerlabs.dev/v1alpha1
kind: UpdateRun
metadata: {name: r1, namespace: %[1]s}
spec:
  strategyRef: {name: gated}
  target: {kubernetesVersion: v1.30.2}
`, teamA))
	phase := func() string {
		out, _ := kubectl(t, "get", "updaterun", "r1", "-n", teamA, "-o", "jsonpath={.status.phase}")
		return out
	}
	poll(t, time.Minute, "the run waits for approval", func() bool { return phase() == "WaitingForApproval" })

	approve := func(user, stage string) (string, error) {
		body := fmt.Sprintf(`{"apiVersion":"butler.butlerlabs.dev/v1alpha1","kind":"UpdateRunApproval","spec":{"stage":%q}}`, stage)
		return kubectl(t, "--as", user, "create", "--raw",
			"/apis/butler.butlerlabs.dev/v1alpha1/namespaces/"+teamA+"/updateruns/r1/approve", "-f", requestFile(t, body))
	}
	// The plugin holds no right of its own: the viewer's approval through it is RBAC's 403.
	plugin := buildPlugin(t)
	upgrade := func(user string, args ...string) (string, error) {
		return runPlugin(t, plugin, append(append([]string{"butler", "upgrade"}, args...), "-n", teamA, "--kubeconfig", plane.kubeconfig, "--as", user)...)
	}
	if out, err := upgrade("vic", "approve", "r1"); err == nil || !strings.Contains(out, "no right") || !strings.Contains(out, "updateruns/approve") {
		t.Errorf("vic approved with kubectl butler: %v\n%s", err, out)
	}
	for _, user := range []string{"vic", "otto", "bea", "mallory"} {
		if out, err := approve(user, "canary"); err == nil || !strings.Contains(out, "Forbidden") {
			t.Errorf("%s approved: %v\n%s", user, err, out)
		}
	}
	if out, err := approve("ann", "prod"); err == nil || !strings.Contains(out, `stage \"prod\" is Pending, not waiting for approval`) && !strings.Contains(out, `stage "prod" is Pending`) {
		t.Errorf("approving a stage that does not wait: %v\n%s", err, out)
	}
	if phase() != "WaitingForApproval" {
		t.Fatalf("refused approvals moved the run: %s", phase())
	}
	if out, err := upgrade("ann", "approve", "r1"); err != nil || !strings.Contains(out, "stage canary approved by ann") {
		t.Fatalf("ann's approval with kubectl butler upgrade approve: %v\n%s", err, out)
	}
	poll(t, time.Minute, "the run succeeds", func() bool { return phase() == "Succeeded" })
	if out, err := upgrade("vic", "status", "r1"); err != nil || !strings.Contains(out, "Task/Approval") || !strings.Contains(out, "by ann") {
		t.Errorf("kubectl butler upgrade status as the viewer: %v\n%s", err, out)
	}
	if out := mustKubectl(t, "get", "events", "-n", teamA, "--field-selector", "involvedObject.name=r1", "-o", "jsonpath={.items[*].note}{.items[*].message}"); !strings.Contains(out, "approved by ann") {
		t.Errorf("no Event says who approved: %s", out)
	}
}

// TestUpdateRunStages moves three local clusters of one kwok worker each, at upgradeFrom in a Team's
// namespace, through a strategy canary (one at a time, then an approval) → prod (one at a time),
// driven with `kubectl butler upgrade`: start runs to upgradeTo; the canary reaches it and
// Ready while the run waits for approval and prod stays at upgradeFrom; the Team's admin approves;
// prod moves one cluster at a time (from the run's per-cluster start and completion times) and
// the run succeeds; status shows each cluster moved from upgradeFrom. It runs in parallel: most of
// it is waiting on the tenants' control planes.
func TestUpdateRunStages(t *testing.T) {
	t.Parallel()
	const team, from, to = "e2e-ur-stages", upgradeFrom, upgradeTo
	mustApply(t, teamManifest(team, "", member("ann", "admin")))
	t.Cleanup(func() { _, _ = kubectl(t, "delete", "team", team, "--wait=false") })
	poll(t, 2*time.Minute, "the Team's namespace", func() bool {
		_, err := kubectl(t, "get", "namespace", team)
		return err == nil
	})
	rings := map[string]string{"canary": "canary", "prod-a": "prod", "prod-b": "prod"}
	manifest := localProviderConfigManifest(team) + `apiVersion: butler.butlerlabs.dev/v1alpha1
kind: UpdateStrategy
metadata: {name: gated, namespace: ` + team + `}
spec:
  stages:
  - {name: canary, selector: {matchLabels: {ring: canary}}, maxConcurrency: 1, afterStage: [{approval: {}}]}
  - {name: prod, selector: {matchLabels: {ring: prod}}, maxConcurrency: 1}
`
	for name, ring := range rings {
		manifest += "---\n" + strings.Replace(localClusterManifest(team, name, from, upgradeOS, 1),
			"metadata: {name: "+name+", namespace: "+team+"}", "metadata: {name: "+name+", namespace: "+team+", labels: {ring: "+ring+"}}", 1)
	}
	mustApply(t, manifest)
	for name := range rings {
		waitReady(t, team, name, 1, 3*time.Minute)
	}

	plugin := buildPlugin(t)
	upgrade := func(args ...string) string {
		t.Helper()
		out, err := runPlugin(t, plugin, append(append([]string{"butler", "upgrade"}, args...), "-n", team, "--kubeconfig", plane.kubeconfig, "--as", "ann")...)
		if err != nil {
			t.Fatalf("kubectl butler upgrade %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	started := time.Now()
	upgrade("start", "gated", "--to", to, "--name", "r1")
	run := func() *v1alpha1.UpdateRun {
		r, err := plane.butler.ButlerV1alpha1().UpdateRuns(team).Get(context.Background(), "r1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	poll(t, 3*time.Minute, "the canary moved and the run waiting for approval", func() bool {
		return run().Status.Phase == v1alpha1.UpdateRunWaitingForApproval
	})
	t.Logf("start -> the canary at %s, waiting for approval: %s", to, time.Since(started).Round(time.Second))
	tc := waitReady(t, team, "canary", 1, time.Minute)
	if tc.Status.ObservedState.KubernetesVersion != to {
		t.Errorf("the canary runs %s while the run waits, want %s", tc.Status.ObservedState.KubernetesVersion, to)
	}
	for _, name := range []string{"prod-a", "prod-b"} {
		if tc, err := plane.butler.ButlerV1alpha1().TenantClusters(team).Get(context.Background(), name, metav1.GetOptions{}); err != nil || tc.Spec.KubernetesVersion != from {
			t.Errorf("%s before the approval: %v, version %s (want %s)", name, err, tc.Spec.KubernetesVersion, from)
		}
	}

	upgrade("approve", "r1")
	poll(t, 4*time.Minute, "the run to succeed", func() bool { return run().Status.Phase == v1alpha1.UpdateRunSucceeded })
	t.Logf("start -> Succeeded: %s", time.Since(started).Round(time.Second))
	checkOneAtATime(t, run().Status.Stages)
	out := upgrade("status", "r1")
	t.Logf("kubectl butler upgrade status r1:\n%s", out)
	if n := len(linesWith(out, "TenantCluster/")); n != 3 || !strings.Contains(out, "Task/Approval") || strings.Count(out, "from "+from) != 3 || strings.Count(out, "Succeeded") < 6 {
		t.Errorf("upgrade status shows %d clusters, want 3 Succeeded from %s and the approval", n, from)
	}
	for name := range rings {
		tc := waitReady(t, team, name, 1, time.Minute)
		if tc.Status.ObservedState.KubernetesVersion != to {
			t.Errorf("%s runs %s after the run, want %s", name, tc.Status.ObservedState.KubernetesVersion, to)
		}
	}
}

// checkOneAtATime fails when two clusters of a stage were moving at once (maxConcurrency 1):
// each one's start is after the one before it completed.
func checkOneAtATime(t *testing.T, stages []v1alpha1.StageStatus) {
	t.Helper()
	for _, s := range stages {
		cs := slices.Clone(s.Clusters)
		slices.SortFunc(cs, func(a, b v1alpha1.ClusterUpdateStatus) int { return timeOf(a.StartTime).Compare(timeOf(b.StartTime)) })
		for i := range cs {
			if cs[i].StartTime == nil || cs[i].CompletionTime == nil {
				t.Errorf("stage %s: %s has no start or completion time: %+v", s.Name, cs[i].Name, cs[i])
			} else if i > 0 && cs[i-1].CompletionTime != nil && cs[i].StartTime.Before(cs[i-1].CompletionTime) {
				t.Errorf("stage %s: %s started at %s, before %s completed at %s", s.Name, cs[i].Name, cs[i].StartTime, cs[i-1].Name, cs[i-1].CompletionTime)
			}
		}
	}
}

func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}
