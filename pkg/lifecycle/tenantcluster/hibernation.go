package tenantcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/steward"
	"github.com/butlerdotdev/butler-apiserver/pkg/hibernation"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/capi"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

const (
	stepWorkersAsleep         = "workers to zero"
	stepControlPlaneAsleep    = "control plane stopped"
	stepClusterPaused         = "cluster paused"
	stepControlPlaneUnstarted = "control plane readied, not started"

	// ConditionHibernated is True while the cluster sleeps: workers at zero, control plane
	// stopped, the CAPI Cluster paused, data kept.
	ConditionHibernated = "Hibernated"

	// tcpSleeping is Steward's and Kamaji's TenantControlPlane status at 0 replicas.
	tcpSleeping = steward.VersionStatusSleeping

	// scheduleLookBack bounds how far back a missed schedule time is still applied (the controller
	// was down); a weekly schedule fits.
	scheduleLookBack = 8 * 24 * time.Hour
)

// sleepSteps take a cluster down in order: the workers first (their machines drain through the
// tenant's API), then the control plane through its replicas (the Steward/Kamaji switch), then
// the CAPI Cluster is paused, so that Cluster API leaves the tenant's endpoint alone. Waking is
// the ordinary plan: it unpauses, starts the control plane, then scales the workers back.
func (c *Controller) sleepSteps() []stepT {
	return []stepT{
		{Name: stepProvider, Ensure: c.ensureProvider},
		{Name: stepWorkersAsleep, After: []string{stepProvider}, Ensure: c.ensureWorkersAsleep},
		{Name: stepControlPlaneAsleep, After: []string{stepWorkersAsleep}, Ensure: c.ensureControlPlaneAsleep},
		{Name: stepClusterPaused, After: []string{stepControlPlaneAsleep}, Ensure: c.ensureClusterPaused},
	}
}

// unstartedSteps make a cluster created hibernated with wake on request without ever starting
// its control plane: what the ordinary plan makes up to the infrastructure, then the control
// plane object at 0 replicas, which the provider readies without running (certificates, the
// admin kubeconfig Secret, the endpoint held by its listener), no workers' objects yet
// (ensureWorkersAsleep) and the Cluster paused. Its first real start is the first request to
// its endpoint, as any wake.
func (c *Controller) unstartedSteps() []stepT {
	var out []stepT
	for _, st := range c.steps() {
		if st.Name == stepControlPlane {
			break
		}
		out = append(out, stepT{Name: st.Name, Condition: st.Condition, After: st.After, Ensure: st.Ensure})
	}
	return append(out,
		stepT{Name: stepControlPlaneUnstarted, After: []string{stepNetwork}, Ensure: c.ensureControlPlaneUnstarted},
		stepT{Name: stepWorkersAsleep, After: []string{stepInfrastructure, stepControlPlaneUnstarted}, Ensure: c.ensureWorkersAsleep},
		stepT{Name: stepClusterPaused, After: []string{stepWorkersAsleep}, Ensure: c.ensureClusterPaused})
}

// asleepPlan is the plan of a cluster whose spec asks it to sleep; nil when it runs the
// ordinary plan first. A cluster whose control plane never served has no data, endpoint or
// kubeconfig to keep: with wake on request it is readied without starting (unstartedSteps);
// without, it is provisioned once and then put to sleep.
func (c *Controller) asleepPlan(tc *v1alpha1.TenantCluster) steps.Plan[*state] {
	switch {
	case !hibernation.Wanted(tc):
		return nil
	case servedOnce(tc):
		return c.sleepPlan
	case tc.Spec.Hibernation.WakeOnRequest:
		return c.unstartedPlan
	}
	return nil
}

