// Package maintenance is the controller of TenantClusters' maintenance windows: inside a cluster's
// window it moves spec.kubernetesVersion to the newest offered patch of its minor (automatic
// updates, or an expired version whatever they say), with the same update a user makes; the
// TenantCluster controller then rolls the control plane and the workers as for any version change.
// status.maintenance says what the last maintenance did and when the next window opens.
package maintenance

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	listers "github.com/butlerdotdev/butler-apiserver/pkg/generated/listers/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
	"github.com/butlerdotdev/butler-apiserver/pkg/maintenance"
)

// busyRecheck is how soon a cluster that is not ready for maintenance inside its window (an
// upgrade under way, not Ready yet) is looked at again.
const busyRecheck = time.Minute

// Controller runs TenantClusters' maintenance.
type Controller struct {
	butler   clientset.Interface
	clusters listers.TenantClusterLister
	teams    listers.TeamLister
	configs  listers.ButlerConfigLister
	runs     listers.UpdateRunLister
	events   events.EventRecorder
	clock    clock.PassiveClock
	queue    *controllerkit.Queue
	synced   []cache.InformerSynced
}

// New builds the controller on the shared informers: a cluster is looked at when it, its Team
// or ButlerConfig changes, and when its next window opens.
func New(d *controllerkit.Deps) (*Controller, error) {
	b := d.ButlerInformers.Butler().V1alpha1()
	c := &Controller{butler: d.Butler, clusters: b.TenantClusters().Lister(), teams: b.Teams().Lister(),
		configs: b.ButlerConfigs().Lister(), runs: b.UpdateRuns().Lister(), events: d.Recorder("butler-maintenance"), clock: d.Now()}
	c.queue = controllerkit.NewQueue("maintenance", c.reconcile)
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{b.TenantClusters().Informer(), c.queue.Handler(controllerkit.ByKey)},
		{b.Teams().Informer(), c.queue.Handler(c.clustersOfTeam)},
		{b.ButlerConfigs().Informer(), c.queue.Handler(c.allClusters)},
		{b.UpdateRuns().Informer(), c.queue.Handler(func(any) []string { return nil })},
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return nil, err
		}
		c.synced = append(c.synced, h.inf.HasSynced)
	}
	return c, nil
}

// Run works until ctx is done.
func (c *Controller) Run(ctx context.Context) { c.queue.Run(ctx, 2, c.synced...) }

func (c *Controller) allClusters(any) []string {
	all, _ := c.clusters.List(k8slabels.Everything())
	keys := make([]string, 0, len(all))
	for _, tc := range all {
		keys = append(keys, tc.Namespace+"/"+tc.Name)
	}
	return keys
}

func (c *Controller) clustersOfTeam(obj any) []string {
	team, ok := controllerkit.Unwrap(obj).(*v1alpha1.Team)
	if !ok {
		return nil
	}
	all, _ := c.clusters.List(k8slabels.Everything())
	var keys []string
	for _, tc := range all {
		if teamName(tc) == team.Name {
			keys = append(keys, tc.Namespace+"/"+tc.Name)
		}
	}
	return keys
}

// teamName is the Team a cluster belongs to: its teamRef, else its namespace's.
func teamName(tc *v1alpha1.TenantCluster) string {
	if tc.Spec.TeamRef != nil {
		return tc.Spec.TeamRef.Name
	}
	return tc.Namespace
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
	if tc.DeletionTimestamp != nil || tc.Annotations[external.TenantClusterPausedAnnotation] == "true" {
		return nil
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("tenantCluster", key))
	spec := c.effective(tc)
	window, ok := c.windowOf(ctx, spec)
	if !ok {
		return c.writeStatus(ctx, tc, nil, nil)
	}
	now := c.clock.Now()
	next := window.Next(now)
	var record *v1alpha1.MaintenanceRecord
	if start, open := window.OpenAt(now); open && !doneSince(tc, start) {
		rec, busy := c.maintain(ctx, tc, spec, now)
		if busy != "" {
			klog.FromContext(ctx).V(2).Info("Maintenance waits inside the window", "why", busy)
			c.queue.AddAfter(key, min(busyRecheck, window.End(start).Sub(now)))
		}
		record = rec
	}
	if err := c.writeStatus(ctx, tc, record, &next); err != nil {
		return err
	}
	// A second late: the window is then open, never just ahead of it.
	c.queue.AddAfter(key, next.Sub(now)+time.Second)
	return nil
}

