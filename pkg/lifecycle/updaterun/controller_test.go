package updaterun

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	butlerfake "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned/fake"
	listers "github.com/butlerdotdev/butler-apiserver/pkg/generated/listers/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
)

const from, target = "v1.30.1", "v1.30.2"

// fixture is the controller over a fake clientset; sync rebuilds its listers from what the
// clientset holds, as the informers would.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	client *butlerfake.Clientset
	clock  *testingclock.FakePassiveClock
	rec    *events.FakeRecorder
	c      *Controller
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: context.Background(), client: butlerfake.NewSimpleClientset(objs...),
		clock: testingclock.NewFakePassiveClock(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)), rec: events.NewFakeRecorder(1000)}
	f.c = &Controller{butler: f.client, events: f.rec, clock: f.clock}
	f.c.queue = controllerkit.NewQueue("test", f.c.reconcile)
	return f
}

func indexer[T runtime.Object](items []T) cache.Indexer {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range items {
		_ = idx.Add(o)
	}
	return idx
}

func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

func (f *fixture) sync() {
	f.t.Helper()
	b := f.client.ButlerV1alpha1()
	runs, _ := b.UpdateRuns("").List(f.ctx, metav1.ListOptions{})
	strategies, _ := b.UpdateStrategies("").List(f.ctx, metav1.ListOptions{})
	clusters, _ := b.TenantClusters("").List(f.ctx, metav1.ListOptions{})
	snaps, _ := b.TenantClusterSnapshots("").List(f.ctx, metav1.ListOptions{})
	f.c.runs = listers.NewUpdateRunLister(indexer(ptrs(runs.Items)))
	f.c.strategies = listers.NewUpdateStrategyLister(indexer(ptrs(strategies.Items)))
	f.c.clusters = listers.NewTenantClusterLister(indexer(ptrs(clusters.Items)))
	f.c.snapshots = listers.NewTenantClusterSnapshotLister(indexer(ptrs(snaps.Items)))
}

// reconcile runs one pass over the run and returns it as stored.
func (f *fixture) reconcile(key string) *v1alpha1.UpdateRun {
	f.t.Helper()
	f.sync()
	if err := f.c.reconcile(f.ctx, key); err != nil {
		f.t.Fatal(err)
	}
	ns, name, _ := strings.Cut(key, "/")
	run, err := f.client.ButlerV1alpha1().UpdateRuns(ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return run
}

func (f *fixture) get(ns, name string) *v1alpha1.TenantCluster {
	f.t.Helper()
	tc, err := f.client.ButlerV1alpha1().TenantClusters(ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return tc
}

// roll plays the TenantCluster controller for one cluster: its control plane reaches spec's version,
// and it is Ready (or Failed).
func (f *fixture) roll(ns, name string, phase v1alpha1.TenantClusterPhase) {
	f.t.Helper()
	tc := f.get(ns, name)
	setHealth(tc, tc.Spec.KubernetesVersion, phase)
	if _, err := f.client.ButlerV1alpha1().TenantClusters(ns).UpdateStatus(f.ctx, tc, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func setHealth(tc *v1alpha1.TenantCluster, observed string, phase v1alpha1.TenantClusterPhase) {
	tc.Status.Phase = phase
	tc.Status.ObservedState = &v1alpha1.ObservedClusterState{KubernetesVersion: observed}
	status := metav1.ConditionTrue
	if phase != v1alpha1.TenantClusterReady {
		status = metav1.ConditionFalse
	}
	meta.SetStatusCondition(&tc.Status.Conditions, metav1.Condition{Type: "Ready", Status: status, Reason: string(phase), Message: "addon broken"})
}

// moving are the clusters of ns whose spec says the target and whose control plane is not there:
// what "upgrading" means from the clusters' side.
func (f *fixture) moving(ns string) []string {
	list, _ := f.client.ButlerV1alpha1().TenantClusters(ns).List(f.ctx, metav1.ListOptions{})
	var out []string
	for _, tc := range list.Items {
		if tc.Spec.KubernetesVersion == target && tc.Status.ObservedState.KubernetesVersion != target {
			out = append(out, tc.Name)
		}
	}
	return out
}

func cluster(ns, name, ring string) *v1alpha1.TenantCluster {
	tc := &v1alpha1.TenantCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"ring": ring}},
		Spec: v1alpha1.TenantClusterSpec{KubernetesVersion: from}}
	setHealth(tc, from, v1alpha1.TenantClusterReady)
	return tc
}

func ring(name string, max int32, tasks ...v1alpha1.UpdateTask) v1alpha1.UpdateStage {
	return v1alpha1.UpdateStage{Name: name, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"ring": name}},
		MaxConcurrency: ptr.To(intstr.FromInt32(max)), AfterStage: tasks}
}

