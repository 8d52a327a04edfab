package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
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
