package bootstrapprovider

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapdata "github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// state is one reconcile's view of a BootstrapConfig: what the steps read and what they found.
type state struct {
	bc *external.BootstrapConfig

	os      bootstrapdata.OS
	ttl     time.Duration
	machine *clusterv1.Machine
	// cluster names the Machine's Cluster.
	cluster  string
	endpoint string
	ca       []byte
	tenant   kubernetes.Interface
	// in is the renderer's input; its token is set by the token step.
	in bootstrapdata.Input
	// secretName is the data Secret once it is written (or, for a Machine that joined, found).
	secretName string
	// next is what the queue does after this reconcile: a controllerkit.RequeueAfter, or an error
	// retried with backoff (nil: wait for a watch).
	next error
}

// joined says the config's Machine has a Node: it needs its data and token no more.
func (s *state) joined() bool { return s.machine != nil && s.machine.Status.NodeRef.Name != "" }

// fail is a Failed result; retry (nil for none) is what the queue does next.
func (s *state) fail(reason string, err, retry error) steps.Result {
	s.next = retry
	return steps.Failure(reason, "%s", err)
}

const (
	stepSpec         = "spec"
	stepMachine      = "machine"
	stepControlPlane = "control plane"
	stepCA           = "cluster CA"
	stepTenant       = "tenant client"
	stepToken        = "bootstrap token"
	stepData         = "data Secret"
)

// steps is the plan of a BootstrapConfig, in the order its data comes together. Each step
// needs the one before it; the first that is not done names the conditions' reason.
func (c *Controller) steps() steps.Plan[*state] {
	return steps.Plan[*state]{
		{Name: stepSpec, Ensure: c.ensureSpec},
		{Name: stepMachine, After: []string{stepSpec}, Ensure: c.ensureMachine},
		{Name: stepControlPlane, After: []string{stepMachine}, Ensure: unlessJoined(c.ensureControlPlane)},
		{Name: stepCA, After: []string{stepControlPlane}, Ensure: unlessJoined(c.ensureCA)},
		{Name: stepTenant, After: []string{stepCA}, Ensure: unlessJoined(c.ensureTenant)},
		// Its cleanup takes the config's tokens out of the tenant when the config is deleted.
		{Name: stepToken, After: []string{stepTenant}, Ensure: c.ensureToken, Cleanup: c.cleanupTokens},
		{Name: stepData, After: []string{stepToken}, Ensure: c.ensureData},
	}
}

type ensureFunc = func(context.Context, *state) (steps.Result, error)

// unlessJoined runs a step that gathers what the data needs, unless the Machine joined: then
// there is nothing to gather (its Cluster or CA may be gone already).
func unlessJoined(ensure ensureFunc) ensureFunc {
	return func(ctx context.Context, s *state) (steps.Result, error) {
		if s.joined() {
			return steps.Ready("Joined", "node %s joined", s.machine.Status.NodeRef.Name), nil
		}
		return ensure(ctx, s)
	}
}

// status is the config's status after a forward run: phase Ready and both conditions True once
// every step is done, else the first step not done says why (Failed when a person must act).
func statusOf(bc *external.BootstrapConfig, s *state, out steps.Outcome) external.BootstrapConfigStatus {
	st := *bc.Status.DeepCopy()
	st.ObservedGeneration = bc.Generation
	cond := metav1.Condition{Status: metav1.ConditionTrue, ObservedGeneration: bc.Generation}
	st.Phase = PhaseReady
	r := out.Results[stepData]
	if out.First != "" {
		r = out.Results[out.First]
		cond.Status, st.Phase = metav1.ConditionFalse, PhasePending
		if r.Failed {
			st.Phase = PhaseFailed
		}
	}
	cond.Reason, cond.Message = r.Reason, r.Message
	if s.secretName != "" {
		name, created := s.secretName, true
		st.DataSecretName = &name
		st.Initialization = &external.BootstrapInitialization{DataSecretCreated: &created}
	}
	for _, t := range []string{ConditionDataSecretAvailable, ConditionReady} {
		cond.Type = t
		meta.SetStatusCondition(&st.Conditions, cond)
	}
	return st
}