// ensureWorkersAsleep scales the MachineDeployment to zero. The desired count stays in
// spec.workers.replicas (a scale while asleep changes only that) and comes back on wake.
// Without a MachineDeployment there is no worker to stop, and none is made: a cluster created
// asleep gets its workers (MachineDeployment, BootstrapConfigTemplate, Cluster API's
// MachineSet) from the ordinary plan on its first start, and costs the management cluster
// none of them, nor Cluster API's writes to them, while it has never run.
func (c *Controller) ensureWorkersAsleep(ctx context.Context, s *state) (steps.Result, error) {
	// Stopped workers would all look unhealthy: a sleeping cluster has no health check.
	if gone, err := c.removeAutoRepair(ctx, s); err != nil || !gone {
		return steps.Waiting("WorkersStopping", "removing the workers' MachineHealthCheck"), err
	}
	live, err := c.objects.get(ctx, external.MachineDeploymentGVK, s.namespace, component.WorkersName(s.in))
	if err != nil {
		return steps.Result{}, err
	}
	if live == nil {
		return steps.Ready("NoWorkers", "no MachineDeployment: no workers"), nil
	}
	got, failed, err := c.applyWorkers(ctx, s, ptrTo[int64](0))
	if failed != nil || err != nil {
		return deref(failed), err
	}
	md, err := external.FromUnstructured[clusterv1.MachineDeployment](got)
	if err != nil {
		return steps.Result{}, err
	}
	replicas := ptr.Deref(md.Status.Replicas, 0)
	if md.Status.ObservedGeneration < md.Generation || replicas > 0 {
		return steps.Waiting("WorkersStopping", "%d workers left (MachineDeployment %s/%s at 0)", replicas, got.GetNamespace(), got.GetName()), nil
	}
	return steps.Ready("WorkersAtZero", "no workers"), nil
}

// ensureControlPlaneAsleep sets the control plane object's replicas to 0 and waits for its
// TenantControlPlane to say Sleeping; what its provider can do is read on the way.
func (c *Controller) ensureControlPlaneAsleep(ctx context.Context, s *state) (steps.Result, error) {
	if s.tc.Spec.ControlPlane.Type == v1alpha1.ControlPlaneStandalone {
		return steps.Failure("NotSupported", "a standalone control plane runs on machines of its own and cannot hibernate"), nil
	}
	cp, failed, err := c.applyControlPlaneAsleep(ctx, s)
	if failed != nil || err != nil {
		return deref(failed), err
	}
	tcp, err := c.objects.get(ctx, tenantControlPlaneKind(cp), s.namespace, s.tc.Name)
	if err != nil || tcp == nil {
		return steps.Ready("NoControlPlane", "no TenantControlPlane runs"), err
	}
	typed, err := external.FromUnstructured[steward.TenantControlPlane](tcp)
	if err != nil {
		return steps.Result{}, err
	}
	s.readCapabilities(typed.Annotations)
	state := typed.Status.KubernetesResources.Version.Status
	if state != tcpSleeping {
		return steps.Waiting("ControlPlaneStopping", "TenantControlPlane %s/%s is %s, waiting for %s", s.namespace, s.tc.Name, orDefault(state, "unknown"), tcpSleeping), nil
	}
	return steps.Ready("ControlPlaneSleeping", "TenantControlPlane %s/%s is %s", s.namespace, s.tc.Name, tcpSleeping), nil
}

// applyControlPlaneAsleep applies the Cluster and the control plane object at 0 replicas. Once
// the sleep steps have paused the Cluster, every later run keeps it paused: applying it without
// spec.paused here and pausing it again in a later step would unpause it in between.
func (c *Controller) applyControlPlaneAsleep(ctx context.Context, s *state) (*unstructured.Unstructured, *steps.Result, error) {
	live, err := c.objects.get(ctx, external.ClusterGVK, s.namespace, s.tc.Name)
	if err != nil {
		return nil, nil, err
	}
	paused := false
	if live != nil {
		cluster, err := external.FromUnstructured[clusterv1.Cluster](live)
		if err != nil {
			return nil, nil, err
		}
		paused = ptr.Deref(cluster.Spec.Paused, false)
	}
	_, cp, failed, err := c.applyControlPlane(ctx, s, ptrTo[int64](0), paused)
	return cp, failed, err
}

