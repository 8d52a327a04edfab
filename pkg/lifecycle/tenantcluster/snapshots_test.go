package tenantcluster

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	butlerfake "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned/fake"
	listers "github.com/butlerdotdev/butler-apiserver/pkg/generated/listers/butler/v1alpha1"
)

// TestRefuseSnapshotsWithoutTheProvider: a one-off TenantClusterSnapshot of a cluster whose
// TenantControlPlane a real Steward runs (no capabilities annotation) is Failed at once, saying
// which provider cannot take it, as a schedule makes ProviderCapable False; so is one a
// schedule took. The stand-in's clusters (it takes snapshots), snapshots already taken, being
// deleted or of another cluster, and a cluster whose TenantControlPlane is not read yet, are
// left alone. A refused snapshot has no data: its finalizer goes, or its delete would wait for
// ever. Before the change nothing touched the snapshot: it waited for ever.
func TestRefuseSnapshotsWithoutTheProvider(t *testing.T) {
	ctx := context.Background()
	snap := func(name, cluster string, phase v1alpha1.SnapshotPhase) *v1alpha1.TenantClusterSnapshot {
		return &v1alpha1.TenantClusterSnapshot{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", Labels: map[string]string{v1alpha1.SnapshotClusterLabel: cluster},
				// As the registry makes every snapshot: its deletion waits for its data's.
				Finalizers: []string{v1alpha1.SnapshotDataFinalizer}},
			Spec:   v1alpha1.TenantClusterSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: cluster}},
			Status: v1alpha1.TenantClusterSnapshotStatus{Phase: phase},
		}
	}
	deleting := snap("deleting", "prod", "")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	scheduled := snap("nightly-1", "prod", v1alpha1.SnapshotPending)
	scheduled.Labels[v1alpha1.SnapshotScheduleLabel] = "nightly"
	all := []runtime.Object{snap("once", "prod", ""), scheduled, snap("taken", "prod", v1alpha1.SnapshotReady),
		snap("other", "staging", ""), deleting}
	refusable := map[string]bool{"once": true, "nightly-1": true}

	for _, tc := range []struct {
		name        string
		annotations map[string]string // of the TenantControlPlane; nil: none read
		readTCP     bool
		refused     bool
	}{
		{"real Steward", nil, true, true},
		{"the local stand-in", map[string]string{external.LocalProviderCapabilitiesAnnotation: "wake-on-request,restore,snapshots,credential-rotation"}, true, false},
		{"no TenantControlPlane read yet", nil, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, dyn := fakeObjects(t)
			butler := butlerfake.NewSimpleClientset(all...)
			recorder := events.NewFakeRecorder(10)
			c := &Controller{objects: objs, butler: butler, events: recorder, clock: clocktesting.NewFakePassiveClock(time.Now()),
				snaps: listers.NewTenantClusterSnapshotLister(indexer(all...))}
			s := stepState(v1alpha1.ProviderAWS)
			if tc.readTCP {
				tcp := &unstructured.Unstructured{}
				tcp.SetGroupVersionKind(external.TenantControlPlaneGVK)
				tcp.SetName("prod")
				tcp.SetNamespace(s.namespace)
				tcp.SetAnnotations(tc.annotations)
				tcp.SetCreationTimestamp(metav1.Now())
				if err := dyn.Tracker().Create(external.TenantControlPlaneGVR, tcp, s.namespace); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.ensureControlPlane(ctx, s); err != nil {
				t.Fatal(err)
			}
			if err := c.refuseSnapshots(ctx, s); err != nil {
				t.Fatal(err)
			}
			for _, o := range all {
				before := o.(*v1alpha1.TenantClusterSnapshot)
				got, err := butler.ButlerV1alpha1().TenantClusterSnapshots("team-a").Get(ctx, before.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if !tc.refused || !refusable[before.Name] {
					if got.Status.Phase != before.Status.Phase || got.Status.Message != "" || len(got.Finalizers) != 1 {
						t.Errorf("%s: %s %q finalizers %v, want left as it was (%s)", before.Name, got.Status.Phase, got.Status.Message, got.Finalizers, before.Status.Phase)
					}
					continue
				}
				// No data to delete: nothing would remove the finalizer without the stand-in.
				if len(got.Finalizers) != 0 {
					t.Errorf("%s: refused, still held by %v", before.Name, got.Finalizers)
				}
				want := "control plane provider steward cannot: snapshots (TenantClusterSnapshot of TenantCluster prod)"
				if got.Status.Phase != v1alpha1.SnapshotFailed || !strings.HasPrefix(got.Status.Message, want) {
					t.Errorf("%s: %s %q, want Failed saying %q", before.Name, got.Status.Phase, got.Status.Message, want)
				}
			}
			if told := len(recorder.Events); tc.refused && told != len(refusable) || !tc.refused && told != 0 {
				t.Errorf("%d Events, want one per refused snapshot", told)
			}
		})
	}
}

