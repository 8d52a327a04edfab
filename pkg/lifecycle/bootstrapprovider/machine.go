package bootstrapprovider

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapdata "github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// ensureSpec checks what only the config's spec says: the OS and the token TTL.
func (c *Controller) ensureSpec(_ context.Context, s *state) (steps.Result, error) {
	s.os = bootstrapdata.OS(s.bc.Spec.OS.Type)
	if !slices.Contains(bootstrapdata.OSes, s.os) {
		return s.fail(ReasonInvalidSpec, fmt.Errorf("spec.os.type %q is not one of %v", s.bc.Spec.OS.Type, bootstrapdata.OSes), nil), nil
	}
	ttl, err := tokenTTL(s.bc)
	if err != nil {
		return s.fail(ReasonInvalidSpec, err, nil), nil
	}
	s.ttl = ttl
	return steps.Ready("Valid", "%s data, tokens valid for %s", s.os, ttl), nil
}

func tokenTTL(bc *external.BootstrapConfig) (time.Duration, error) {
	if bc.Spec.TokenTTL == "" {
		return defaultTokenTTL, nil
	}
	d, err := time.ParseDuration(bc.Spec.TokenTTL)
	if err != nil {
		return 0, fmt.Errorf("spec.tokenTTL %q: %w", bc.Spec.TokenTTL, err)
	}
	if d < time.Minute {
		return 0, fmt.Errorf("spec.tokenTTL %s is shorter than a minute", d)
	}
	return d, nil
}

// ensureMachine finds the Machine that owns the config and its Cluster's name, and puts the
// finalizer on the config before a token can be minted for it.
func (c *Controller) ensureMachine(ctx context.Context, s *state) (steps.Result, error) {
	machine, r, ok := c.ownerMachine(s)
	if !ok {
		return r, nil
	}
	if err := c.ensureFinalizer(ctx, s.bc); err != nil {
		s.next = err
		return steps.Waiting(ReasonWaitingForMachine, "%s", err), nil
	}
	s.machine = machine
	s.cluster = machine.Spec.ClusterName
	if s.cluster == "" {
		s.cluster = machine.Labels[clusterv1.ClusterNameLabel]
	}
	return steps.Ready("MachineFound", "Machine %s of Cluster %s", machine.Name, s.cluster), nil
}

// ownerMachine finds the CAPI Machine that owns the config.
func (c *Controller) ownerMachine(s *state) (*clusterv1.Machine, steps.Result, bool) {
	bc := s.bc
	for _, ref := range bc.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != external.CAPIGroup || ref.Kind != external.MachineGVK.Kind {
			continue
		}
		obj, err := c.machines.ByNamespace(bc.Namespace).Get(ref.Name)
		if apierrors.IsNotFound(err) {
			return nil, steps.Waiting(ReasonWaitingForMachine, "waiting for Machine %s", ref.Name), false
		}
		if err != nil {
			return nil, s.fail(ReasonWaitingForMachine, err, err), false
		}
		m, err := external.FromObject[clusterv1.Machine](obj)
		if err != nil {
			return nil, s.fail(ReasonWaitingForMachine, err, err), false
		}
		return m, steps.Result{}, true
	}
	return nil, steps.Waiting(ReasonWaitingForMachine, "waiting for a Cluster API Machine to own this config"), false
}

func (c *Controller) ensureFinalizer(ctx context.Context, bc *external.BootstrapConfig) error {
	if slices.Contains(bc.Finalizers, Finalizer) {
		return nil
	}
	return c.patchFinalizers(ctx, bc, append(slices.Clone(bc.Finalizers), Finalizer))
}

// clusterOf names the config's cluster from its label or its Machine.
func (c *Controller) clusterOf(bc *external.BootstrapConfig) string {
	if cl := bc.Labels[clusterv1.ClusterNameLabel]; cl != "" {
		return cl
	}
	if m, _, ok := c.ownerMachine(&state{bc: bc}); ok {
		return m.Spec.ClusterName
	}
	return ""
}
