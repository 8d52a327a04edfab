package bootstrapprovider

// Phases.
const (
	PhasePending = "Pending"
	PhaseReady   = "Ready"
	PhaseFailed  = "Failed"
)

// Conditions: DataSecretAvailable says whether the data Secret is written and why not; Ready
// mirrors it (CAPI reads a bootstrap config's Ready into the Machine's BootstrapConfigReady).
const (
	ConditionDataSecretAvailable = "DataSecretAvailable"
	ConditionReady               = "Ready"
)

// Reasons.
const (
	ReasonDataSecretCreated      = "DataSecretCreated"
	ReasonWaitingForMachine      = "WaitingForMachine"
	ReasonWaitingForCluster      = "WaitingForCluster"
	ReasonWaitingForControlPlane = "WaitingForControlPlaneInitialized"
	ReasonWaitingForEndpoint     = "WaitingForControlPlaneEndpoint"
	ReasonWaitingForKubeconfig   = "WaitingForKubeconfig"
	ReasonCASecretNotFound       = "CASecretNotFound"
	ReasonInvalidCA              = "InvalidCA"
	ReasonTenantUnreachable      = "TenantUnreachable"
	ReasonInvalidSpec            = "InvalidSpec"
	ReasonMachineVersionMissing  = "MachineVersionMissing"
	ReasonRenderFailed           = "RenderFailed"
	ReasonDataSecretWriteFailed  = "DataSecretWriteFailed"
)