// ensureControlPlaneUnstarted applies the control plane object at 0 replicas and waits for the
// provider to ready its TenantControlPlane without running it: Sleeping, with an endpoint and an
// admin kubeconfig Secret (only the local provider does so today, for wake on request).
func (c *Controller) ensureControlPlaneUnstarted(ctx context.Context, s *state) (steps.Result, error) {
	if s.tc.Spec.ControlPlane.Type == v1alpha1.ControlPlaneStandalone {
		return steps.Failure("NotSupported", "a standalone control plane runs on machines of its own and cannot hibernate"), nil
	}
	cp, failed, err := c.applyControlPlaneAsleep(ctx, s)
	if failed != nil || err != nil {
		return deref(failed), err
	}
	tcp, err := c.objects.get(ctx, tenantControlPlaneKind(cp), s.namespace, s.tc.Name)
	if err != nil || tcp == nil {
		return steps.Waiting("WaitingForTenantControlPlane", "waiting for the %s provider to create TenantControlPlane %s/%s",
			cp.GetKind(), s.namespace, s.tc.Name), err
	}
	typed, err := external.FromUnstructured[steward.TenantControlPlane](tcp)
	if err != nil {
		return steps.Result{}, err
	}
	s.readCapabilities(typed.Annotations)
	status := typed.Status
	state, endpoint, secret := status.KubernetesResources.Version.Status, status.ControlPlaneEndpoint, status.Kubeconfig.Admin.SecretName
	if state != tcpSleeping || endpoint == "" || secret == "" {
		return steps.Waiting("ControlPlaneReadying", "TenantControlPlane %s/%s is %s: waiting for its endpoint and admin kubeconfig, made without starting it",
			s.namespace, s.tc.Name, orDefault(state, "not reconciled yet")), nil
	}
	if ok, err := c.secretExists(ctx, s.namespace, secret); err != nil || !ok {
		return steps.Waiting("WaitingForKubeconfig", "waiting for the admin kubeconfig Secret %s/%s", s.namespace, secret), err
	}
	s.endpoint, s.kubeconfigSecret = endpoint, secret
	s.dataStore = ""
	if status.Storage != nil {
		s.dataStore = status.Storage.DataStoreName
	}
	return steps.Ready("ControlPlaneNotStarted", "TenantControlPlane %s/%s holds %s; it starts on the first request", s.namespace, s.tc.Name, endpoint), nil
}

// ensureClusterPaused sets the CAPI Cluster's spec.paused: Cluster API's controllers then leave
// the cluster (and its endpoint) alone until the wake unpauses it.
func (c *Controller) ensureClusterPaused(ctx context.Context, s *state) (steps.Result, error) {
	cluster, err := capi.Cluster(s.in)
	if err != nil {
		return steps.Failure("InvalidSpec", "%v", err), nil
	}
	if err := unstructured.SetNestedField(cluster.Object, true, "spec", "paused"); err != nil {
		return steps.Result{}, err
	}
	if _, failed, err := c.applyAll(ctx, cluster); failed != nil || err != nil {
		return deref(failed), err
	}
	return steps.Ready("ClusterPaused", "Cluster %s/%s is paused", s.namespace, s.tc.Name), nil
}

// reconcileAsleep runs the sleep steps and writes what they found.
func (c *Controller) reconcileAsleep(ctx context.Context, tc *v1alpha1.TenantCluster, plan steps.Plan[*state]) error {
	s := c.newState(tc)
	outcome, ensureErr := plan.Ensure(ctx, s, tc.Generation)
	status := c.sleepStatus(tc, plan, outcome, ensureErr)
	if s.kubeconfigSecret != "" { // readied without starting (unstartedSteps)
		status.TenantNamespace, status.ControlPlaneEndpoint, status.DataStoreName = s.namespace, s.endpoint, s.dataStore
		status.KubeconfigSecretRef = &v1alpha1.LocalObjectReference{Name: s.kubeconfigSecret}
	}
	if stored, err := c.writeStatus(ctx, tc, status); !stored || err != nil {
		return err
	}
	c.recordSleep(tc, status, ensureErr)
	// A snapshot of a sleeping cluster whose provider takes none is refused now, not on the wake.
	if err := c.refuseSnapshots(ctx, s); err != nil {
		return err
	}
	if c.secrets != nil && status.Phase == v1alpha1.TenantClusterHibernated && meta.IsStatusConditionTrue(status.Conditions, ConditionHibernated) {
		// Asleep, nothing waits on its Secrets: the wake's ordinary plan watches them again.
		c.secrets.Sleep(s.namespace)
	}
	return ensureErr
}

