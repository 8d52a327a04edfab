package tenantcluster

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// status is the cluster's status after a forward run: what the steps found, their conditions,
// Ready, the phase and the one-line progress. ensureErr is a transient error the run stopped at.
func (c *Controller) status(tc *v1alpha1.TenantCluster, s *state, out steps.Outcome, ensureErr error) *v1alpha1.TenantClusterStatus {
	st := tc.Status.DeepCopy()
	st.ObservedGeneration = tc.Generation
	st.TenantNamespace = s.namespace
	if s.endpoint != "" {
		st.ControlPlaneEndpoint = s.endpoint
	}
	if s.kubeconfigSecret != "" {
		st.KubeconfigSecretRef = &v1alpha1.LocalObjectReference{Name: s.kubeconfigSecret}
	}
	if s.dataStore != "" {
		st.DataStoreName = s.dataStore
	}
	if s.credentials != nil {
		if st.Credentials == nil {
			st.Credentials = &v1alpha1.TenantCredentialsStatus{}
		}
		st.Credentials.Expiry = s.credentials
	}
	if s.rotation != nil {
		if st.Credentials == nil {
			st.Credentials = &v1alpha1.TenantCredentialsStatus{}
		}
		st.Credentials.Rotation = s.rotation
	}
	if s.networkChecked {
		st.IPAllocationRefs = s.allocationRefs
	}
	observed := st.ObservedState
	if observed == nil {
		observed = &v1alpha1.ObservedClusterState{}
	}
	if s.version != "" {
		observed.KubernetesVersion = s.version
	}
	observed.Workers = v1alpha1.WorkerCounts{Desired: tc.Spec.Workers.Replicas, Ready: observed.Workers.Ready}
	if out.Ran(stepWorkers) {
		observed.Workers.Ready = s.readyWorkers
	}
	if out.Ran(stepAddons) {
		observed.Addons = s.addons
	}
	st.ObservedState = observed

	steps.SetConditions(&st.Conditions, out.Conditions...)
	if s.capable != nil {
		steps.SetConditions(&st.Conditions, *s.capable)
	}
	if g := s.gitops; g != nil && out.Ran(stepGitOps) {
		if g.clear {
			st.Gitops = nil
			meta.RemoveStatusCondition(&st.Conditions, ConditionGitOpsSynced)
		} else {
			st.Gitops = g.status
			g.condition.ObservedGeneration = tc.Generation
			steps.SetConditions(&st.Conditions, g.condition)
		}
	}
	ready := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready",
		Message: "the cluster is ready", ObservedGeneration: tc.Generation}
	if out.First != "" {
		// A failed step is what keeps the cluster from Ready, not an earlier one still waiting
		// (workers rolling while an addon failed): the phase says Failed, Ready says why.
		why := out.First
		if out.FirstFailed != "" {
			why = out.FirstFailed
		}
		r := out.Results[why]
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, orDefault(r.Reason, "Unknown"), fmt.Sprintf("%s: %s", why, r.Message)
	}
	if ensureErr != nil {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "Error", ensureErr.Error()
	}
	wasReady := tc.Status.Phase == v1alpha1.TenantClusterReady || tc.Status.Phase == v1alpha1.TenantClusterUpdating ||
		meta.IsStatusConditionTrue(tc.Status.Conditions, ConditionReady)
	steps.SetConditions(&st.Conditions, ready)

	switch {
	case ensureErr != nil:
		if st.Phase == "" || st.Phase == v1alpha1.TenantClusterPending {
			st.Phase = v1alpha1.TenantClusterProvisioning
		}
	case out.Failed:
		st.Phase = v1alpha1.TenantClusterFailed
	case out.First == "":
		st.Phase = v1alpha1.TenantClusterReady
	case wasReady:
		st.Phase = v1alpha1.TenantClusterUpdating
	case out.First == stepAddons:
		st.Phase = v1alpha1.TenantClusterInstalling
	default:
		st.Phase = v1alpha1.TenantClusterProvisioning
	}

	opType := "Create"
	if wasReady || (st.LastOperation != nil && st.LastOperation.Type != "Create") {
		opType = "Reconcile"
	}
	state, desc := "Processing", ""
	switch {
	case ensureErr != nil:
		state, desc = "Error", ensureErr.Error()
	case out.Failed:
		state, desc = "Failed", ready.Message
	case out.First == "":
		state, desc = "Succeeded", "the cluster is ready"
	default:
		desc = ready.Message
	}
	c.setLastOperation(st, opType, state, out.Progress(len(c.plan)), desc)
	return st
}

// setLastOperation records the operation; its time moves only when something else does.
func (c *Controller) setLastOperation(st *v1alpha1.TenantClusterStatus, opType, state string, progress int32, desc string) {
	op := &v1alpha1.LastOperation{Type: opType, State: state, Progress: progress, Description: desc}
	if prev := st.LastOperation; prev != nil && prev.Type == op.Type && prev.State == op.State &&
		prev.Progress == op.Progress && prev.Description == op.Description {
		return
	}
	op.LastUpdateTime = metav1.NewTime(c.clock.Now())
	st.LastOperation = op
}
