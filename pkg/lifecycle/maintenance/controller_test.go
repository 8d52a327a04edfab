package maintenance

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	butlerfake "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned/fake"
	listers "github.com/butlerdotdev/butler-apiserver/pkg/generated/listers/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
)

func indexer(objs ...runtime.Object) cache.Indexer {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		_ = idx.Add(o)
	}
	return idx
}

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// fixture is a Ready cluster team-a/prod at version; the platform offers v1.30.1 (expired on
// 2026-11-01), v1.30.2, v1.31.4 and v1.31.5, and opens a daily window at 02:00 UTC for an hour,
// automatic updates off. The Team turns automatic updates on when teamAuto.
type fixture struct {
	client *butlerfake.Clientset
	clock  *testingclock.FakePassiveClock
	c      *Controller
}

func newFixture(t *testing.T, version string, teamAuto bool, own *v1alpha1.MaintenanceSpec) *fixture {
	t.Helper()
	expired := metav1.NewTime(at(t, "2026-11-01T00:00:00Z"))
	config := &v1alpha1.ButlerConfig{ObjectMeta: metav1.ObjectMeta{Name: butler.ButlerConfigName},
		Spec: v1alpha1.ButlerConfigSpec{
			KubernetesVersions: []v1alpha1.OfferedVersion{{Version: "v1.30.1", ExpirationDate: &expired},
				{Version: "v1.30.2"}, {Version: "v1.31.4"}, {Version: "v1.31.5"}},
			Maintenance: &v1alpha1.MaintenanceSpec{Window: &v1alpha1.MaintenanceWindow{Start: "02:00", Duration: metav1.Duration{Duration: time.Hour}}},
		}}
	team := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: v1alpha1.TeamSpec{ClusterDefaults: &v1alpha1.ClusterDefaults{
		Maintenance: &v1alpha1.MaintenanceSpec{AutoUpdate: &v1alpha1.MaintenanceAutoUpdate{KubernetesVersion: teamAuto}}}}}
	tc := &v1alpha1.TenantCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "team-a"},
		Spec: v1alpha1.TenantClusterSpec{KubernetesVersion: version, Maintenance: own},
		Status: v1alpha1.TenantClusterStatus{Phase: v1alpha1.TenantClusterReady,
			ObservedState: &v1alpha1.ObservedClusterState{KubernetesVersion: version}}}
	f := &fixture{client: butlerfake.NewSimpleClientset(tc), clock: testingclock.NewFakePassiveClock(time.Time{})}
	f.c = &Controller{butler: f.client, clusters: listers.NewTenantClusterLister(indexer(tc)),
		teams: listers.NewTeamLister(indexer(team)), configs: listers.NewButlerConfigLister(indexer(config)), runs: listers.NewUpdateRunLister(indexer()),
		events: &events.FakeRecorder{}, clock: f.clock}
	f.c.queue = controllerkit.NewQueue("test", f.c.reconcile)
	return f
}