// sleepStatus: phase Hibernated and condition Hibernated True once every sleep step is done;
// until then the phase the cluster had and Hibernated False "Hibernating" with what it waits for.
// Ready, ControlPlaneReady and WorkersReady are False while the cluster sleeps: they are not.
func (c *Controller) sleepStatus(tc *v1alpha1.TenantCluster, plan steps.Plan[*state], out steps.Outcome, ensureErr error) *v1alpha1.TenantClusterStatus {
	st := tc.Status.DeepCopy()
	st.ObservedGeneration = tc.Generation
	hib := metav1.Condition{Type: ConditionHibernated, Status: metav1.ConditionFalse, Reason: "Hibernating", ObservedGeneration: tc.Generation}
	state, desc := "Processing", ""
	switch {
	case ensureErr != nil:
		hib.Message, state, desc = ensureErr.Error(), "Error", "hibernating: "+ensureErr.Error()
	case out.First != "":
		r := out.Results[out.First]
		hib.Message = fmt.Sprintf("%s: %s", out.First, r.Message)
		desc = "hibernating: " + hib.Message
		if out.Failed {
			hib.Reason, state = orDefault(r.Reason, "Failed"), "Failed"
		}
	default:
		hib.Status, hib.Reason = metav1.ConditionTrue, "Hibernated"
		hib.Message = "workers at zero, control plane stopped, Cluster paused; data kept"
		cpMessage := "the cluster is hibernated"
		if neverStarted(tc) {
			hib.Message = "created hibernated: its control plane has never started; the first request to its endpoint starts it"
			cpMessage = "the control plane has never started: the first request to its endpoint starts it"
		}
		state, desc = "Succeeded", "hibernated"
		st.Phase = v1alpha1.TenantClusterHibernated
		if st.ObservedState != nil {
			st.ObservedState.Workers = v1alpha1.WorkerCounts{Desired: tc.Spec.Workers.Replicas, Ready: 0}
		}
		asleep := func(t, message string) metav1.Condition {
			return metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: "Hibernated",
				Message: message, ObservedGeneration: tc.Generation}
		}
		steps.SetConditions(&st.Conditions, asleep(ConditionControlPlaneReady, cpMessage),
			asleep(ConditionWorkersReady, "the cluster is hibernated"), asleep(ConditionReady, "the cluster is hibernated"))
	}
	if out.Failed && st.Phase != v1alpha1.TenantClusterHibernated {
		st.Phase = v1alpha1.TenantClusterFailed
	}
	steps.SetConditions(&st.Conditions, hib)
	c.setLastOperation(st, "Hibernate", state, out.Progress(len(plan)), desc)
	return st
}

// neverStarted says the cluster's control plane has never served: no version observed.
func neverStarted(tc *v1alpha1.TenantCluster) bool {
	return tc.Status.ObservedState == nil || tc.Status.ObservedState.KubernetesVersion == ""
}

// wakeCondition is Hibernated False once a cluster that slept runs the ordinary plan: "Waking"
// until it is Ready, then "Awake".
func wakeCondition(tc *v1alpha1.TenantCluster, status *v1alpha1.TenantClusterStatus) {
	prev := meta.FindStatusCondition(tc.Status.Conditions, ConditionHibernated)
	if prev == nil {
		return
	}
	cond := metav1.Condition{Type: ConditionHibernated, Status: metav1.ConditionFalse, Reason: "Awake",
		Message: "the cluster is awake", ObservedGeneration: tc.Generation}
	if status.Phase != v1alpha1.TenantClusterReady {
		cond.Reason, cond.Message = "Waking", "control plane first, then workers"
		// Still asleep for the management side (hibernation.Asleep) until the control plane
		// serves: the phase stays Hibernated while the ordinary plan waits on it.
		if tc.Status.Phase == v1alpha1.TenantClusterHibernated && !meta.IsStatusConditionTrue(status.Conditions, ConditionControlPlaneReady) {
			status.Phase = v1alpha1.TenantClusterHibernated
		}
	}
	steps.SetConditions(&status.Conditions, cond)
}

