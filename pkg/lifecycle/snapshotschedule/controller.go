// Package snapshotschedule drives a TenantCluster's spec.snapshots: it creates a
// TenantClusterSnapshot at each firing of each schedule (named for the firing, so a restarted
// controller never takes one twice) and deletes a schedule's snapshots that retention lets go (their
// data goes with them through the snapshot's finalizer). Whoever takes snapshots (the local
// provider) takes these as any other. Deleting the cluster's scheduled snapshots with the cluster
// (onClusterDelete: Delete) is the tenantcluster controller's deletion, which holds the cluster
// until it has run.
package snapshotschedule

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	listers "github.com/butlerdotdev/butler-apiserver/pkg/generated/listers/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
)

// restoreRecheck is how often a cluster being restored is looked at again besides its changes.
const restoreRecheck = time.Minute

// Controller takes scheduled snapshots and applies retention.
type Controller struct {
	butler   clientset.Interface
	clusters listers.TenantClusterLister
	snaps    listers.TenantClusterSnapshotLister
	events   events.EventRecorder
	queue    *controllerkit.Queue
	synced   []cache.InformerSynced
	clock    clock.PassiveClock
}

// New builds the controller on the shared informers: a cluster is looked at when it changes,
// when one of its snapshots does (retention counts Ready ones), and at its next firing.
func New(d *controllerkit.Deps) (*Controller, error) {
	b := d.ButlerInformers.Butler().V1alpha1()
	c := &Controller{butler: d.Butler, clusters: b.TenantClusters().Lister(), snaps: b.TenantClusterSnapshots().Lister(),
		events: d.Recorder("butler-snapshotschedule"), clock: d.Now()}
	c.queue = controllerkit.NewQueue("snapshotschedule", c.reconcile)
	if _, err := b.TenantClusters().Informer().AddEventHandler(c.queue.Handler(controllerkit.ByKey)); err != nil {
		return nil, err
	}
	if _, err := b.TenantClusterSnapshots().Informer().AddEventHandler(c.queue.Handler(clusterOfSnapshot)); err != nil {
		return nil, err
	}
	c.synced = []cache.InformerSynced{b.TenantClusters().Informer().HasSynced, b.TenantClusterSnapshots().Informer().HasSynced}
	return c, nil
}

// Run works until ctx is done.
func (c *Controller) Run(ctx context.Context) { c.queue.Run(ctx, 2, c.synced...) }

// clusterOfSnapshot keys a scheduled snapshot by its cluster; others concern no schedule.
func clusterOfSnapshot(obj any) []string {
	s, ok := controllerkit.Unwrap(obj).(*v1alpha1.TenantClusterSnapshot)
	if !ok || s.Labels[v1alpha1.SnapshotScheduleLabel] == "" {
		return nil
	}
	return []string{s.Namespace + "/" + s.Labels[v1alpha1.SnapshotClusterLabel]}
}

