package tenantcluster

import "github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"

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
	stepGitOps         = "gitops"
	stepAddresses      = "service addresses"

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
		// No condition of its own: the Team's roles in the tenant (Ready waits for it). Before
		// the workers and addons: a step's error ends the run, and a member removed from the
		// Team must not stay bound while a MachineDeployment or an addon keeps failing.
		{Name: stepAccess, After: []string{stepControlPlane}, Ensure: c.ensureAccess},
		// Its condition (ServicesExposeExternalIPs) is set by the step itself: an audit of what
		// the access step's policy does not judge, which never holds Ready back.
		{Name: stepAddresses, After: []string{stepAccess}, ReadsOnly: true, Ensure: c.ensureServiceAddresses},
		{Name: stepWorkers, Condition: ConditionWorkersReady, After: []string{stepControlPlane},
			Ensure: c.ensureWorkers, Cleanup: c.cleanupWorkers},
		{Name: stepAddons, Condition: ConditionAddonsReady, After: []string{stepControlPlane},
			Ensure: c.ensureAddons, Cleanup: c.cleanupAddons},
		// No condition either: when the tenant's certificates expire, for the status; in the
		// status that first says the control plane is ready.
		{Name: stepCredentials, After: []string{stepControlPlane}, ReadsOnly: true, Ensure: c.ensureCredentials},
		// Its condition (GitOpsSynced) is set by the step itself, not the plan: always done, so
		// whatever the Team's repository does never holds Ready back.
		{Name: stepGitOps, After: []string{stepControlPlane}, Ensure: c.ensureGitOps},
	}
}

type stepT = steps.Step[*state]
