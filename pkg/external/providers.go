package external

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kinds of butler's own Cluster API providers (CRDs in artifacts/crds). They are a contract
// like Steward's: the TenantCluster controller writes their templates, butler's bootstrap and local
// providers serve them, and Cluster API reads their status. Their Go types are here, apart from
// the controllers, so that the writer and the server of a field share one definition.

// BootstrapConfig is bootstrap.butlerlabs.dev/v1alpha1 BootstrapConfig: the data a machine of a
// tenant cluster joins with, rendered for its OS.
//
// +k8s:deepcopy-gen=true
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type BootstrapConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              BootstrapConfigSpec   `json:"spec"`
	Status            BootstrapConfigStatus `json:"status,omitempty"`
}

// BootstrapConfigSpec is what the TenantCluster controller sets through the BootstrapConfigTemplate.
//
// +k8s:deepcopy-gen=true
type BootstrapConfigSpec struct {
	OS            BootstrapOS       `json:"os"`
	NodeLabels    map[string]string `json:"nodeLabels,omitempty"`
	NodeTaints    []corev1.Taint    `json:"nodeTaints,omitempty"`
	ClusterDNS    string            `json:"clusterDNS,omitempty"`
	ClusterDomain string            `json:"clusterDomain,omitempty"`
	PodCIDR       string            `json:"podCIDR,omitempty"`
	ServiceCIDR   string            `json:"serviceCIDR,omitempty"`
	// TokenTTL is a Go duration; 15m when empty.
	TokenTTL string `json:"tokenTTL,omitempty"`
}

// BootstrapOS names the OS whose format the data is rendered in.
//
// +k8s:deepcopy-gen=true
type BootstrapOS struct {
	Type    string `json:"type"`
	Version string `json:"version,omitempty"`
}

// BootstrapConfigTemplateSpec is a BootstrapConfigTemplate's spec: Cluster API makes one
// BootstrapConfig per machine from it.
//
// +k8s:deepcopy-gen=true
type BootstrapConfigTemplateSpec struct {
	Template BootstrapConfigTemplateResource `json:"template"`
}

// BootstrapConfigTemplateResource is the template's BootstrapConfig.
//
// +k8s:deepcopy-gen=true
type BootstrapConfigTemplateResource struct {
	Spec BootstrapConfigSpec `json:"spec"`
}

// BootstrapConfigStatus carries Cluster API's bootstrap contract fields.
//
// +k8s:deepcopy-gen=true
type BootstrapConfigStatus struct {
	Initialization     *BootstrapInitialization `json:"initialization,omitempty"`
	DataSecretName     *string                  `json:"dataSecretName,omitempty"`
	Phase              string                   `json:"phase,omitempty"`
	ObservedGeneration int64                    `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition       `json:"conditions,omitempty"`
}

// BootstrapInitialization is status.initialization of Cluster API's v1beta2 bootstrap contract.
//
// +k8s:deepcopy-gen=true
type BootstrapInitialization struct {
	DataSecretCreated *bool `json:"dataSecretCreated,omitempty"`
}

// LocalCluster is infrastructure.butlerlabs.dev/v1alpha1 LocalCluster: the infrastructure
// cluster of machines simulated on this host. Its spec is the infrastructure contract's.
//
// +k8s:deepcopy-gen=true
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type LocalCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              InfrastructureClusterSpec `json:"spec,omitempty"`
	Status            LocalClusterStatus        `json:"status,omitempty"`
}

// LocalClusterStatus is the v1beta2 infrastructure contract's status.
//
// +k8s:deepcopy-gen=true
type LocalClusterStatus struct {
	Initialization *InfrastructureInitialization `json:"initialization,omitempty"`
	Conditions     []metav1.Condition            `json:"conditions,omitempty"`
}

// LocalMachine is infrastructure.butlerlabs.dev/v1alpha1 LocalMachine: a machine simulated on
// this host that joins its tenant with its bootstrap data. Its spec is the infrastructure
// contract's and its node type.
//
// +k8s:deepcopy-gen=true
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type LocalMachine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              LocalMachineSpec   `json:"spec,omitempty"`
	Status            LocalMachineStatus `json:"status,omitempty"`
}

// LocalMachineSpec is the infrastructure contract's spec and the kind of node the machine is.
type LocalMachineSpec struct {
	InfrastructureMachineSpec `json:",inline"`
	// NodeType is kwok (unset: a Node the tenant's kwok keeps) or real (a kubelet on this host).
	NodeType string `json:"nodeType,omitempty"`
}

// LocalMachineStatus is the v1beta2 infrastructure contract's status, the Node the machine
// registered and its phase (a column of kubectl get).
//
// +k8s:deepcopy-gen=true
type LocalMachineStatus struct {
	Initialization *InfrastructureInitialization `json:"initialization,omitempty"`
	Addresses      []MachineAddress              `json:"addresses,omitempty"`
	NodeName       string                        `json:"nodeName,omitempty"`
	Phase          string                        `json:"phase,omitempty"`
	Conditions     []metav1.Condition            `json:"conditions,omitempty"`
}

// Provisioned reads status.initialization.provisioned.
func (s LocalMachineStatus) Provisioned() bool {
	return s.Initialization != nil && s.Initialization.Provisioned != nil && *s.Initialization.Provisioned
}

// MachineAddress is one of an infrastructure machine's addresses, as Cluster API's.
//
// +k8s:deepcopy-gen=true
type MachineAddress struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}