func (c *Controller) reconcile(ctx context.Context, key string) error {
	ns, name, _ := strings.Cut(key, "/")
	tc, err := c.clusters.TenantClusters(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if tc.DeletionTimestamp != nil || (tc.Spec.Snapshots == nil && tc.Annotations[v1alpha1.SnapshotSchedulesAnnotation] == "") {
		return nil
	}
	logger := klog.FromContext(ctx).WithValues("tenantCluster", key)
	ctx = klog.NewContext(ctx, logger)
	if tc.RestorePending() {
		// Its data is being replaced: a snapshot now would hold part of it, and retention might
		// delete the snapshot being restored. The firings wait (the latest is taken after);
		// the restore's end changes the cluster and brings it back here.
		logger.V(2).Info("Waiting for the cluster's restore before its scheduled snapshots", "restoreFrom", tc.Spec.RestoreFrom.Name)
		return controllerkit.RequeueAfter(restoreRecheck)
	}
	schedules := c.schedulesOf(ctx, tc)
	now := c.clock.Now()
	p := planFirings(schedules, readHandled(tc.Annotations[v1alpha1.SnapshotSchedulesAnnotation]), now)
	for _, f := range p.take {
		if err := c.take(ctx, tc, f); err != nil {
			return err
		}
	}
	if p.changed {
		if err := c.recordHandled(ctx, tc, p.handled); err != nil {
			return err
		}
	}
	for _, s := range schedules {
		if err := c.retain(ctx, tc, s); err != nil {
			return err
		}
	}
	if !p.next.IsZero() {
		// A second late: the firing is then in the past, never just ahead of it.
		c.queue.AddAfter(key, p.next.Sub(now)+time.Second)
	}
	return nil
}

func (c *Controller) schedulesOf(ctx context.Context, tc *v1alpha1.TenantCluster) []schedule {
	if tc.Spec.Snapshots == nil {
		return nil
	}
	var out []schedule
	for _, s := range tc.Spec.Snapshots.Schedules {
		parsed, err := parseSchedule(s)
		if err != nil { // validation refuses these; an older stored object may still hold one
			klog.FromContext(ctx).Info("Ignoring a snapshot schedule that does not parse", "schedule", s.Name, "err", err)
			continue
		}
		out = append(out, parsed)
	}
	return out
}

// scheduled lists the cluster's snapshots that one schedule took.
func (c *Controller) scheduled(tc *v1alpha1.TenantCluster, schedule string) ([]*v1alpha1.TenantClusterSnapshot, error) {
	return c.snaps.TenantClusterSnapshots(tc.Namespace).List(labels.SelectorFromSet(labels.Set{
		v1alpha1.SnapshotClusterLabel: tc.Name, v1alpha1.SnapshotScheduleLabel: schedule}))
}

// take creates a firing's snapshot, unless the schedule's previous one is not finished yet (a
// cluster that cannot be snapshotted piles up one waiting snapshot per schedule, not one per
// firing). One that exists already is this firing's, created before a restart.
func (c *Controller) take(ctx context.Context, tc *v1alpha1.TenantCluster, f firing) error {
	logger := klog.FromContext(ctx)
	name := snapshotName(tc.Name, f)
	existing, err := c.scheduled(tc, f.schedule)
	if err != nil {
		return err
	}
	for _, s := range existing {
		if s.Name != name && unfinished(s) {
			logger.Info("Skipping a scheduled snapshot: the schedule's previous one is not finished", "schedule", f.schedule, "previous", s.Name)
			c.events.Eventf(tc, nil, corev1.EventTypeWarning, "SnapshotSkipped", "Snapshot",
				"schedule %s at %s: snapshot %s is still %s", f.schedule, f.at.UTC().Format(time.RFC3339), s.Name, phaseOf(s))
			return nil
		}
	}
	snap := &v1alpha1.TenantClusterSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tc.Namespace, Labels: map[string]string{
			v1alpha1.SnapshotClusterLabel: tc.Name, v1alpha1.SnapshotScheduleLabel: f.schedule}},
		Spec: v1alpha1.TenantClusterSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: tc.Name}},
	}
	_, err = c.butler.ButlerV1alpha1().TenantClusterSnapshots(tc.Namespace).Create(ctx, snap, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if apierrors.IsForbidden(err) {
		// Refused (a 403 of an admission policy): this firing is skipped; retrying would not change it.
		logger.Info("Scheduled snapshot refused", "schedule", f.schedule, "err", err.Error())
		c.events.Eventf(tc, nil, corev1.EventTypeWarning, "SnapshotRefused", "Snapshot", "schedule %s at %s: %v",
			f.schedule, f.at.UTC().Format(time.RFC3339), err)
		return nil
	}
	if err != nil {
		return err
	}
	logger.Info("Scheduled snapshot created", "snapshot", name, "schedule", f.schedule, "firing", f.at.UTC())
	c.events.Eventf(tc, nil, corev1.EventTypeNormal, "SnapshotScheduled", "Snapshot", "schedule %s at %s: snapshot %s",
		f.schedule, f.at.UTC().Format(time.RFC3339), name)
	return nil
}

// recordHandled writes the last firing handled per schedule into the cluster's annotation (a
// merge patch of that annotation only).
func (c *Controller) recordHandled(ctx context.Context, tc *v1alpha1.TenantCluster, handled map[string]time.Time) error {
	var value any = writeHandled(handled)
	if len(handled) == 0 {
		value = nil // no schedules left: the annotation goes
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		v1alpha1.SnapshotSchedulesAnnotation: value}}})
	_, err := c.butler.ButlerV1alpha1().TenantClusters(tc.Namespace).Patch(ctx, tc.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// retain deletes the schedule's snapshots that retention lets go.
func (c *Controller) retain(ctx context.Context, tc *v1alpha1.TenantCluster, s schedule) error {
	snaps, err := c.scheduled(tc, s.name)
	if err != nil {
		return err
	}
	for _, old := range expired(snaps, s.keep) {
		err := c.butler.ButlerV1alpha1().TenantClusterSnapshots(tc.Namespace).Delete(ctx, old.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &old.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return err
		}
		klog.FromContext(ctx).Info("Scheduled snapshot deleted by retention", "snapshot", old.Name, "schedule", s.name, "keep", s.keep)
		c.events.Eventf(tc, nil, corev1.EventTypeNormal, "SnapshotExpired", "Retention", "schedule %s keeps %d: snapshot %s deleted",
			s.name, s.keep, old.Name)
	}
	return nil
}

func phaseOf(s *v1alpha1.TenantClusterSnapshot) v1alpha1.SnapshotPhase {
	if s.Status.Phase == "" {
		return v1alpha1.SnapshotPending
	}
	return s.Status.Phase
}
