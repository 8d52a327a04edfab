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
	setFound(st, tc, s, out)
	setStepConditions(st, tc, s, out)
	ready := readyCondition(tc, out, ensureErr)
	wasReady := tc.Status.Phase == v1alpha1.TenantClusterReady || tc.Status.Phase == v1alpha1.TenantClusterUpdating ||
		meta.IsStatusConditionTrue(tc.Status.Conditions, ConditionReady)
	steps.SetConditions(&st.Conditions, ready)
	st.Phase = phaseOf(st.Phase, out, ensureErr, wasReady)

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

// setFound records what the steps found: the tenant namespace, endpoint, kubeconfig Secret,
// datastore, credentials, addresses and the observed state.
func setFound(st *v1alpha1.TenantClusterStatus, tc *v1alpha1.TenantCluster, s *state, out steps.Outcome) {
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
}

// setStepConditions sets the steps' conditions, the provider's capability, GitOps' and the
// service addresses step's.
func setStepConditions(st *v1alpha1.TenantClusterStatus, tc *v1alpha1.TenantCluster, s *state, out steps.Outcome) {
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
	if e := s.exposure; e != nil && out.Ran(stepAddresses) {
		e.ObservedGeneration = tc.Generation
		steps.SetConditions(&st.Conditions, *e)
	}
}

// readyCondition is Ready: True when every step is done, else why not. A failed step is what
// keeps the cluster from Ready, not an earlier one still waiting (workers rolling while an addon
// failed): the phase says Failed, Ready says why.
func readyCondition(tc *v1alpha1.TenantCluster, out steps.Outcome, ensureErr error) metav1.Condition {
	ready := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready",
		Message: "the cluster is ready", ObservedGeneration: tc.Generation}
	if out.First != "" {
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
	return ready
}

// phaseOf is the phase after the run, from the phase before it.
func phaseOf(phase v1alpha1.TenantClusterPhase, out steps.Outcome, ensureErr error, wasReady bool) v1alpha1.TenantClusterPhase {
	switch {
	case ensureErr != nil:
		if phase == "" || phase == v1alpha1.TenantClusterPending {
			return v1alpha1.TenantClusterProvisioning
		}
		return phase
	case out.Failed:
		return v1alpha1.TenantClusterFailed
	case out.First == "":
		return v1alpha1.TenantClusterReady
	case wasReady:
		return v1alpha1.TenantClusterUpdating
	case out.First == stepAddons:
		return v1alpha1.TenantClusterInstalling
	default:
		return v1alpha1.TenantClusterProvisioning
	}
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
