package tenantcluster

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
)

// deleteScheduledSnapshots deletes the snapshots the cluster's schedules took when its
// spec.snapshots.onClusterDelete says Delete; their data goes through each snapshot's finalizer.
// Snapshots created by hand, and every snapshot under Retain (the default), outlive the cluster.
// It runs before the plan's cleanup, while the finalizer still holds the cluster and its spec.
func (c *Controller) deleteScheduledSnapshots(ctx context.Context, tc *v1alpha1.TenantCluster) error {
	if tc.Spec.Snapshots == nil || tc.Spec.Snapshots.OnClusterDelete != v1alpha1.SnapshotsDelete {
		return nil
	}
	scheduled, err := k8slabels.NewRequirement(v1alpha1.SnapshotScheduleLabel, selection.Exists, nil)
	if err != nil {
		return err
	}
	selector := k8slabels.SelectorFromSet(k8slabels.Set{v1alpha1.SnapshotClusterLabel: tc.Name}).Add(*scheduled)
	snaps := c.butler.ButlerV1alpha1().TenantClusterSnapshots(tc.Namespace)
	list, err := snaps.List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return err
	}
	for _, s := range list.Items {
		if s.DeletionTimestamp != nil {
			continue
		}
		if err := snaps.Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		klog.FromContext(ctx).Info("Scheduled snapshot deleted with its cluster (onClusterDelete: Delete)", "snapshot", s.Name)
	}
	return nil
}

// untaken says whether a snapshot still waits for someone to take it.
func untaken(s *v1alpha1.TenantClusterSnapshot) bool {
	return s.DeletionTimestamp == nil && (s.Status.Phase == "" || s.Status.Phase == v1alpha1.SnapshotPending)
}

// snapshotToTake keys a snapshot not taken yet by its cluster, whose provider may not take it.
func snapshotToTake(obj any) []string {
	s, ok := controllerkit.Unwrap(obj).(*v1alpha1.TenantClusterSnapshot)
	if !ok || !untaken(s) || s.Spec.ClusterRef.Name == "" {
		return nil
	}
	return []string{s.Namespace + "/" + s.Spec.ClusterRef.Name}
}

// refuseSnapshots fails the cluster's snapshots not taken yet when the provider of its
// TenantControlPlane takes none (a real Steward or Kamaji: their contracts cannot read one
// tenant's data), as a schedule makes ProviderCapable False: nothing would take them, and a user
// would wait on a snapshot for ever. Only once the TenantControlPlane is read (capable set);
// one-off and scheduled snapshots alike.
func (c *Controller) refuseSnapshots(ctx context.Context, s *state) error {
	if s.capable == nil || s.offersSnapshots || c.snaps == nil {
		return nil
	}
	list, err := c.snaps.TenantClusterSnapshots(s.tc.Namespace).List(k8slabels.SelectorFromSet(k8slabels.Set{v1alpha1.SnapshotClusterLabel: s.tc.Name}))
	if err != nil {
		return err
	}
	provider := component.ControlPlaneProvider(s.in.Config)
	for _, snap := range list {
		if !untaken(snap) || snap.Spec.ClusterRef.Name != s.tc.Name {
			continue
		}
		failed := snap.DeepCopy()
		failed.Status.Phase = v1alpha1.SnapshotFailed
		failed.Status.Message = fmt.Sprintf("control plane provider %s cannot: %s (TenantClusterSnapshot of TenantCluster %s): its contract has no way to read one tenant's data, so nothing would take it",
			provider, external.CapabilitySnapshots, s.tc.Name)
		stored, err := c.butler.ButlerV1alpha1().TenantClusterSnapshots(snap.Namespace).UpdateStatus(ctx, failed, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err == nil {
			err = c.releaseSnapshot(ctx, stored)
		}
		if err != nil {
			return err
		}
		klog.FromContext(ctx).Info("Snapshot refused: the control plane provider takes none", "snapshot", snap.Name, "provider", provider)
		if c.events != nil {
			c.events.Eventf(failed, nil, corev1.EventTypeWarning, "SnapshotUnsupported", "Refuse", "%s", failed.Status.Message)
		}
	}
	return nil
}

// releaseSnapshot lets a refused snapshot be deleted: it holds no data for its finalizer to
// delete, and without the stand-in nothing would ever remove it.
func (c *Controller) releaseSnapshot(ctx context.Context, snap *v1alpha1.TenantClusterSnapshot) error {
	if !slices.Contains(snap.Finalizers, v1alpha1.SnapshotDataFinalizer) {
		return nil
	}
	released := snap.DeepCopy()
	released.Finalizers = slices.DeleteFunc(released.Finalizers, func(f string) bool { return f == v1alpha1.SnapshotDataFinalizer })
	_, err := c.butler.ButlerV1alpha1().TenantClusterSnapshots(snap.Namespace).Update(ctx, released, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
