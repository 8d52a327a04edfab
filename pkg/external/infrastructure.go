package external

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InfrastructureCluster is the part of any infrastructure provider's cluster (KubevirtCluster,
// AWSCluster, LocalCluster, ...) that Cluster API's infrastructure contract defines, and all
// butler reads of one.
//
// +k8s:deepcopy-gen=true
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type InfrastructureCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              InfrastructureClusterSpec   `json:"spec,omitempty"`
	Status            InfrastructureClusterStatus `json:"status,omitempty"`
}

// InfrastructureClusterSpec is the contract's spec.
//
// +k8s:deepcopy-gen=true
type InfrastructureClusterSpec struct {
	// ControlPlaneEndpoint is set by the provider, or for a hosted control plane by its provider.
	ControlPlaneEndpoint APIEndpoint `json:"controlPlaneEndpoint,omitempty"`
}

// APIEndpoint is where a control plane serves.
//
// +k8s:deepcopy-gen=true
type APIEndpoint struct {
	Host string `json:"host,omitempty"`
	Port int32  `json:"port,omitempty"`
}

// InfrastructureClusterStatus is the contract's status, in both of its versions.
//
// +k8s:deepcopy-gen=true
type InfrastructureClusterStatus struct {
	// Initialization is the v1beta2 contract's.
	Initialization *InfrastructureInitialization `json:"initialization,omitempty"`
	// Ready is the v1beta1 contract's (providers not yet on v1beta2).
	Ready *bool `json:"ready,omitempty"`
}

// InfrastructureInitialization is status.initialization of the v1beta2 contract.
//
// +k8s:deepcopy-gen=true
type InfrastructureInitialization struct {
	Provisioned *bool `json:"provisioned,omitempty"`
}

// Provisioned reads the contract: status.initialization.provisioned (v1beta2) where the provider
// sets it, else status.ready (v1beta1).
func (s InfrastructureClusterStatus) Provisioned() bool {
	if s.Initialization != nil && s.Initialization.Provisioned != nil {
		return *s.Initialization.Provisioned
	}
	return s.Ready != nil && *s.Ready
}

// InfrastructureMachine is the part of any infrastructure provider's machine (LocalMachine,
// KubevirtMachine, AWSMachine, ...) that Cluster API's infrastructure contract defines and butler
// reads: the provider ID the machine's Node will carry.
//
// +k8s:deepcopy-gen=true
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type InfrastructureMachine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              InfrastructureMachineSpec `json:"spec,omitempty"`
}

// InfrastructureMachineSpec is the contract's spec.
//
// +k8s:deepcopy-gen=true
type InfrastructureMachineSpec struct {
	// ProviderID is set by the provider once it knows the machine; it equals the Node's.
	ProviderID string `json:"providerID,omitempty"`
}
