package tenantcluster

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
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
