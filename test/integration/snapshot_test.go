package integration

import (
	"context"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// A new TenantClusterSnapshot is labelled with its cluster and held by the data finalizer;
// its spec is fixed, a Ready status is fixed, and a delete waits for the finalizer.
func TestSnapshotLabelFinalizerAndFixedData(t *testing.T) {
	ctx := context.Background()
	snaps := shared.Client.ButlerV1alpha1().TenantClusterSnapshots("snapshots")
	// A snapshot names a cluster that exists (SnapshotLimits refuses one of a missing cluster).
	if _, err := shared.Client.ButlerV1alpha1().TenantClusters("snapshots").Create(ctx, exampleCluster(t, "snapshots", "prod"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created, err := snaps.Create(ctx, &v1alpha1.TenantClusterSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "prod-0900"},
		Spec:       v1alpha1.TenantClusterSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "prod"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Labels[butler.ClusterLabel] != "prod" || !slices.Contains(created.Finalizers, butler.SnapshotDataFinalizer) {
		t.Fatalf("labels %v finalizers %v", created.Labels, created.Finalizers)
	}
	created.Spec.ClusterRef.Name = "staging"
	created.Labels[butler.ClusterLabel] = "staging"
	if _, err := snaps.Update(ctx, created, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec: Invalid value") {
		t.Errorf("moving a snapshot to another cluster: %v", err)
	}

	got, _ := snaps.Get(ctx, "prod-0900", metav1.GetOptions{})
	got.Status = v1alpha1.TenantClusterSnapshotStatus{Phase: v1alpha1.SnapshotReady, Revision: 7, ObjectCount: 3, Bytes: 120,
		Checksum: "sha256:" + strings.Repeat("0f", 32), Location: "/snapshots/x", KubernetesVersion: "v1.36.3"}
	ready, err := snaps.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ready.Status.Checksum = "sha256:" + strings.Repeat("f0", 32)
	if _, err := snaps.UpdateStatus(ctx, ready, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.checksum") {
		t.Errorf("changing a Ready snapshot's checksum: %v", err)
	}

	if err := snaps.Delete(ctx, "prod-0900", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	held, err := snaps.Get(ctx, "prod-0900", metav1.GetOptions{})
	if err != nil || held.DeletionTimestamp == nil {
		t.Fatalf("a deleted snapshot whose data is not deleted yet: %v, %v", held, err)
	}
	held.Finalizers = nil
	if _, err := snaps.Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := snaps.Get(ctx, "prod-0900", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after the finalizer: %v", err)
	}
}

// A restore is pinned to the snapshot admitted, through the real server (admission then the
// registry): the pin names that snapshot's cluster and UID whatever a client sends, an update
// cannot change it, and a snapshot deleted and taken again under the name is not the one pinned
// (the provider then refuses it: TestRestoreRefusesASnapshotNotTheOneAdmitted) until
// restoreFrom is set again.
func TestRestorePinnedThroughTheServer(t *testing.T) {
	ctx := context.Background()
	const ns = "restore-pin"
	clusters := shared.Client.ButlerV1alpha1().TenantClusters(ns)
	snaps := shared.Client.ButlerV1alpha1().TenantClusterSnapshots(ns)
	if _, err := clusters.Create(ctx, exampleCluster(t, ns, "src"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	takeReady := func() *v1alpha1.TenantClusterSnapshot {
		t.Helper()
		s, err := snaps.Create(ctx, &v1alpha1.TenantClusterSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "good"},
			Spec: v1alpha1.TenantClusterSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "src"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Status = v1alpha1.TenantClusterSnapshotStatus{Phase: v1alpha1.SnapshotReady, Revision: 7, Checksum: "sha256:" + strings.Repeat("0f", 32),
			Location: "/snapshots/x", KubernetesVersion: "v1.31.4"}
		if s, err = snaps.UpdateStatus(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	pinOf := func() string {
		t.Helper()
		tc, err := clusters.Get(ctx, "clone", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tc.Annotations[v1alpha1.RestorePinAnnotation]
	}
	first := takeReady()
	clone := exampleCluster(t, ns, "clone")
	clone.Spec.KubernetesVersion = "v1.31.4"
	clone.Spec.RestoreFrom = &v1alpha1.RestoreSource{Name: "good"}
	clone.Annotations = map[string]string{v1alpha1.RestorePinAnnotation: "src/forged"}
	if _, err := clusters.Create(ctx, clone, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := v1alpha1.RestorePin("src", string(first.UID))
	if got := pinOf(); got != want {
		t.Fatalf("pin after create %q, want %q (the snapshot admitted, not the client's)", got, want)
	}
	patch := []byte(`{"metadata":{"annotations":{"` + v1alpha1.RestorePinAnnotation + `":"src/forged"}}}`)
	if _, err := clusters.Patch(ctx, "clone", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := pinOf(); got != want {
		t.Errorf("pin after a client's patch %q, want %q kept", got, want)
	}

	// Deleted and taken again: another snapshot, not the one pinned.
	if err := snaps.Delete(ctx, "good", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := snaps.Patch(ctx, "good", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	second := takeReady()
	if got := pinOf(); got != want || got == v1alpha1.RestorePin("src", string(second.UID)) {
		t.Errorf("pin after the snapshot was made again %q, want the first's %q", got, want)
	}
	// Set again (removed, then set): pinned to the snapshot there now.
	for _, p := range []string{`{"spec":{"restoreFrom":null}}`, `{"spec":{"restoreFrom":{"name":"good","confirm":"clone"}}}`} {
		if _, err := clusters.Patch(ctx, "clone", types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := pinOf(), v1alpha1.RestorePin("src", string(second.UID)); got != want {
		t.Errorf("pin after restoreFrom set again %q, want %q", got, want)
	}
}