func strategy(ns string, stages ...v1alpha1.UpdateStage) *v1alpha1.UpdateStrategy {
	return &v1alpha1.UpdateStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rings"}, Spec: v1alpha1.UpdateStrategySpec{Stages: stages}}
}

func run(ns, name string) *v1alpha1.UpdateRun {
	return &v1alpha1.UpdateRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.UpdateRunSpec{StrategyRef: v1alpha1.LocalObjectReference{Name: "rings"},
			Target: v1alpha1.UpdateTarget{KubernetesVersion: target}, OnFailure: v1alpha1.UpdateFailurePause, State: v1alpha1.UpdateRunStateRun}}
}

func clusterOf(r *v1alpha1.UpdateRun, key string) v1alpha1.ClusterUpdateStatus {
	for _, st := range r.Status.Stages {
		for _, c := range st.Clusters {
			if c.Name == key {
				return c
			}
		}
	}
	return v1alpha1.ClusterUpdateStatus{}
}

func (f *fixture) approve(key, stage string) {
	f.t.Helper()
	ns, name, _ := strings.Cut(key, "/")
	r, _ := f.client.ButlerV1alpha1().UpdateRuns(ns).Get(f.ctx, name, metav1.GetOptions{})
	for i := range r.Status.Stages {
		for j := range r.Status.Stages[i].Tasks {
			if t := &r.Status.Stages[i].Tasks[j]; r.Status.Stages[i].Name == stage && t.Type == v1alpha1.TaskApproval {
				t.Phase, t.ApprovedBy = v1alpha1.TaskSucceeded, "alice"
			}
		}
	}
	if _, err := f.client.ButlerV1alpha1().UpdateRuns(ns).UpdateStatus(f.ctx, r, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// The run with a fake clock: the canary moves alone while prod waits; then a 20 s wait
// and an approval; then prod, never more than 2 at once; another Team's cluster with the same
// labels is never selected nor touched.
func TestUpdateRunCanaryWaitApprovalThenProdAtMostTwo(t *testing.T) {
	wait := v1alpha1.UpdateTask{Wait: &v1alpha1.WaitTask{Duration: metav1.Duration{Duration: 20 * time.Second}}}
	approval := v1alpha1.UpdateTask{Approval: &v1alpha1.ApprovalTask{}}
	objs := []runtime.Object{strategy("team-a", ring("canary", 1, wait, approval), ring("prod", 2)), run("team-a", "r1"),
		cluster("team-a", "canary", "canary"), cluster("team-b", "other", "prod"), cluster("team-a", "unlabelled", "none")}
	for _, n := range []string{"p1", "p2", "p3", "p4", "p5"} {
		objs = append(objs, cluster("team-a", n, "prod"))
	}
	f := newFixture(t, objs...)

	r := f.reconcile("team-a/r1")
	if got := f.moving("team-a"); len(got) != 1 || got[0] != "canary" {
		t.Fatalf("moving %v, want the canary alone", got)
	}
	if r.Status.Strategy == nil || len(r.Status.NotSelected) != 1 || r.Status.NotSelected[0] != "team-a/unlabelled" {
		t.Errorf("frozen strategy %v, notSelected %v", r.Status.Strategy, r.Status.NotSelected)
	}
	if h := f.get("team-a", "canary").Annotations[v1alpha1.UpdateRunHeldAnnotation]; h != "team-a/r1" {
		t.Errorf("canary held by %q", h)
	}
	f.roll("team-a", "canary", v1alpha1.TenantClusterReady)
	r = f.reconcile("team-a/r1")
	if r.Status.Phase != v1alpha1.UpdateRunWaiting || len(f.moving("team-a")) != 0 || f.get("team-a", "p1").Spec.KubernetesVersion != from {
		t.Fatalf("after the canary: phase %s (%s), moving %v", r.Status.Phase, r.Status.Message, f.moving("team-a"))
	}
	f.step(19 * time.Second)
	if r = f.reconcile("team-a/r1"); r.Status.Phase != v1alpha1.UpdateRunWaiting {
		t.Fatalf("after 19s: %s", r.Status.Phase)
	}
	f.step(time.Second)
	if r = f.reconcile("team-a/r1"); r.Status.Phase != v1alpha1.UpdateRunWaitingForApproval || f.get("team-a", "p1").Spec.KubernetesVersion != from {
		t.Fatalf("after 20s: %s (%s)", r.Status.Phase, r.Status.Message)
	}
	f.step(time.Hour)
	if r = f.reconcile("team-a/r1"); r.Status.Phase != v1alpha1.UpdateRunWaitingForApproval {
		t.Fatalf("an hour on, without approval: %s", r.Status.Phase)
	}
	f.approve("team-a/r1", "canary")

	most := 0
	for i := 0; i < 20 && r.Status.Phase != v1alpha1.UpdateRunSucceeded; i++ {
		r = f.reconcile("team-a/r1")
		moving := f.moving("team-a")
		most = max(most, len(moving))
		if len(moving) > 2 {
			t.Fatalf("prod has %d upgrading at once: %v", len(moving), moving)
		}
		if len(moving) > 0 {
			f.roll("team-a", moving[0], v1alpha1.TenantClusterReady)
		}
	}
	if r.Status.Phase != v1alpha1.UpdateRunSucceeded || most != 2 {
		t.Fatalf("phase %s (%s), at most %d moving; want Succeeded with 2 at once", r.Status.Phase, r.Status.Message, most)
	}
	if other := f.get("team-b", "other"); other.Spec.KubernetesVersion != from || clusterOf(r, "team-b/other").Name != "" {
		t.Errorf("another Team's cluster was selected or moved: %s", other.Spec.KubernetesVersion)
	}
	if h := f.get("team-a", "p5").Annotations[v1alpha1.UpdateRunHeldAnnotation]; h != "" {
		t.Errorf("p5 still held by %q after the run", h)
	}
	if !strings.Contains(drain(f.rec), "approved by alice") {
		t.Error("no Event says who approved the canary stage")
	}
}

func drain(rec *events.FakeRecorder) string {
	var all []string
	for {
		select {
		case e := <-rec.Events:
			all = append(all, e)
		default:
			return strings.Join(all, "\n")
		}
	}
}

// A canary that fails (a broken addon: the cluster goes Failed) pauses the run with the reason;
// prod is never touched, however long one waits.
func TestUpdateRunPausesOnFailureAndProdIsUntouched(t *testing.T) {
	f := newFixture(t, strategy("team-a", ring("canary", 1), ring("prod", 2)), run("team-a", "r1"),
		cluster("team-a", "canary", "canary"), cluster("team-a", "p1", "prod"))
	f.reconcile("team-a/r1")
	f.roll("team-a", "canary", v1alpha1.TenantClusterFailed)
	for range 3 {
		f.step(time.Hour)
		r := f.reconcile("team-a/r1")
		if r.Status.Phase != v1alpha1.UpdateRunPaused || !strings.Contains(r.Status.Message, "team-a/canary") || !strings.Contains(r.Status.Message, "addon broken") {
			t.Fatalf("phase %s: %q; want Paused naming the canary and why", r.Status.Phase, r.Status.Message)
		}
	}
	if v := f.get("team-a", "p1").Spec.KubernetesVersion; v != from {
		t.Errorf("prod moved to %s after the canary failed", v)
	}
	if h := f.get("team-a", "canary").Annotations[v1alpha1.UpdateRunHeldAnnotation]; h != "" {
		t.Errorf("the failed canary is still held by %q", h)
	}
}

// A moved cluster that never becomes healthy fails at the gate's timeout (fake clock), and one
// that is healthy passes only once healthy for holdFor unbroken.
func TestUpdateRunHealthGateHoldForAndTimeout(t *testing.T) {
	canary := ring("canary", 2)
	canary.HealthGate = &v1alpha1.HealthGate{HoldFor: metav1.Duration{Duration: 2 * time.Minute}, Timeout: metav1.Duration{Duration: 10 * time.Minute}, MaxFailed: 1}
	f := newFixture(t, strategy("team-a", canary), run("team-a", "r1"), cluster("team-a", "slow", "canary"), cluster("team-a", "good", "canary"))
	f.reconcile("team-a/r1")
	f.roll("team-a", "good", v1alpha1.TenantClusterReady)
	r := f.reconcile("team-a/r1")
	if c := clusterOf(r, "team-a/good"); c.Phase != v1alpha1.ClusterUpdateUpgrading || c.HealthySince == nil {
		t.Fatalf("good right after it is healthy: %+v", c)
	}
	f.step(time.Minute)
	if c := clusterOf(f.reconcile("team-a/r1"), "team-a/good"); c.Phase != v1alpha1.ClusterUpdateUpgrading {
		t.Fatalf("good passed after 1m of a 2m hold: %+v", c)
	}
	f.step(time.Minute)
	if c := clusterOf(f.reconcile("team-a/r1"), "team-a/good"); c.Phase != v1alpha1.ClusterUpdateSucceeded {
		t.Fatalf("good after 2m healthy: %+v", c)
	}
	f.step(9 * time.Minute)
	r = f.reconcile("team-a/r1")
	if c := clusterOf(r, "team-a/slow"); c.Phase != v1alpha1.ClusterUpdateFailed || !strings.Contains(c.Message, "did not pass the gate within 10m0s") {
		t.Fatalf("slow after 11m: %+v", c)
	}
	// maxFailed 1: one failure is allowed, and the stage (and run) complete.
	if r.Status.Phase != v1alpha1.UpdateRunSucceeded {
		t.Errorf("run with one failure allowed: %s (%s)", r.Status.Phase, r.Status.Message)
	}
}

// Two runs that would move the same cluster: the second waits for the first (Held, said in its
// status and an Event) and moves on once the first has released it.
func TestUpdateRunTwoRunsOnOneCluster(t *testing.T) {
	second := run("team-a", "r2")
	second.Spec.State = v1alpha1.UpdateRunStatePlan
	f := newFixture(t, strategy("team-a", ring("canary", 1)), run("team-a", "r1"), second, cluster("team-a", "c1", "canary"))
	f.reconcile("team-a/r2") // planned while c1 is still at the old version
	f.reconcile("team-a/r1") // r1 takes c1
	second = f.reconcile("team-a/r2")
	second.Spec.State = v1alpha1.UpdateRunStateRun
	if _, err := f.client.ButlerV1alpha1().UpdateRuns("team-a").Update(f.ctx, second, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r2 := f.reconcile("team-a/r2")
	if c := clusterOf(r2, "team-a/c1"); c.Phase != v1alpha1.ClusterUpdateHeld || !strings.Contains(c.Message, "held by update run team-a/r1") {
		t.Fatalf("second run: %+v", c)
	}
	f.roll("team-a", "c1", v1alpha1.TenantClusterReady)
	if r1 := f.reconcile("team-a/r1"); r1.Status.Phase != v1alpha1.UpdateRunSucceeded {
		t.Fatalf("first run: %s", r1.Status.Phase)
	}
	f.reconcile("team-a/r2") // the first look after the release only starts the cluster's update
	r2 = f.reconcile("team-a/r2")
	if r2.Status.Phase != v1alpha1.UpdateRunSucceeded {
		t.Errorf("second run after the first released the cluster: %s (%s)", r2.Status.Phase, r2.Status.Message)
	}
}

// A run in Plan state moves nothing; a cluster more than one minor behind and a hibernated one
// are skipped with the reason; with snapshotBeforeUpgrade a cluster moves only once its
// snapshot is Ready.
func TestUpdateRunPlanSkipsAndSnapshotFirst(t *testing.T) {
	old := cluster("team-a", "old", "canary")
	old.Spec.KubernetesVersion = "v1.28.3"
	asleep := cluster("team-a", "asleep", "canary")
	asleep.Spec.Hibernation = &v1alpha1.HibernationSpec{Hibernated: true}
	planned := run("team-a", "r1")
	planned.Spec.State = v1alpha1.UpdateRunStatePlan
	planned.Spec.SnapshotBeforeUpgrade = true
	f := newFixture(t, strategy("team-a", ring("canary", 5)), planned, old, asleep, cluster("team-a", "c1", "canary"))
	r := f.reconcile("team-a/r1")
	if r.Status.Phase != v1alpha1.UpdateRunPlanned || len(f.moving("team-a")) != 0 {
		t.Fatalf("plan: %s, moving %v", r.Status.Phase, f.moving("team-a"))
	}
	for key, want := range map[string]string{"team-a/old": "unreachable in one step", "team-a/asleep": "hibernated"} {
		if c := clusterOf(r, key); c.Phase != v1alpha1.ClusterUpdateSkipped || !strings.Contains(c.Message, want) {
			t.Errorf("%s: %+v, want Skipped saying %q", key, c, want)
		}
	}
	r.Spec.State = v1alpha1.UpdateRunStateRun
	if _, err := f.client.ButlerV1alpha1().UpdateRuns("team-a").Update(f.ctx, r, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r = f.reconcile("team-a/r1")
	c := clusterOf(r, "team-a/c1")
	if c.Phase != v1alpha1.ClusterUpdateSnapshotting || f.get("team-a", "c1").Spec.KubernetesVersion != from {
		t.Fatalf("c1 before its snapshot is Ready: %+v", c)
	}
	snap, err := f.client.ButlerV1alpha1().TenantClusterSnapshots("team-a").Get(f.ctx, c.Snapshot, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	snap.Status.Phase = v1alpha1.SnapshotReady
	if _, err := f.client.ButlerV1alpha1().TenantClusterSnapshots("team-a").UpdateStatus(f.ctx, snap, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if c = clusterOf(f.reconcile("team-a/r1"), "team-a/c1"); c.Phase != v1alpha1.ClusterUpdateUpgrading || f.get("team-a", "c1").Spec.KubernetesVersion != target {
		t.Fatalf("c1 after its snapshot is Ready: %+v", c)
	}
}

// A run in the platform namespace selects clusters of every namespace.
func TestUpdateRunInThePlatformNamespaceSeesEveryTeam(t *testing.T) {
	f := newFixture(t, strategy(PlatformNamespace, ring("prod", 5)), run(PlatformNamespace, "r1"),
		cluster("team-a", "a", "prod"), cluster("team-b", "b", "prod"))
	f.reconcile(PlatformNamespace + "/r1")
	if a, b := f.get("team-a", "a").Spec.KubernetesVersion, f.get("team-b", "b").Spec.KubernetesVersion; a != target || b != target {
		t.Errorf("platform run moved a to %s, b to %s", a, b)
	}
}

func (f *fixture) step(d time.Duration) { f.clock.SetTime(f.clock.Now().Add(d)) }

// One pass that ends two stages (the approved one and an empty one after it) sends one Event
// per reason naming both: client-go's recorder makes Events about one object (at one
// resourceVersion) with one reason a series and keeps a single note, so the approver's
// "stage canary done (approved by alice)" was lost to "stage prod done" in the e2e.
func TestUpdateRunEventsOfOnePassKeepEveryNote(t *testing.T) {
	approval := v1alpha1.UpdateTask{Approval: &v1alpha1.ApprovalTask{}}
	f := newFixture(t, strategy("team-a", ring("canary", 1, approval), ring("prod", 1)), run("team-a", "r1"))
	if r := f.reconcile("team-a/r1"); r.Status.Phase != v1alpha1.UpdateRunWaitingForApproval {
		t.Fatalf("before the approval: %s", r.Status.Phase)
	}
	drain(f.rec)
	f.approve("team-a/r1", "canary")
	if r := f.reconcile("team-a/r1"); r.Status.Phase != v1alpha1.UpdateRunSucceeded {
		t.Fatalf("after the approval: %s (%s)", r.Status.Phase, r.Status.Message)
	}
	reasons := map[string][]string{}
	for _, e := range strings.Split(drain(f.rec), "\n") {
		fields := strings.Fields(e)
		if len(fields) > 1 {
			reasons[fields[1]] = append(reasons[fields[1]], e)
		}
	}
	for reason, events := range reasons {
		if len(events) > 1 {
			t.Errorf("%d Events with reason %s in one pass (a series keeps one note): %q", len(events), reason, events)
		}
	}
	if done := strings.Join(reasons["StageSucceeded"], ""); !strings.Contains(done, "stage canary done (approved by alice)") || !strings.Contains(done, "stage prod done") {
		t.Errorf("StageSucceeded: %q, want both stages and the approver", done)
	}
}

// A pass on a cached run older than the controller's own last status write decides nothing: it
// would judge the canary again from the old status, move prod on it, and lose that decision to
// the write's conflict — after which a newer pass may find the canary failed, and the run
// pauses with prod already moved, claimed and never followed (seen in the e2e
// TestUpdateRunPausesOnABrokenCanary). The fake clientset here checks resourceVersions, as the
// server does.
func TestUpdateRunStaleCopyMovesNothing(t *testing.T) {
	r := run("team-a", "r1")
	r.UID, r.ResourceVersion = "r1-uid", "1"
	f := newFixture(t, strategy("team-a", ring("canary", 1), ring("prod", 1)), r,
		cluster("team-a", "canary", "canary"), cluster("team-a", "p1", "prod"))
	f.checkResourceVersions()
	f.reconcile("team-a/r1") // plans; the canary moves
	f.sync()
	stale := f.c.runs // the run with the canary Upgrading
	if err := f.c.reconcile(f.ctx, "team-a/r1"); err != nil {
		t.Fatal(err) // the canary's control plane is not there yet: a new message in status
	}
	f.roll("team-a", "canary", v1alpha1.TenantClusterReady)
	f.sync()
	f.c.runs = stale
	err := f.c.reconcile(f.ctx, "team-a/r1")
	if v := f.get("team-a", "p1").Spec.KubernetesVersion; v != from || err == nil {
		t.Fatalf("a pass on the stale run: %v; prod at %s (want %s, untouched)", err, v, from)
	}
	got := f.reconcile("team-a/r1")
	if c := clusterOf(got, "team-a/p1"); c.Phase != v1alpha1.ClusterUpdateUpgrading || f.get("team-a", "p1").Spec.KubernetesVersion != target {
		t.Errorf("the pass on the current run: prod %+v", c)
	}
}

// checkResourceVersions makes the fake clientset refuse a run's status written from an older
// copy (409) and give each stored one a new resourceVersion, as the server does.
func (f *fixture) checkResourceVersions() {
	next := 100
	f.client.PrependReactor("update", "updateruns", func(a k8stesting.Action) (bool, runtime.Object, error) {
		u := a.(k8stesting.UpdateAction)
		run := u.GetObject().(*v1alpha1.UpdateRun)
		stored, err := f.client.Tracker().Get(u.GetResource(), run.Namespace, run.Name)
		if err != nil {
			return false, nil, nil
		}
		if rv := stored.(*v1alpha1.UpdateRun).ResourceVersion; rv != run.ResourceVersion {
			return true, nil, apierrors.NewConflict(u.GetResource().GroupResource(), run.Name, fmt.Errorf("stored %s, written from %s", rv, run.ResourceVersion))
		}
		next++
		run.ResourceVersion = strconv.Itoa(next)
		return false, nil, nil
	})
}

// The pass that moves a cluster loses its status write to a conflict: the cluster is at the
// target and claimed by this run, while the stored run still says Pending. The next pass takes
// up the move it made, from the version the plan recorded: not the target as its from-version.
func TestUpdateRunMoveWhoseStatusWasLost(t *testing.T) {
	planned := run("team-a", "r1")
	planned.Spec.State = v1alpha1.UpdateRunStatePlan
	f := newFixture(t, strategy("team-a", ring("canary", 1)), planned, cluster("team-a", "c1", "canary"))
	r := f.reconcile("team-a/r1")
	if c := clusterOf(r, "team-a/c1"); c.Phase != v1alpha1.ClusterUpdatePending || c.FromVersion != from {
		t.Fatalf("plan: %+v", c)
	}
	r.Spec.State = v1alpha1.UpdateRunStateRun
	if _, err := f.client.ButlerV1alpha1().UpdateRuns("team-a").Update(f.ctx, r, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	lost := false
	f.client.PrependReactor("update", "updateruns", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" || lost {
			return false, nil, nil
		}
		lost = true
		return true, nil, apierrors.NewConflict(a.GetResource().GroupResource(), "r1", fmt.Errorf("a newer run"))
	})
	f.sync()
	_ = f.c.reconcile(f.ctx, "team-a/r1") // moves c1; its status write is lost
	if !lost || f.get("team-a", "c1").Spec.KubernetesVersion != target {
		t.Fatalf("the first pass: status lost %v, c1 at %s", lost, f.get("team-a", "c1").Spec.KubernetesVersion)
	}
	c := clusterOf(f.reconcile("team-a/r1"), "team-a/c1")
	if c.Phase != v1alpha1.ClusterUpdateUpgrading || c.FromVersion != from {
		t.Errorf("the next pass: %+v, want Upgrading from %s", c, from)
	}
}