// recordSleep makes Events of the sleep's progress: Hibernating as it starts, Hibernated once
// done. A cluster created asleep was never awake: its one Event is Hibernated (or a failure).
func (c *Controller) recordSleep(tc *v1alpha1.TenantCluster, status *v1alpha1.TenantClusterStatus, ensureErr error) {
	if ensureErr != nil {
		c.events.Eventf(tc, nil, corev1.EventTypeWarning, "ReconcileError", "Hibernate", "%s", controllerkit.EventNote(ensureErr.Error()+" (retried with backoff)"))
		return
	}
	prev := meta.FindStatusCondition(tc.Status.Conditions, ConditionHibernated)
	now := meta.FindStatusCondition(status.Conditions, ConditionHibernated)
	if now == nil || (prev != nil && prev.Reason == now.Reason && prev.Status == now.Status) {
		return
	}
	switch {
	case now.Status == metav1.ConditionTrue:
		c.events.Eventf(tc, nil, corev1.EventTypeNormal, "Hibernated", "Hibernate", "%s", now.Message)
	case now.Reason == "Hibernating":
		if !servedOnce(tc) {
			return
		}
		c.events.Eventf(tc, nil, corev1.EventTypeNormal, "Hibernating", "Hibernate", "%s", controllerkit.EventNote(now.Message))
	default:
		c.events.Eventf(tc, nil, corev1.EventTypeWarning, now.Reason, "Hibernate", "%s", controllerkit.EventNote(now.Message))
	}
}

// recordWake makes an Event when a cluster that slept starts waking, and when it is awake.
func (c *Controller) recordWake(tc *v1alpha1.TenantCluster, status *v1alpha1.TenantClusterStatus) {
	prev := meta.FindStatusCondition(tc.Status.Conditions, ConditionHibernated)
	now := meta.FindStatusCondition(status.Conditions, ConditionHibernated)
	if prev == nil || now == nil || prev.Reason == now.Reason {
		return
	}
	why := ""
	if by := tc.Annotations[hibernation.LastChangeAnnotation]; by != "" {
		why = " (" + by + ")"
	}
	c.events.Eventf(tc, nil, corev1.EventTypeNormal, now.Reason, "Wake", "%s%s", now.Message, controllerkit.EventNote(why))
}

// applySchedules writes the latest schedule time due since the last one applied into
// spec.hibernation.hibernated (with the time, in one update), and asks to be called again at the
// next one. It reports whether it wrote: the update brings the cluster back.
func (c *Controller) applySchedules(ctx context.Context, tc *v1alpha1.TenantCluster) (bool, error) {
	h := tc.Spec.Hibernation
	if h == nil || len(h.Schedules) == 0 {
		return false, nil
	}
	schedules := make([]hibernation.Schedule, 0, len(h.Schedules))
	for _, s := range h.Schedules {
		parsed, err := parseSchedule(s)
		if err != nil { // validation refuses these; an older stored object may still hold one
			klog.FromContext(ctx).Info("Ignoring a schedule that does not parse", "err", err)
			continue
		}
		schedules = append(schedules, parsed)
	}
	now := c.clock.Now()
	since := tc.CreationTimestamp.Time
	if t, err := time.Parse(time.RFC3339, tc.Annotations[hibernation.ScheduleAppliedAnnotation]); err == nil && t.After(since) {
		since = t
	}
	if since.Before(now.Add(-scheduleLookBack)) {
		since = now.Add(-scheduleLookBack)
	}
	if next := hibernation.Next(schedules, now); !next.IsZero() {
		c.queue.AddAfter(tc.Namespace+"/"+tc.Name, next.Sub(now)+time.Second)
	}
	due, ok := hibernation.Due(schedules, since, now)
	if !ok {
		return false, nil
	}
	updated := tc.DeepCopy()
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	updated.Annotations[hibernation.ScheduleAppliedAnnotation] = due.At.UTC().Format(time.RFC3339)
	if updated.Spec.Hibernation.Hibernated != due.Hibernate {
		word := "wake"
		if due.Hibernate {
			word = "sleep"
		}
		updated.Annotations[hibernation.LastChangeAnnotation] = fmt.Sprintf("schedule: %s at %s", word, due.At.Format(time.RFC3339))
	}
	updated.Spec.Hibernation.Hibernated = due.Hibernate
	_, err := c.butler.ButlerV1alpha1().TenantClusters(tc.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return true, nil
	}
	return err == nil, err
}

func parseSchedule(s v1alpha1.HibernationSchedule) (hibernation.Schedule, error) {
	var out hibernation.Schedule
	var err error
	if out.Location, err = hibernation.ParseLocation(s.Location); err != nil {
		return out, err
	}
	if s.Start != "" {
		if out.Start, err = hibernation.ParseCron(s.Start); err != nil {
			return out, err
		}
	}
	if s.End != "" {
		if out.End, err = hibernation.ParseCron(s.End); err != nil {
			return out, err
		}
	}
	return out, nil
}