// runAt reconciles at now and returns the stored cluster.
func (f *fixture) runAt(t *testing.T, now string) *v1alpha1.TenantCluster {
	t.Helper()
	f.clock.SetTime(at(t, now))
	if err := f.c.reconcile(context.Background(), "team-a/prod"); err != nil {
		t.Fatal(err)
	}
	got, err := f.client.ButlerV1alpha1().TenantClusters("team-a").Get(context.Background(), "prod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The next reconcile reads what this one stored, as the informer would hand it.
	return got
}

func TestMaintenanceNothingOutsideTheWindow(t *testing.T) {
	f := newFixture(t, "v1.31.4", true, nil)
	got := f.runAt(t, "2026-11-25T03:00:00Z") // the window closed at 03:00
	if got.Spec.KubernetesVersion != "v1.31.4" {
		t.Fatalf("updated to %s outside the window", got.Spec.KubernetesVersion)
	}
	m := got.Status.Maintenance
	if m == nil || m.NextWindowStart == nil || !m.NextWindowStart.Time.Equal(at(t, "2026-11-26T02:00:00Z")) || m.LastMaintenance != nil {
		t.Fatalf("status.maintenance %+v, want the next window at 2026-11-26T02:00Z and no last maintenance", m)
	}
}

func TestMaintenancePatchUpdateInsideTheWindow(t *testing.T) {
	f := newFixture(t, "v1.31.4", true, nil)
	got := f.runAt(t, "2026-11-25T02:10:00Z")
	if got.Spec.KubernetesVersion != "v1.31.5" {
		t.Fatalf("version %s, want the newest offered patch v1.31.5", got.Spec.KubernetesVersion)
	}
	m := got.Status.Maintenance
	if m == nil || m.LastMaintenance == nil || !strings.Contains(m.LastMaintenance.Description, "updated v1.31.4 to v1.31.5 (automatic patch update)") {
		t.Fatalf("status.maintenance %+v", m)
	}
	if !m.LastMaintenance.Time.Time.Equal(at(t, "2026-11-25T02:10:00Z")) || !m.NextWindowStart.Time.Equal(at(t, "2026-11-26T02:00:00Z")) {
		t.Fatalf("last %s, next %s", m.LastMaintenance.Time, m.NextWindowStart)
	}
}

func TestMaintenanceExpiredVersionUpdatedWithAutomaticUpdatesOff(t *testing.T) {
	f := newFixture(t, "v1.30.1", false, nil)
	if got := f.runAt(t, "2026-11-25T01:59:00Z"); got.Spec.KubernetesVersion != "v1.30.1" {
		t.Fatalf("updated to %s before the window", got.Spec.KubernetesVersion)
	}
	got := f.runAt(t, "2026-11-25T02:00:00Z")
	if got.Spec.KubernetesVersion != "v1.30.2" {
		t.Fatalf("version %s, want the expired v1.30.1 moved to v1.30.2", got.Spec.KubernetesVersion)
	}
	if d := got.Status.Maintenance.LastMaintenance.Description; !strings.Contains(d, "v1.30.1 expired") {
		t.Fatalf("last maintenance %q does not say the version expired", d)
	}
}

func TestMaintenanceNeverBumpsTheMinor(t *testing.T) {
	// v1.30.2 is the newest patch of v1.30; v1.31.5 is offered but is another minor.
	f := newFixture(t, "v1.30.2", true, nil)
	if got := f.runAt(t, "2026-11-25T02:30:00Z"); got.Spec.KubernetesVersion != "v1.30.2" {
		t.Fatalf("minor bumped to %s", got.Spec.KubernetesVersion)
	}
}

// The cluster's own setting wins over its Team's: automatic updates off on the cluster.
func TestMaintenanceClusterOverridesTeam(t *testing.T) {
	f := newFixture(t, "v1.31.4", true, &v1alpha1.MaintenanceSpec{AutoUpdate: &v1alpha1.MaintenanceAutoUpdate{KubernetesVersion: false}})
	if got := f.runAt(t, "2026-11-25T02:10:00Z"); got.Spec.KubernetesVersion != "v1.31.4" {
		t.Fatalf("updated to %s though the cluster turned automatic updates off", got.Spec.KubernetesVersion)
	}
}

// An upgrade still rolling is not moved again: maintenance waits inside the window.
func TestMaintenanceWaitsForARollingUpgrade(t *testing.T) {
	f := newFixture(t, "v1.31.4", true, nil)
	tc, _ := f.c.clusters.TenantClusters("team-a").Get("prod")
	tc.Status.ObservedState.KubernetesVersion = "v1.31.3"
	if got := f.runAt(t, "2026-11-25T02:10:00Z"); got.Spec.KubernetesVersion != "v1.31.4" {
		t.Fatalf("updated to %s while the last upgrade rolls", got.Spec.KubernetesVersion)
	}
}

// A cluster an unfinished UpdateRun holds is left to the run inside the window; the claim of a
// run that finished (or was deleted) holds nothing.
func TestMaintenanceLeavesAClusterAnUpdateRunHolds(t *testing.T) {
	f := newFixture(t, "v1.30.1", false, nil) // expired: maintenance would move it
	tc, _ := f.client.ButlerV1alpha1().TenantClusters("team-a").Get(context.Background(), "prod", metav1.GetOptions{})
	tc.Annotations = map[string]string{v1alpha1.UpdateRunHeldAnnotation: "team-a/r1"}
	if _, err := f.client.ButlerV1alpha1().TenantClusters("team-a").Update(context.Background(), tc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.c.clusters = listers.NewTenantClusterLister(indexer(tc))
	run := &v1alpha1.UpdateRun{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "r1"}, Status: v1alpha1.UpdateRunStatus{Phase: v1alpha1.UpdateRunRunning}}
	f.c.runs = listers.NewUpdateRunLister(indexer(run))
	if got := f.runAt(t, "2026-11-25T02:00:00Z"); got.Spec.KubernetesVersion != "v1.30.1" {
		t.Fatalf("maintenance moved a cluster a running update run holds, to %s", got.Spec.KubernetesVersion)
	}
	run.Status.Phase = v1alpha1.UpdateRunSucceeded
	if got := f.runAt(t, "2026-11-25T02:01:00Z"); got.Spec.KubernetesVersion != "v1.30.2" {
		t.Fatalf("a finished run's claim still held the cluster at %s", got.Spec.KubernetesVersion)
	}
}
