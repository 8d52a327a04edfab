package tenantcluster

import (
	"time"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// state is one reconcile's view of a cluster: what the steps read and what they found.
type state struct {
	tc        *v1alpha1.TenantCluster
	namespace string
	// in is what the builders read; its Provider and Config are set by the provider step.
	in component.Input

	// Found by the steps, for the status.
	endpoint         string
	kubeconfigSecret string
	dataStore        string
	version          string
	readyWorkers     int32
	addons           []v1alpha1.ObservedAddon
	allocationRefs   []v1alpha1.LocalObjectReference
	networkChecked   bool
	credentials      []v1alpha1.CredentialExpiry
	// recheckAfter, when set, brings the cluster back after it: a step waits for what no watch
	// announces.
	recheckAfter time.Duration
}

func (c *Controller) newState(tc *v1alpha1.TenantCluster) *state {
	ns := TenantNamespace(tc)
	return &state{tc: tc, namespace: ns, in: component.Input{Cluster: tc, Namespace: ns}}
}

const (
	stepProvider       = "provider config"
	stepNamespace      = "namespace"
	stepNetwork        = "network"
	stepInfrastructure = "infrastructure"
	stepControlPlane   = "control plane"
	stepWorkers        = "workers"
	stepAddons         = "addons"
	stepAccess         = "team access"
	stepCredentials    = "credentials"

	ConditionNetworkReady        = "NetworkReady"
	ConditionInfrastructureReady = "InfrastructureReady"
	ConditionControlPlaneReady   = "ControlPlaneReady"
	ConditionWorkersReady        = "WorkersReady"
	ConditionAddonsReady         = "AddonsReady"
	ConditionReady               = "Ready"
)

// steps is the plan of a TenantCluster, in the order a user sees it come up.
func (c *Controller) steps() []stepT {
	return []stepT{
		{Name: stepProvider, Ensure: c.ensureProvider},
		{Name: stepNamespace, Ensure: c.ensureNamespace, Cleanup: c.cleanupNamespace},
		{Name: stepNetwork, Condition: ConditionNetworkReady, After: []string{stepProvider, stepNamespace},
			Ensure: c.ensureNetwork, Cleanup: c.cleanupNetwork},
		{Name: stepInfrastructure, Condition: ConditionInfrastructureReady, After: []string{stepNetwork},
			Ensure: c.ensureInfrastructure, Cleanup: c.cleanupInfrastructure},
		{Name: stepControlPlane, Condition: ConditionControlPlaneReady, After: []string{stepNetwork},
			Ensure: c.ensureControlPlane, Cleanup: c.cleanupControlPlane},
		{Name: stepWorkers, Condition: ConditionWorkersReady, After: []string{stepControlPlane},
			Ensure: c.ensureWorkers, Cleanup: c.cleanupWorkers},
		{Name: stepAddons, Condition: ConditionAddonsReady, After: []string{stepControlPlane},
			Ensure: c.ensureAddons, Cleanup: c.cleanupAddons},
		// No condition of its own: the Team's roles in the tenant (Ready waits for it).
		{Name: stepAccess, After: []string{stepControlPlane}, Ensure: c.ensureAccess},
		// No condition either: when the tenant's certificates expire, for the status.
		{Name: stepCredentials, After: []string{stepControlPlane}, Ensure: c.ensureCredentials},
	}
}

type stepT = steps.Step[*state]
