package integration

import (
	"context"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
