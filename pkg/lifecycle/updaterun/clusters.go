package updaterun

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// Rechecks while something is under way that sends no event when it changes (time passing).
const (
	moveRecheck   = 30 * time.Second
	notReadyRetry = 30 * time.Second
)

// followClusters moves on every cluster in flight, in every stage: a snapshot that became Ready
// lets its cluster move; a moved cluster passes or fails its stage's gate.
func (c *Controller) followClusters(ctx context.Context, p *pass) error {
	for i := range p.run.Status.Stages {
		st, spec := &p.run.Status.Stages[i], p.run.Status.Strategy.Stages[i]
		for j := range st.Clusters {
			entry := &st.Clusters[j]
			if entry.Phase != v1alpha1.ClusterUpdateSnapshotting && entry.Phase != v1alpha1.ClusterUpdateUpgrading {
				continue
			}
			if err := c.followCluster(ctx, p, entry, spec.HealthGate); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Controller) followCluster(ctx context.Context, p *pass, entry *v1alpha1.ClusterUpdateStatus, gate *v1alpha1.HealthGate) error {
	tc, err := c.cluster(entry.Name)
	if err != nil {
		return err
	}
	if tc == nil {
		c.fail(ctx, p, entry, nil, "the cluster was deleted")
		return nil
	}
	if entry.Phase == v1alpha1.ClusterUpdateSnapshotting {
		return c.followSnapshot(ctx, p, entry, tc)
	}
	passed, why := c.gate(p, entry, tc, gate)
	switch {
	case passed:
		entry.Phase, entry.CompletionTime, entry.Message = v1alpha1.ClusterUpdateSucceeded, &metav1.Time{Time: p.now}, ""
		p.event(corev1.EventTypeNormal, "ClusterUpgraded", entry.Name+" reached "+p.run.Spec.Target.KubernetesVersion+" and passed the gate")
		return c.release(ctx, tc, p.key)
	case why != "":
		c.fail(ctx, p, entry, tc, why)
	}
	return nil
}

// followSnapshot moves the cluster once its pre-upgrade snapshot is Ready.
func (c *Controller) followSnapshot(ctx context.Context, p *pass, entry *v1alpha1.ClusterUpdateStatus, tc *v1alpha1.TenantCluster) error {
	snap, err := c.snapshots.TenantClusterSnapshots(tc.Namespace).Get(entry.Snapshot)
	switch {
	case apierrors.IsNotFound(err):
		entry.Message = "waiting for snapshot " + entry.Snapshot
		return nil
	case err != nil:
		return err
	case snap.Status.Phase == v1alpha1.SnapshotFailed:
		c.fail(ctx, p, entry, tc, fmt.Sprintf("the pre-upgrade snapshot %s failed: %s", entry.Snapshot, snap.Status.Message))
		return nil
	case snap.Status.Phase != v1alpha1.SnapshotReady:
		entry.Message = "waiting for snapshot " + entry.Snapshot + " to be Ready"
		if c.timedOut(p, entry, nil) {
			c.fail(ctx, p, entry, tc, "the pre-upgrade snapshot "+entry.Snapshot+" was not Ready in time")
		}
		return nil
	}
	return c.move(ctx, p, entry, tc)
}

// gate says whether a moved cluster passed its stage's health gate, or why it failed ("" while
// it may still pass): at the target, Ready, the gate's conditions True for this generation,
// unbroken for holdFor, within the gate's timeout.
func (c *Controller) gate(p *pass, entry *v1alpha1.ClusterUpdateStatus, tc *v1alpha1.TenantCluster, gate *v1alpha1.HealthGate) (bool, string) {
	if tc.Status.Phase == v1alpha1.TenantClusterFailed {
		return false, "the cluster is Failed: " + conditionMessage(tc, "Ready")
	}
	unhealthy := c.unhealthy(tc, p.run.Spec.Target.KubernetesVersion, gate)
	if unhealthy != "" {
		entry.HealthySince, entry.Message = nil, unhealthy
		if c.timedOut(p, entry, gate) {
			return false, fmt.Sprintf("did not pass the gate within %s: %s", gateTimeout(gate), unhealthy)
		}
		p.recheck(moveRecheck)
		return false, ""
	}
	if entry.HealthySince == nil {
		entry.HealthySince = &metav1.Time{Time: p.now}
	}
	var holdFor time.Duration
	if gate != nil {
		holdFor = gate.HoldFor.Duration
	}
	if held := p.now.Sub(entry.HealthySince.Time); held < holdFor {
		entry.Message = fmt.Sprintf("healthy; holding for %s more", (holdFor - held).Round(time.Second))
		p.recheck(holdFor - held)
		return false, ""
	}
	return true, ""
}

// unhealthy says what keeps a cluster from the gate ("" when nothing does).
func (c *Controller) unhealthy(tc *v1alpha1.TenantCluster, target string, gate *v1alpha1.HealthGate) string {
	observed := ""
	if tc.Status.ObservedState != nil {
		observed = tc.Status.ObservedState.KubernetesVersion
	}
	switch {
	case tc.Spec.KubernetesVersion != target:
		return fmt.Sprintf("spec.kubernetesVersion is %s, not the target", tc.Spec.KubernetesVersion)
	case tc.Status.ObservedGeneration < tc.Generation:
		return "the TenantCluster worker has not seen the change yet"
	case observed != target:
		return fmt.Sprintf("the control plane runs %q, not yet %s", observed, target)
	case tc.Status.Phase != v1alpha1.TenantClusterReady:
		return fmt.Sprintf("the cluster is %s, not Ready", tc.Status.Phase)
	}
	conditions := []string{"Ready"}
	if gate != nil && len(gate.Conditions) > 0 {
		conditions = gate.Conditions
	}
	for _, t := range conditions {
		cond := meta.FindStatusCondition(tc.Status.Conditions, t)
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration < tc.Generation {
			return fmt.Sprintf("condition %s is not True: %s", t, conditionMessage(tc, t))
		}
	}
	return ""
}

func conditionMessage(tc *v1alpha1.TenantCluster, t string) string {
	if cond := meta.FindStatusCondition(tc.Status.Conditions, t); cond != nil {
		return cond.Reason + ": " + cond.Message
	}
	return "not reported"
}

func gateTimeout(gate *v1alpha1.HealthGate) time.Duration {
	if gate != nil && gate.Timeout.Duration > 0 {
		return gate.Timeout.Duration
	}
	return defaultGateTimeout
}

// timedOut says whether the cluster has been at it longer than the gate's timeout since it
// started (snapshot included).
func (c *Controller) timedOut(p *pass, entry *v1alpha1.ClusterUpdateStatus, gate *v1alpha1.HealthGate) bool {
	if entry.StartTime == nil {
		return false
	}
	left := gateTimeout(gate) - p.now.Sub(entry.StartTime.Time)
	p.recheck(min(left, moveRecheck))
	return left < 0
}

// fail marks a cluster failed in the run, says why, and frees it for other runs and maintenance.
func (c *Controller) fail(ctx context.Context, p *pass, entry *v1alpha1.ClusterUpdateStatus, tc *v1alpha1.TenantCluster, why string) {
	entry.Phase, entry.Message, entry.CompletionTime = v1alpha1.ClusterUpdateFailed, why, &metav1.Time{Time: p.now}
	p.event(corev1.EventTypeWarning, "ClusterFailed", entry.Name+": "+why)
	if tc != nil {
		p.clusterEvent(tc, corev1.EventTypeWarning, "UpdateRunFailed", "update run "+p.key+": "+why)
		if err := c.release(ctx, tc, p.key); err != nil {
			klog.FromContext(ctx).Error(err, "Releasing a failed cluster", "tenantCluster", entry.Name)
		}
	}
}

// startClusters starts the stage's pending clusters, in order, while fewer than its
// maxConcurrency are in flight. A cluster another run holds, or one not Ready, is passed over
// for now and looked at again.
func (c *Controller) startClusters(ctx context.Context, p *pass, st *v1alpha1.StageStatus, spec v1alpha1.UpdateStage) error {
	limit := maxConcurrency(spec, len(st.Clusters))
	moving := count(st, v1alpha1.ClusterUpdateSnapshotting, v1alpha1.ClusterUpdateUpgrading)
	for j := range st.Clusters {
		entry := &st.Clusters[j]
		if moving >= limit {
			break
		}
		if entry.Phase != v1alpha1.ClusterUpdatePending && entry.Phase != v1alpha1.ClusterUpdateHeld {
			continue
		}
		started, err := c.start(ctx, p, entry)
		if err != nil {
			return err
		}
		if started {
			moving++
		}
	}
	return nil
}

// maxConcurrency is the stage's limit for a stage of n clusters: a number, or a percentage
// rounded down, never below 1.
func maxConcurrency(spec v1alpha1.UpdateStage, n int) int {
	limit := 1
	if spec.MaxConcurrency != nil {
		if v, err := intstr.GetScaledValueFromIntOrPercent(spec.MaxConcurrency, n, false); err == nil {
			limit = v
		}
	}
	return max(limit, 1)
}

func count(st *v1alpha1.StageStatus, phases ...v1alpha1.ClusterUpdatePhase) int {
	n := 0
	for _, e := range st.Clusters {
		for _, ph := range phases {
			if e.Phase == ph {
				n++
			}
		}
	}
	return n
}

// start takes one cluster: claimed by no other run, Ready; then its snapshot, or its move.
func (c *Controller) start(ctx context.Context, p *pass, entry *v1alpha1.ClusterUpdateStatus) (bool, error) {
	tc, err := c.cluster(entry.Name)
	if err != nil || tc == nil {
		if tc == nil && err == nil {
			entry.Phase, entry.Message = v1alpha1.ClusterUpdateSkipped, "the cluster was deleted before its turn"
		}
		return false, err
	}
	if holder := c.heldBy(tc, p.key); holder != "" {
		if entry.Phase != v1alpha1.ClusterUpdateHeld {
			p.event(corev1.EventTypeNormal, "ClusterHeld", entry.Name+" is being moved by update run "+holder+"; this run waits for it")
		}
		entry.Phase, entry.Message = v1alpha1.ClusterUpdateHeld, "held by update run "+holder+"; waits for it"
		p.recheck(moveRecheck)
		return false, nil
	}
	if tc.Spec.KubernetesVersion != p.run.Spec.Target.KubernetesVersion && tc.Status.Phase != v1alpha1.TenantClusterReady {
		entry.Phase, entry.Message = v1alpha1.ClusterUpdatePending, fmt.Sprintf("waits: the cluster is %s, not Ready", orNew(tc.Status.Phase))
		p.recheck(notReadyRetry)
		return false, nil
	}
	entry.StartTime = &metav1.Time{Time: p.now}
	if tc.Spec.KubernetesVersion == p.run.Spec.Target.KubernetesVersion {
		// Moved already, by this run's pass whose status write was lost (a pass with a snapshot
		// stored Snapshotting before it moved) or by hand: the plan's from-version stays.
		return true, c.move(ctx, p, entry, tc)
	}
	entry.FromVersion = tc.Spec.KubernetesVersion
	if p.run.Spec.SnapshotBeforeUpgrade {
		return true, c.snapshot(ctx, p, entry, tc)
	}
	return true, c.move(ctx, p, entry, tc)
}

func orNew(phase v1alpha1.TenantClusterPhase) string {
	if phase == "" {
		return "new"
	}
	return string(phase)
}

// heldBy is the other unfinished run that holds the cluster ("" when none does, or this one).
func (c *Controller) heldBy(tc *v1alpha1.TenantCluster, self string) string {
	holder := tc.Annotations[v1alpha1.UpdateRunHeldAnnotation]
	if holder == "" || holder == self {
		return ""
	}
	ns, name, _ := cutKey(holder)
	other, err := c.runs.UpdateRuns(ns).Get(name)
	if err != nil || finished(other.Status.Phase) {
		return "" // a stale claim: its run is gone or done
	}
	return holder
}

// snapshot asks for the cluster's pre-upgrade snapshot; the cluster moves once it is Ready.
func (c *Controller) snapshot(ctx context.Context, p *pass, entry *v1alpha1.ClusterUpdateStatus, tc *v1alpha1.TenantCluster) error {
	name := snapshotName(p.run, tc)
	snap := &v1alpha1.TenantClusterSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tc.Namespace,
			Annotations: map[string]string{v1alpha1.UpdateRunHeldAnnotation: p.key}},
		Spec: v1alpha1.TenantClusterSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: tc.Name}},
	}
	_, err := c.butler.ButlerV1alpha1().TenantClusterSnapshots(tc.Namespace).Create(ctx, snap, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
	case err != nil && (apierrors.IsForbidden(err) || apierrors.IsInvalid(err)):
		c.fail(ctx, p, entry, tc, "the pre-upgrade snapshot was refused: "+err.Error())
		return nil
	case err != nil:
		return err
	default:
		p.event(corev1.EventTypeNormal, "Snapshotting", "snapshot "+name+" of "+entry.Name+" before it moves")
	}
	entry.Phase, entry.Snapshot, entry.Message = v1alpha1.ClusterUpdateSnapshotting, name, "waiting for snapshot "+name
	return nil
}

