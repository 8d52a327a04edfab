package snapshotschedule

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"

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

// A scheduled firing waits while the cluster is being restored: no snapshot is created (it would
// hold part of the data being replaced) and retention deletes nothing (it could delete the
// snapshot being restored). Once status.restore records the restore, the firing is taken.
func TestScheduledSnapshotWaitsForRestore(t *testing.T) {
	now := at(t, "2026-11-25T01:00:30Z")
	old := &v1alpha1.TenantClusterSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "prod-minutely-202611250058", Namespace: "team-a", UID: "old",
			CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Minute)),
			Labels:            map[string]string{v1alpha1.SnapshotClusterLabel: "prod", v1alpha1.SnapshotScheduleLabel: "minutely"}},
		Status: v1alpha1.TenantClusterSnapshotStatus{Phase: v1alpha1.SnapshotReady},
	}
	newer := old.DeepCopy()
	newer.Name, newer.UID, newer.CreationTimestamp = "prod-minutely-202611250059", "newer", metav1.NewTime(now.Add(-time.Minute))
	tc := &v1alpha1.TenantCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "team-a",
			Annotations: map[string]string{v1alpha1.SnapshotSchedulesAnnotation: `{"minutely":"2026-11-25T00:59:00Z"}`}},
		Spec: v1alpha1.TenantClusterSpec{
			Snapshots:   &v1alpha1.SnapshotPolicy{Schedules: []v1alpha1.SnapshotSchedule{{Name: "minutely", Schedule: "* * * * *", Keep: 1}}},
			RestoreFrom: &v1alpha1.RestoreSource{Name: old.Name, Confirm: "prod"},
		},
		Status: v1alpha1.TenantClusterStatus{Restore: &v1alpha1.RestoreStatus{SnapshotName: old.Name, Phase: v1alpha1.RestoreRunning, InPlace: true}},
	}
	reconcile := func(tc *v1alpha1.TenantCluster) (*butlerfake.Clientset, error) {
		client := butlerfake.NewSimpleClientset(tc, old, newer)
		c := &Controller{butler: client, clusters: listers.NewTenantClusterLister(indexer(tc)),
			snaps: listers.NewTenantClusterSnapshotLister(indexer(old, newer)), events: &events.FakeRecorder{},
			clock: testingclock.NewFakePassiveClock(now)}
		c.queue = controllerkit.NewQueue("test", c.reconcile)
		return client, c.reconcile(context.Background(), "team-a/prod")
	}

	client, err := reconcile(tc)
	if want := controllerkit.RequeueAfter(restoreRecheck); err == nil || err.Error() != want.Error() {
		t.Fatalf("a cluster being restored: want a requeue, got %v", err)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() == "create" || a.GetVerb() == "delete" || a.GetVerb() == "patch" {
			t.Errorf("while the restore runs: a %s of %s", a.GetVerb(), a.GetResource().Resource)
		}
	}

	// The restore done: the 01:00 firing is taken, and the older snapshot goes (keep 1).
	done := tc.DeepCopy()
	done.Status.Restore.Phase = v1alpha1.RestoreSucceeded
	client, err = reconcile(done)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.ButlerV1alpha1().TenantClusterSnapshots("team-a").Get(context.Background(), "prod-minutely-202611250100", metav1.GetOptions{}); err != nil {
		t.Errorf("the firing after the restore: %v", err)
	}
	if _, err := client.ButlerV1alpha1().TenantClusterSnapshots("team-a").Get(context.Background(), old.Name, metav1.GetOptions{}); err == nil {
		t.Errorf("retention after the restore kept %s", old.Name)
	}
}
