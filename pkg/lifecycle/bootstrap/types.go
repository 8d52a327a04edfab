package bootstrap

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BootstrapConfig mirrors bootstrap.butlerlabs.dev/v1alpha1 BootstrapConfig (the CRD in
// artifacts/crds); the worker reads and writes it through the dynamic client.
//
// +k8s:deepcopy-gen=true
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type BootstrapConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              BootstrapConfigSpec   `json:"spec"`
	Status            BootstrapConfigStatus `json:"status,omitempty"`
}

// BootstrapConfigSpec is what the TenantCluster controller sets through the template.
//
// +k8s:deepcopy-gen=true
type BootstrapConfigSpec struct {
	OS            OSSpec            `json:"os"`
	NodeLabels    map[string]string `json:"nodeLabels,omitempty"`
	NodeTaints    []corev1.Taint    `json:"nodeTaints,omitempty"`
	ClusterDNS    string            `json:"clusterDNS,omitempty"`
	ClusterDomain string            `json:"clusterDomain,omitempty"`
	PodCIDR       string            `json:"podCIDR,omitempty"`
	ServiceCIDR   string            `json:"serviceCIDR,omitempty"`
	// TokenTTL is a Go duration; 15m when empty.
	TokenTTL string `json:"tokenTTL,omitempty"`
}

// OSSpec names the OS whose format the data is rendered in.
//
// +k8s:deepcopy-gen=true
type OSSpec struct {
	Type    string `json:"type"`
	Version string `json:"version,omitempty"`
}

// BootstrapConfigStatus carries CAPI's bootstrap contract fields.
//
// +k8s:deepcopy-gen=true
type BootstrapConfigStatus struct {
	Initialization     *Initialization    `json:"initialization,omitempty"`
	DataSecretName     *string            `json:"dataSecretName,omitempty"`
	Phase              string             `json:"phase,omitempty"`
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// Initialization is status.initialization of the CAPI v1beta2 bootstrap contract.
//
// +k8s:deepcopy-gen=true
type Initialization struct {
	DataSecretCreated *bool `json:"dataSecretCreated,omitempty"`
}

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
