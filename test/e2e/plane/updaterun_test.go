package plane

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// TestUpdateRunApproveRBAC: approving a stage is create on updateruns/approve, which only a
// Team's admins hold in their own namespace: the Team's viewer and operator, and another Team's
// admin, are refused (403) by the management cluster's RBAC; approving a stage that does not
// wait is a 409 naming its phase; the admin's approval is recorded and the run finishes. The
// viewer's and the admin's approvals go through `kubectl butler upgrade approve` (the plugin is
// no way round RBAC), and the viewer reads the result with `kubectl butler upgrade status`. The
// strategy selects no cluster, so the controller goes straight to the stage's approval: no tenant
// is started.
func TestUpdateRunApproveRBAC(t *testing.T) {
	const teamA, teamB = "e2e-ur-a", "e2e-ur-b"
	framework.MustApply(t, framework.TeamManifest(teamA, "", framework.TeamMember("ann", "admin"), framework.TeamMember("otto", "operator"), framework.TeamMember("vic", "viewer")))
	framework.MustApply(t, framework.TeamManifest(teamB, "", framework.TeamMember("bea", "admin")))
	t.Cleanup(func() { _, _ = framework.Kubectl(t, "delete", "team", teamA, teamB, "--wait=false") })
	poll(t, 2*time.Minute, "ann may approve in her Team's namespace", func() bool {
		out, _ := framework.Kubectl(t, "auth", "can-i", "create", "updateruns", "--subresource=approve", "-n", teamA, "--as", "ann")
		return strings.HasSuffix(strings.TrimSpace(out), "yes")
	})
	framework.MustApply(t, fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
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
		out, _ := framework.Kubectl(t, "get", "updaterun", "r1", "-n", teamA, "-o", "jsonpath={.status.phase}")
		return out
	}
	poll(t, time.Minute, "the run waits for approval", func() bool { return phase() == "WaitingForApproval" })

	approve := func(user, stage string) (string, error) {
		body := fmt.Sprintf(`{"apiVersion":"butler.butlerlabs.dev/v1alpha1","kind":"UpdateRunApproval","spec":{"stage":%q}}`, stage)
		return framework.Kubectl(t, "--as", user, "create", "--raw",
			"/apis/butler.butlerlabs.dev/v1alpha1/namespaces/"+teamA+"/updateruns/r1/approve", "-f", framework.KubeconfigRequestFile(t, body))
	}
	// The plugin holds no right of its own: the viewer's approval through it is RBAC's 403.
	plugin := buildPlugin(t)
	upgrade := func(user string, args ...string) (string, error) {
		return runPlugin(t, plugin, append(append([]string{"butler", "upgrade"}, args...), "-n", teamA, "--kubeconfig", framework.Plane.Kubeconfig, "--as", user)...)
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
	if out := framework.MustKubectl(t, "get", "events", "-n", teamA, "--field-selector", "involvedObject.name=r1", "-o", "jsonpath={.items[*].note}{.items[*].message}"); !strings.Contains(out, "approved by ann") {
		t.Errorf("no Event says who approved: %s", out)
	}
}

// TestUpdateRunStages is the fleet run, on four local clusters of one kwok worker each
// at upgradeFrom in two Teams (blue: the canary and prod-1; green: prod-2 and prod-3), moved
// by a platform run (butler-system, which selects every Team's clusters) of a strategy canary
// (one at a time, then a 20 s wait and an approval) → prod (two at a time), with a snapshot of
// each cluster before it moves, driven with `kubectl butler upgrade`: the canary reaches
// upgradeTo and Ready while the run waits 20 s, then for approval, and prod stays at
// upgradeFrom; each Team's admin is refused the approval of the platform's run (403: its
// clusters are in it, the run is not the Team's); the platform admin approves; prod never has
// more than two moving at once, sampled by a watch of the run's status and of the clusters'
// transitions, and has two at once; each cluster has a Ready pre-upgrade snapshot at
// upgradeFrom; the run succeeds. It runs in parallel: most of it is waiting on the tenants'
// control planes.
func TestUpdateRunStages(t *testing.T) {
	framework.LongestFirst(t, 4*time.Minute)
	const blue, green, from, to, run = "e2e-ur-blue", "e2e-ur-green", upgradeFrom, upgradeTo, "ur-four"
	const ring = "e2e-ur-ring" // a label of this test's own: a platform run sees every Team's clusters
	framework.MustApply(t, framework.TeamManifest(blue, "", framework.TeamMember("ann", "admin"))+"---\n"+framework.TeamManifest(green, "", framework.TeamMember("gus", "admin")))
	t.Cleanup(func() {
		_, _ = framework.Kubectl(t, "delete", "updaterun", run, "-n", updaterunPlatform, "--wait=false")
		_, _ = framework.Kubectl(t, "delete", "updatestrategy", "four", "-n", updaterunPlatform, "--wait=false")
		_, _ = framework.Kubectl(t, "delete", "team", blue, green, "--wait=false")
	})
	for _, ns := range []string{blue, green} {
		poll(t, 2*time.Minute, "the Team's namespace "+ns, func() bool {
			_, err := framework.Kubectl(t, "get", "namespace", ns)
			return err == nil
		})
	}
	clusters := []struct{ ns, name, ring string }{{blue, "canary", "canary"}, {blue, "prod-1", "prod"}, {green, "prod-2", "prod"}, {green, "prod-3", "prod"}}
	manifest := framework.LocalProviderConfigManifest(blue) + framework.LocalProviderConfigManifest(green) + `apiVersion: butler.butlerlabs.dev/v1alpha1
kind: UpdateStrategy
metadata: {name: four, namespace: ` + updaterunPlatform + `}
spec:
  stages:
  - {name: canary, selector: {matchLabels: {` + ring + `: canary}}, maxConcurrency: 1, afterStage: [{wait: {duration: 20s}}, {approval: {}}]}
  - {name: prod, selector: {matchLabels: {` + ring + `: prod}}, maxConcurrency: 2}
`
	for _, c := range clusters {
		manifest += "---\n" + strings.Replace(framework.LocalClusterManifest(c.ns, c.name, from, upgradeOS, 1),
			"metadata: {name: "+c.name+", namespace: "+c.ns+"}", "metadata: {name: "+c.name+", namespace: "+c.ns+", labels: {"+ring+": "+c.ring+"}}", 1)
	}
	framework.MustApply(t, manifest)
	for _, c := range clusters {
		framework.WaitReady(t, c.ns, c.name, 1, 3*time.Minute)
	}

	plugin := buildPlugin(t)
	upgrade := func(as string, args ...string) (string, error) {
		args = append(append([]string{"butler", "upgrade"}, args...), "-n", updaterunPlatform, "--kubeconfig", framework.Plane.Kubeconfig)
		if as != "" {
			args = append(args, "--as", as)
		}
		return runPlugin(t, plugin, args...)
	}
	mustUpgrade := func(args ...string) string {
		t.Helper()
		out, err := upgrade("", args...)
		if err != nil {
			t.Fatalf("kubectl butler upgrade %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	sampled := watchProd(t, ring, run, to)
	started := time.Now()
	mustUpgrade("start", "four", "--to", to, "--name", run, "--snapshot")
	get := func() *v1alpha1.UpdateRun {
		r, err := framework.Plane.Butler.ButlerV1alpha1().UpdateRuns(updaterunPlatform).Get(context.Background(), run, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	prodAtFrom := func(when string) {
		t.Helper()
		for _, c := range clusters[1:] {
			if tc, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(c.ns).Get(context.Background(), c.name, metav1.GetOptions{}); err != nil || tc.Spec.KubernetesVersion != from {
				t.Errorf("%s/%s %s: %v, version %s (want %s)", c.ns, c.name, when, err, tc.Spec.KubernetesVersion, from)
			}
		}
	}
	poll(t, 3*time.Minute, "the canary moved and the run waiting 20 s", func() bool { return get().Status.Phase == v1alpha1.UpdateRunWaiting })
	t.Logf("start -> the canary at %s, the 20 s wait: %s", to, time.Since(started).Round(time.Second))
	if tc := framework.WaitReady(t, blue, "canary", 1, time.Minute); tc.Status.ObservedState.KubernetesVersion != to {
		t.Errorf("the canary runs %s while the run waits, want %s", tc.Status.ObservedState.KubernetesVersion, to)
	}
	prodAtFrom("during the wait")
	poll(t, time.Minute, "the run waiting for approval", func() bool { return get().Status.Phase == v1alpha1.UpdateRunWaitingForApproval })
	prodAtFrom("before the approval")

	// Each Team's admin may approve her Team's runs, not the platform's, though her clusters are in it.
	for _, user := range []string{"ann", "gus"} {
		if out, err := upgrade(user, "approve", run, "--stage", "canary"); err == nil || !strings.Contains(out, "no right") || !strings.Contains(out, "updateruns/approve") {
			t.Errorf("%s approved the platform's run with kubectl butler: %v\n%s", user, err, out)
		}
		body := `{"apiVersion":"butler.butlerlabs.dev/v1alpha1","kind":"UpdateRunApproval","spec":{"stage":"canary"}}`
		if out, err := framework.Kubectl(t, "--as", user, "create", "--raw", "/apis/butler.butlerlabs.dev/v1alpha1/namespaces/"+updaterunPlatform+"/updateruns/"+run+"/approve",
			"-f", framework.KubeconfigRequestFile(t, body)); err == nil || !strings.Contains(out, "Forbidden") {
			t.Errorf("%s approved the platform's run: %v\n%s", user, err, out)
		}
	}
	if get().Status.Phase != v1alpha1.UpdateRunWaitingForApproval {
		t.Fatalf("refused approvals moved the run: %s", get().Status.Phase)
	}
	mustUpgrade("approve", run)
	poll(t, 4*time.Minute, "the run to succeed", func() bool { return get().Status.Phase == v1alpha1.UpdateRunSucceeded })
	t.Logf("start -> Succeeded: %s", time.Since(started).Round(time.Second))

	final := get()
	stages := final.Status.Stages
	checkAtMost(t, stages[0], 1)
	checkAtMost(t, stages[1], 2)
	if wait := stages[0].Tasks[0]; wait.StartTime == nil || wait.CompletionTime == nil || wait.CompletionTime.Sub(wait.StartTime.Time) < 20*time.Second {
		t.Errorf("the canary's wait task: %+v, want 20 s", wait)
	}
	runMax, clusterMax := sampled()
	t.Logf("prod moving at once, at most: %d in the run's status, %d by the clusters' transitions", runMax, clusterMax)
	if runMax != 2 || clusterMax > 2 || clusterMax < 1 {
		t.Errorf("prod moving at once: %d in the run's status (want 2), %d by the clusters' transitions (want 1 or 2)", runMax, clusterMax)
	}
	checkSnapshots(t, stages, from)
	out := mustUpgrade("status", run)
	t.Logf("kubectl butler upgrade status %s:\n%s", run, out)
	if n, snaps := len(linesWith(out, "TenantCluster/")), len(linesWith(out, "TenantClusterSnapshot/")); n != 4 || snaps != 4 ||
		!strings.Contains(out, "Task/Approval") || !strings.Contains(out, "Task/Wait") || strings.Count(out, "from "+from) != 4 {
		t.Errorf("upgrade status shows %d clusters and %d snapshots, want 4 from %s, their snapshots, the wait and the approval", n, snaps, from)
	}
	for _, c := range clusters {
		if tc := framework.WaitReady(t, c.ns, c.name, 1, time.Minute); tc.Status.ObservedState.KubernetesVersion != to {
			t.Errorf("%s/%s runs %s after the run, want %s", c.ns, c.name, tc.Status.ObservedState.KubernetesVersion, to)
		}
	}
}

// updaterunPlatform is the platform namespace, whose runs select the clusters of every Team.
const updaterunPlatform = "butler-system"

// watchProd watches the run's status and the clusters labelled ring=prod until the test ends,
// and returns what it saw so far: the most prod clusters the run had moving at once
// (Snapshotting or Upgrading), and the most whose own transitions put them between the
// version change to target and their first Ready at target at once.
func watchProd(t *testing.T, ring, run, target string) func() (int, int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu                 sync.Mutex
		runMax, clusterMax int
		moving             = map[string]bool{}
		done               = map[string]bool{}
	)
	runs, err := framework.Plane.Butler.ButlerV1alpha1().UpdateRuns(updaterunPlatform).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + run})
	if err != nil {
		t.Fatal(err)
	}
	tcs, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters("").Watch(ctx, metav1.ListOptions{LabelSelector: ring + "=prod"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	t.Cleanup(func() { cancel(); wg.Wait() })
	go func() {
		defer wg.Done()
		for ev := range runs.ResultChan() {
			r, ok := ev.Object.(*v1alpha1.UpdateRun)
			if !ok || len(r.Status.Stages) < 2 {
				continue
			}
			n := 0
			for _, c := range r.Status.Stages[1].Clusters {
				if c.Phase == v1alpha1.ClusterUpdateSnapshotting || c.Phase == v1alpha1.ClusterUpdateUpgrading {
					n++
				}
			}
			mu.Lock()
			runMax = max(runMax, n)
			mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		for ev := range tcs.ResultChan() {
			tc, ok := ev.Object.(*v1alpha1.TenantCluster)
			if !ok {
				continue
			}
			key := tc.Namespace + "/" + tc.Name
			mu.Lock()
			switch {
			case done[key] || tc.Spec.KubernetesVersion != target:
			case tc.Status.Phase == v1alpha1.TenantClusterReady && tc.Status.ObservedGeneration == tc.Generation &&
				tc.Status.ObservedState != nil && tc.Status.ObservedState.KubernetesVersion == target:
				done[key], moving[key] = true, false
			default:
				moving[key] = true
			}
			n := 0
			for _, m := range moving {
				if m {
					n++
				}
			}
			clusterMax = max(clusterMax, n)
			mu.Unlock()
		}
	}()
	return func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return runMax, clusterMax
	}
}

// checkSnapshots fails unless every cluster of the run has its pre-upgrade snapshot, Ready,
// of the cluster at from.
func checkSnapshots(t *testing.T, stages []v1alpha1.StageStatus, from string) {
	t.Helper()
	for _, s := range stages {
		for _, c := range s.Clusters {
			ns, name, _ := strings.Cut(c.Name, "/")
			snap, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusterSnapshots(ns).Get(context.Background(), c.Snapshot, metav1.GetOptions{})
			switch {
			case c.Snapshot == "":
				t.Errorf("%s has no pre-upgrade snapshot: %+v", c.Name, c)
			case err != nil:
				t.Errorf("%s's snapshot %s: %v", c.Name, c.Snapshot, err)
			case snap.Spec.ClusterRef.Name != name || snap.Status.Phase != v1alpha1.SnapshotReady || snap.Status.KubernetesVersion != from:
				t.Errorf("%s's snapshot %s: of %s, %s at %s; want Ready at %s", c.Name, c.Snapshot, snap.Spec.ClusterRef.Name, snap.Status.Phase, snap.Status.KubernetesVersion, from)
			}
		}
	}
}

// checkAtMost fails when more than n clusters of a stage were moving at once, by the run's
// per-cluster start and completion times: at each start, fewer than n others had started and
// not completed.
func checkAtMost(t *testing.T, s v1alpha1.StageStatus, n int) {
	t.Helper()
	for _, c := range s.Clusters {
		if c.StartTime == nil || c.CompletionTime == nil {
			t.Errorf("stage %s: %s has no start or completion time: %+v", s.Name, c.Name, c)
			return
		}
	}
	for _, c := range s.Clusters {
		var with []string
		for _, o := range s.Clusters {
			if o.Name != c.Name && !o.StartTime.After(c.StartTime.Time) && o.CompletionTime.After(c.StartTime.Time) {
				with = append(with, o.Name)
			}
		}
		if len(with) >= n {
			t.Errorf("stage %s (at most %d at once): %s started at %s while %v moved", s.Name, n, c.Name, c.StartTime, with)
		}
	}
}

// TestUpdateRunPausesOnABrokenCanary: a Team's run canary (its gate held for 30 s) → prod
// (clusters of no worker at upgradeFrom) whose canary breaks while it moves or soaks (a
// TenantAddon it cannot install: its
// repository is on loopback and listed by no AddonDefinition, so the fetch policy refuses it
// at once) pauses with the reason, naming the canary and the addon, and an Event; prod is
// untouched: Pending in the run, never started, its version, generation and annotations as
// before. The cheap failing addon is the one TestLocalTenantCluster refuses ("unlisted").
func TestUpdateRunPausesOnABrokenCanary(t *testing.T) {
	framework.LongestFirst(t, 60*time.Second)
	const ns, from, to = "e2e-ur-broken", upgradeFrom, upgradeTo
	framework.MustApply(t, framework.TeamManifest(ns, "", framework.TeamMember("ann", "admin")))
	t.Cleanup(func() { _, _ = framework.Kubectl(t, "delete", "team", ns, "--wait=false") })
	poll(t, 2*time.Minute, "the Team's namespace", func() bool {
		_, err := framework.Kubectl(t, "get", "namespace", ns)
		return err == nil
	})
	manifest := framework.LocalProviderConfigManifest(ns) + `apiVersion: butler.butlerlabs.dev/v1alpha1
kind: UpdateStrategy
metadata: {name: gated, namespace: ` + ns + `}
spec:
  stages:
  - {name: canary, selector: {matchLabels: {ring: canary}}, healthGate: {holdFor: 30s}}
  - {name: prod, selector: {matchLabels: {ring: prod}}}
`
	for _, name := range []string{"canary", "prod"} {
		manifest += "---\n" + strings.Replace(framework.LocalClusterManifest(ns, name, from, upgradeOS, 0),
			"metadata: {name: "+name+", namespace: "+ns+"}", "metadata: {name: "+name+", namespace: "+ns+", labels: {ring: "+name+"}}", 1)
	}
	framework.MustApply(t, manifest)
	prod := framework.WaitReady(t, ns, "prod", 0, 3*time.Minute)
	framework.WaitReady(t, ns, "canary", 0, 3*time.Minute)

	started := time.Now()
	framework.MustApply(t, `apiVersion: butler.butlerlabs.dev/v1alpha1
kind: UpdateRun
metadata: {name: r1, namespace: `+ns+`}
spec:
  strategyRef: {name: gated}
  target: {kubernetesVersion: `+to+`}
`)
	get := func() *v1alpha1.UpdateRun {
		r, err := framework.Plane.Butler.ButlerV1alpha1().UpdateRuns(ns).Get(context.Background(), "r1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	poll(t, time.Minute, "the run moving the canary", func() bool {
		st := get().Status.Stages
		return len(st) == 2 && len(st[0].Clusters) == 1 && st[0].Clusters[0].Phase == v1alpha1.ClusterUpdateUpgrading
	})
	const unlisted = "http://127.0.0.1:1/charts"
	framework.MustApply(t, `apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantAddon
metadata: {name: broken, namespace: `+ns+`}
spec:
  clusterRef: {name: canary}
  helm: {repository: "`+unlisted+`", chart: demo, namespace: broken, createNamespace: true}
  version: 0.1.0
`)
	poll(t, 2*time.Minute, "the run paused", func() bool { return get().Status.Phase == v1alpha1.UpdateRunPaused })
	r := get()
	t.Logf("start -> Paused: %s: %s", time.Since(started).Round(time.Second), r.Status.Message)
	if msg := r.Status.Message; !strings.Contains(msg, "paused on failure") || !strings.Contains(msg, ns+"/canary") ||
		!strings.Contains(msg, "AddonFailed") || !strings.Contains(msg, "broken: ") {
		t.Errorf("the run's message %q: want the failure, the canary, its addon and why", msg)
	}
	if c := r.Status.Stages[1].Clusters; len(c) != 1 || c[0].Phase != v1alpha1.ClusterUpdatePending || c[0].StartTime != nil {
		t.Errorf("prod in the run: %+v, want Pending and never started", c)
	}
	if out := framework.MustKubectl(t, "get", "events", "-n", ns, "--field-selector", "involvedObject.name=r1,reason=Paused", "-o", "jsonpath={.items[*].note}{.items[*].message}"); !strings.Contains(out, ns+"/canary") {
		t.Errorf("no Paused Event naming the canary: %q", out)
	}
	now, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(context.Background(), "prod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if now.Spec.KubernetesVersion != from || now.Generation != prod.Generation || now.Annotations[v1alpha1.UpdateRunHeldAnnotation] != "" {
		t.Errorf("prod after the canary failed: version %s, generation %d (was %d), claim %q", now.Spec.KubernetesVersion, now.Generation, prod.Generation, now.Annotations[v1alpha1.UpdateRunHeldAnnotation])
	}
}
