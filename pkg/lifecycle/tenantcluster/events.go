package tenantcluster

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// Event reasons of a step's transition, by the state it moved to: <condition stem><word>, e.g.
// ControlPlaneWaiting, ControlPlaneReady, WorkersFailed.
var stateWords = map[steps.State]string{steps.StateWaiting: "Waiting", steps.StateDone: "Ready", steps.StateFailed: "Failed"}

// recordReconcile makes an Event of every step whose state moved in this run (steps.Transitions),
// of a phase change, and of an error the run stopped at. A step that stays where it was makes
// none, nor does a wait that moves from one reason to the next (its condition says which), so a
// cluster's Events are its story, not its polling.
func (c *Controller) recordReconcile(tc *v1alpha1.TenantCluster, out steps.Outcome, ensureErr error, status *v1alpha1.TenantClusterStatus) {
	for _, t := range c.plan.Transitions(tc.Status.Conditions, tc.Status.Phase == v1alpha1.TenantClusterFailed, out) {
		eventType := corev1.EventTypeNormal
		if t.Result.State() == steps.StateFailed {
			eventType = corev1.EventTypeWarning
		}
		reason := strings.TrimSuffix(t.Condition, "Ready") + stateWords[t.Result.State()]
		c.events.Eventf(tc, nil, eventType, reason, "Reconcile", "%s", controllerkit.EventNote(t.Step+": "+t.Result.Message))
	}
	if status.Phase != tc.Status.Phase {
		eventType := corev1.EventTypeNormal
		if status.Phase == v1alpha1.TenantClusterFailed {
			eventType = corev1.EventTypeWarning
		}
		from := string(tc.Status.Phase)
		if from == "" {
			from = string(v1alpha1.TenantClusterPending)
		}
		c.events.Eventf(tc, nil, eventType, string(status.Phase), "Reconcile", "phase %s -> %s", from, status.Phase)
	}
	c.recordRotation(tc, rotationOf(&tc.Status), rotationOf(status))
	c.recordExposure(tc, status)
	if ensureErr != nil {
		c.events.Eventf(tc, nil, corev1.EventTypeWarning, "ReconcileError", "Reconcile", "%s", controllerkit.EventNote(ensureErr.Error()+" (retried with backoff)"))
	}
}

// recordDelete makes an Event when the deletion moves on to another step, or fails.
func (c *Controller) recordDelete(tc *v1alpha1.TenantCluster, description string, err error) {
	if err != nil {
		c.events.Eventf(tc, nil, corev1.EventTypeWarning, "DeleteError", "Delete", "%s", controllerkit.EventNote(err.Error()+" (retried with backoff)"))
		return
	}
	if op := tc.Status.LastOperation; op == nil || op.Type != "Delete" || op.Description != description {
		c.events.Eventf(tc, nil, corev1.EventTypeNormal, "Deleting", "Delete", "%s", controllerkit.EventNote(description))
	}
}