// snapshotName is <cluster>-<run>, cut to fit a name.
func snapshotName(run *v1alpha1.UpdateRun, tc *v1alpha1.TenantCluster) string {
	name := tc.Name + "-" + run.Name
	if len(name) > 253 {
		name = name[:253]
	}
	return name
}

// move writes the target version and the run's claim in one update, as a user's version change:
// admission (the catalog, the Team's versions, the one-minor rule) applies; a refusal fails
// the cluster with the reason.
func (c *Controller) move(ctx context.Context, p *pass, entry *v1alpha1.ClusterUpdateStatus, tc *v1alpha1.TenantCluster) error {
	target := p.run.Spec.Target.KubernetesVersion
	updated := tc.DeepCopy()
	updated.Spec.KubernetesVersion = target
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	updated.Annotations[v1alpha1.UpdateRunHeldAnnotation] = p.key
	_, err := c.butler.ButlerV1alpha1().TenantClusters(tc.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
	switch {
	case apierrors.IsConflict(err):
		p.recheck(time.Second) // the cache was behind; try again with the cluster as it is
		entry.Message = "the cluster changed meanwhile; trying again"
		return nil
	case err != nil && (apierrors.IsForbidden(err) || apierrors.IsInvalid(err)):
		c.fail(ctx, p, entry, tc, fmt.Sprintf("updating %s to %s was refused: %v", tc.Spec.KubernetesVersion, target, err))
		return nil
	case err != nil:
		return err
	}
	entry.Phase, entry.Message = v1alpha1.ClusterUpdateUpgrading, "moving to "+target
	msg := fmt.Sprintf("%s: %s to %s", entry.Name, tc.Spec.KubernetesVersion, target)
	p.event(corev1.EventTypeNormal, "ClusterUpgrading", msg)
	p.clusterEvent(tc, corev1.EventTypeNormal, "UpdateRunUpgrading", "update run "+p.key+" moves "+msg)
	p.recheck(moveRecheck)
	return nil
}

// release removes the run's claim from the cluster (nothing when another holds it).
func (c *Controller) release(ctx context.Context, tc *v1alpha1.TenantCluster, self string) error {
	if tc.Annotations[v1alpha1.UpdateRunHeldAnnotation] != self {
		return nil
	}
	patch := []byte(`{"metadata":{"annotations":{"` + v1alpha1.UpdateRunHeldAnnotation + `":null}}}`)
	_, err := c.butler.ButlerV1alpha1().TenantClusters(tc.Namespace).Patch(ctx, tc.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// cluster reads namespace/name from the cache; nil when it does not exist.
func (c *Controller) cluster(key string) (*v1alpha1.TenantCluster, error) {
	ns, name, _ := cutKey(key)
	tc, err := c.clusters.TenantClusters(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return tc, err
}