// TestSnapshotToTake: a snapshot not taken yet brings its cluster back (its provider may not
// take it); one taken, failed or being deleted does not.
func TestSnapshotToTake(t *testing.T) {
	s := &v1alpha1.TenantClusterSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "once", Namespace: "team-a"},
		Spec: v1alpha1.TenantClusterSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "prod"}}}
	if got := snapshotToTake(s); len(got) != 1 || got[0] != "team-a/prod" {
		t.Errorf("a new snapshot keys %v, want team-a/prod", got)
	}
	for _, phase := range []v1alpha1.SnapshotPhase{v1alpha1.SnapshotRunning, v1alpha1.SnapshotReady, v1alpha1.SnapshotFailed} {
		s.Status.Phase = phase
		if got := snapshotToTake(s); got != nil {
			t.Errorf("%s keys %v, want none", phase, got)
		}
	}
}

// TestHibernatedClusterRefusesSnapshotsAtOnce: a one-off snapshot of a hibernated cluster whose
// TenantControlPlane a real Steward runs (no capabilities annotation) is Failed by the reconcile
// of the sleeping cluster, naming the provider, as an awake one's is; before, only the ordinary
// plan read the TenantControlPlane, and the snapshot waited, Pending, until the cluster woke.
// The stand-in's sleeping clusters keep theirs for it to take.
func TestHibernatedClusterRefusesSnapshotsAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		refused     bool
	}{
		{"real Steward", nil, true},
		{"the local stand-in", map[string]string{external.LocalProviderCapabilitiesAnnotation: "wake-on-request,restore,snapshots,credential-rotation"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			asleep := cluster()
			asleep.Finalizers = []string{Finalizer}
			asleep.Spec.Hibernation = &v1alpha1.HibernationSpec{Hibernated: true}
			asleep.Status.Phase = v1alpha1.TenantClusterHibernated
			asleep.Status.KubeconfigSecretRef = &v1alpha1.LocalObjectReference{Name: "prod-admin-kubeconfig"}
			pc := &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "lab", Namespace: "team-a"},
				Spec: v1alpha1.ProviderConfigSpec{Provider: v1alpha1.ProviderLocal}, Status: v1alpha1.ProviderConfigStatus{Ready: true}}
			snap := &v1alpha1.TenantClusterSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "once", Namespace: "team-a",
				Labels: map[string]string{v1alpha1.SnapshotClusterLabel: "prod"}, Finalizers: []string{v1alpha1.SnapshotDataFinalizer}},
				Spec: v1alpha1.TenantClusterSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "prod"}}}
			objs, dyn := fakeObjects(t)
			butler := butlerfake.NewSimpleClientset(asleep, snap)
			c := &Controller{objects: objs, butler: butler, events: events.NewFakeRecorder(10), clock: clocktesting.NewFakePassiveClock(time.Now()),
				clusters: listers.NewTenantClusterLister(indexer(asleep)), providers: listers.NewProviderConfigLister(indexer(pc)),
				configs: listers.NewButlerConfigLister(indexer()), teams: listers.NewTeamLister(indexer()),
				snaps: listers.NewTenantClusterSnapshotLister(indexer(snap))}
			c.plan, c.sleepPlan, c.unstartedPlan = c.steps(), c.sleepSteps(), c.unstartedSteps()
			// Steward's TenantControlPlane at 0 replicas, as the sleep left it.
			tcp := &unstructured.Unstructured{}
			tcp.SetGroupVersionKind(external.TenantControlPlaneGVK)
			tcp.SetName("prod")
			tcp.SetNamespace(TenantNamespace(asleep))
			tcp.SetAnnotations(tc.annotations)
			tcp.Object["status"] = map[string]any{"kubernetesResources": map[string]any{"version": map[string]any{"version": "v1.36.3", "status": tcpSleeping}}}
			if err := dyn.Tracker().Create(external.TenantControlPlaneGVR, tcp, tcp.GetNamespace()); err != nil {
				t.Fatal(err)
			}
			if err := c.Reconcile(ctx, "team-a/prod"); err != nil {
				t.Fatal(err)
			}
			got, err := butler.ButlerV1alpha1().TenantClusterSnapshots("team-a").Get(ctx, "once", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := "control plane provider steward cannot: snapshots (TenantClusterSnapshot of TenantCluster prod)"
			if refused := got.Status.Phase == v1alpha1.SnapshotFailed && strings.HasPrefix(got.Status.Message, want); refused != tc.refused {
				t.Errorf("%s %q, want refused %v (%q)", got.Status.Phase, got.Status.Message, tc.refused, want)
			}
			if stored, _ := butler.ButlerV1alpha1().TenantClusters("team-a").Get(ctx, "prod", metav1.GetOptions{}); stored.Status.Phase != v1alpha1.TenantClusterHibernated {
				t.Errorf("the cluster's phase %s, want it still Hibernated", stored.Status.Phase)
			}
		})
	}
}