// doneSince says whether a maintenance already ran in the opening that started at start: one
// maintenance per opening, so a refused update is not tried again and again.
func doneSince(tc *v1alpha1.TenantCluster, start time.Time) bool {
	m := tc.Status.Maintenance
	return m != nil && m.LastMaintenance != nil && !m.LastMaintenance.Time.Time.Before(start)
}

// maintain makes the cluster's version update, if any, and returns its record; busy says why it
// waits (the cluster is not settled), and the record is then nil.
func (c *Controller) maintain(ctx context.Context, tc *v1alpha1.TenantCluster, spec v1alpha1.MaintenanceSpec, now time.Time) (*v1alpha1.MaintenanceRecord, string) {
	auto := spec.AutoUpdate != nil && spec.AutoUpdate.KubernetesVersion
	update := maintenance.VersionUpdate(c.catalog(), tc.Spec.KubernetesVersion, auto, now)
	if update.Reason == "" {
		return nil, ""
	}
	record := &v1alpha1.MaintenanceRecord{Time: metav1.NewTime(now)}
	if update.Target == "" {
		record.Description = update.Reason
		c.events.Eventf(tc, nil, corev1.EventTypeWarning, "MaintenanceBlocked", "Maintain", "%s", controllerkit.EventNote(update.Reason))
		return record, ""
	}
	if busy := unsettled(tc); busy != "" {
		return nil, busy
	}
	if run := c.heldBy(tc); run != "" {
		return nil, "update run " + run + " is moving the cluster"
	}
	updated := tc.DeepCopy()
	updated.Spec.KubernetesVersion = update.Target
	_, err := c.butler.ButlerV1alpha1().TenantClusters(tc.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
	switch {
	case apierrors.IsConflict(err):
		return nil, "the cluster changed meanwhile"
	case err != nil:
		// Refused (a Team's allowed versions, its limits): said in status and an Event, tried
		// again in the next window.
		record.Description = fmt.Sprintf("updating %s to %s (%s) was refused: %v", tc.Spec.KubernetesVersion, update.Target, update.Reason, err)
		c.events.Eventf(tc, nil, corev1.EventTypeWarning, "MaintenanceFailed", "Maintain", "%s", controllerkit.EventNote(record.Description))
		return record, ""
	}
	record.Description = fmt.Sprintf("updated %s to %s (%s)", tc.Spec.KubernetesVersion, update.Target, update.Reason)
	klog.FromContext(ctx).Info("Maintenance updated the Kubernetes version", "from", tc.Spec.KubernetesVersion, "to", update.Target, "reason", update.Reason)
	c.events.Eventf(tc, nil, corev1.EventTypeNormal, "MaintenanceUpdate", "Maintain", "%s", controllerkit.EventNote(record.Description))
	return record, ""
}

// heldBy is the unfinished UpdateRun (namespace/name) whose claim the cluster carries: maintenance
// leaves such a cluster to it. A claim of a run deleted or finished holds nothing.
func (c *Controller) heldBy(tc *v1alpha1.TenantCluster) string {
	holder := tc.Annotations[v1alpha1.UpdateRunHeldAnnotation]
	if holder == "" {
		return ""
	}
	ns, name, _ := strings.Cut(holder, "/")
	run, err := c.runs.UpdateRuns(ns).Get(name)
	if err != nil {
		return ""
	}
	switch run.Status.Phase {
	case v1alpha1.UpdateRunSucceeded, v1alpha1.UpdateRunFailed, v1alpha1.UpdateRunAbandoned:
		return ""
	}
	return holder
}

// unsettled says why a cluster should not be moved now ("" when it may): a version change
// still rolling, or a cluster that has not been Ready at its version yet.
func unsettled(tc *v1alpha1.TenantCluster) string {
	observed := ""
	if tc.Status.ObservedState != nil {
		observed = tc.Status.ObservedState.KubernetesVersion
	}
	if observed != tc.Spec.KubernetesVersion {
		return fmt.Sprintf("the control plane runs %q, not yet %s", observed, tc.Spec.KubernetesVersion)
	}
	// A sleeping cluster is not upgraded: it waits for a window in which it is awake.
	if tc.Status.Phase != v1alpha1.TenantClusterReady {
		return fmt.Sprintf("the cluster is %s, not Ready", orDefault(string(tc.Status.Phase), "new"))
	}
	return ""
}

// effective is the cluster's maintenance: its own window and autoUpdate, each falling back to
// its Team's clusterDefaults, then to ButlerConfig's.
func (c *Controller) effective(tc *v1alpha1.TenantCluster) v1alpha1.MaintenanceSpec {
	var out v1alpha1.MaintenanceSpec
	layers := []*v1alpha1.MaintenanceSpec{tc.Spec.Maintenance}
	if team, err := c.teams.Get(teamName(tc)); err == nil && team.Spec.ClusterDefaults != nil {
		layers = append(layers, team.Spec.ClusterDefaults.Maintenance)
	}
	if config := c.config(); config != nil {
		layers = append(layers, config.Spec.Maintenance)
	}
	for _, l := range layers {
		if l == nil {
			continue
		}
		if out.Window == nil {
			out.Window = l.Window
		}
		if out.AutoUpdate == nil {
			out.AutoUpdate = l.AutoUpdate
		}
	}
	return out
}

func (c *Controller) windowOf(ctx context.Context, spec v1alpha1.MaintenanceSpec) (maintenance.Window, bool) {
	w := spec.Window
	if w == nil {
		return maintenance.Window{}, false
	}
	parsed, err := maintenance.ParseWindow(w.Days, w.Start, w.Duration.Duration, w.Location)
	if err != nil { // validation refuses these; an older stored object may still hold one
		klog.FromContext(ctx).Info("Ignoring a maintenance window that does not parse", "err", err)
		return maintenance.Window{}, false
	}
	return parsed, true
}

func (c *Controller) config() *v1alpha1.ButlerConfig {
	config, err := c.configs.Get(butler.ButlerConfigName)
	if err != nil {
		return nil
	}
	return config
}

// catalog is ButlerConfig's version catalog.
func (c *Controller) catalog() maintenance.Catalog {
	config := c.config()
	if config == nil {
		return nil
	}
	out := make(maintenance.Catalog, 0, len(config.Spec.KubernetesVersions))
	for _, v := range config.Spec.KubernetesVersions {
		out = append(out, maintenance.NewOffer(v.Version, v.ExpirationDate))
	}
	return out
}

// writeStatus stores status.maintenance: the record when there is a new one, the next window
// (none: no maintenance status at all).
func (c *Controller) writeStatus(ctx context.Context, tc *v1alpha1.TenantCluster, record *v1alpha1.MaintenanceRecord, next *time.Time) error {
	var want *v1alpha1.MaintenanceStatus
	if next != nil {
		want = &v1alpha1.MaintenanceStatus{}
		if tc.Status.Maintenance != nil {
			want.LastMaintenance = tc.Status.Maintenance.LastMaintenance
		}
		if record != nil {
			want.LastMaintenance = record
		}
		if !next.IsZero() {
			want.NextWindowStart = &metav1.Time{Time: *next}
		}
	}
	if apiequality.Semantic.DeepEqual(tc.Status.Maintenance, want) {
		return nil
	}
	// The cluster's current copy: a version update just made changed it, and the TenantCluster
	// controller writes status too.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := c.butler.ButlerV1alpha1().TenantClusters(tc.Namespace).Get(ctx, tc.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Status.Maintenance = want
		_, err = c.butler.ButlerV1alpha1().TenantClusters(tc.Namespace).UpdateStatus(ctx, current, metav1.UpdateOptions{})
		return err
	})
	return client404(err)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func client404(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
