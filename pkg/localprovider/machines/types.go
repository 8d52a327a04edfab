package machines

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// The local infrastructure provider's kinds (CRDs in artifacts/crds) and the Cluster API kinds
// this package reads.
var (
	GroupVersion = external.LocalMachineGVK.GroupVersion()

	LocalClustersResource = external.LocalClusterGVR
	LocalMachinesResource = external.LocalMachineGVR
	MachinesResource      = external.MachineGVR
	ClustersResource      = external.ClusterGVR
)

const (
	// LocalMachineKind is the kind a Machine's infrastructureRef names for a local machine.
	LocalMachineKind = "LocalMachine"
	// LocalClusterKind is the kind of the infrastructure cluster.
	LocalClusterKind = "LocalCluster"

	// Finalizer keeps a LocalMachine until its Node and its state are gone.
	Finalizer = "infrastructure.butlerlabs.dev/localmachine"

	// KwokNodeAnnotation marks the Nodes the tenant's kwok keeps Ready (its annotation selector).
	KwokNodeAnnotation = "kwok.x-k8s.io/node"
	KwokNodeValue      = "fake"

	// ProviderIDPrefix starts every local machine's provider ID: local://<namespace>/<name>.
	ProviderIDPrefix = "local://"
)

// Condition types and reasons this provider writes. Ready is the one Cluster API mirrors from
// an infrastructure object into the Machine's and the Cluster's InfrastructureReady.
const (
	ConditionReady = "Ready"

	ReasonProvisioned                    = "Provisioned"
	ReasonWaitingForControlPlaneEndpoint = "WaitingForControlPlaneEndpoint"
	ReasonWaitingForKubeconfig           = "WaitingForKubeconfig"
	ReasonWaitingForMachine              = "WaitingForMachine"
	ReasonWaitingForBootstrapData        = "WaitingForBootstrapData"
	ReasonBootstrapDataInvalid           = "BootstrapDataInvalid"
	ReasonDiscoveryFailed                = "DiscoveryFailed"
	ReasonCertificateRequestFailed       = "CertificateRequestFailed"
	ReasonCertificateNotIssued           = "CertificateNotIssued"
	ReasonNodeRegistrationFailed         = "NodeRegistrationFailed"
	ReasonJoined                         = "Joined"
)

// LocalMachine phases (status.phase, a column of kubectl get).
const (
	PhasePending  = "Pending"
	PhaseJoining  = "Joining"
	PhaseRunning  = "Running"
	PhaseFailed   = "Failed"
	PhaseDeleting = "Deleting"
)

// LocalCluster mirrors the fields of the infrastructure cluster this provider reads and writes.
type LocalCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              LocalClusterSpec   `json:"spec,omitempty"`
	Status            LocalClusterStatus `json:"status,omitempty"`
}

type LocalClusterSpec struct {
	// ControlPlaneEndpoint is patched in by the control plane provider.
	ControlPlaneEndpoint clusterv1.APIEndpoint `json:"controlPlaneEndpoint,omitempty"`
}

type LocalClusterStatus struct {
	Initialization *Initialization    `json:"initialization,omitempty"`
	Conditions     []metav1.Condition `json:"conditions,omitempty"`
}

// Initialization is the Cluster API v1beta2 contract's provisioning flag.
type Initialization struct {
	Provisioned *bool `json:"provisioned,omitempty"`
}

// LocalMachine mirrors the fields of the infrastructure machine this provider reads and writes.
type LocalMachine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              LocalMachineSpec   `json:"spec,omitempty"`
	Status            LocalMachineStatus `json:"status,omitempty"`
}

type LocalMachineSpec struct {
	ProviderID string `json:"providerID,omitempty"`
}

type LocalMachineStatus struct {
	Initialization *Initialization            `json:"initialization,omitempty"`
	Addresses      []clusterv1.MachineAddress `json:"addresses,omitempty"`
	NodeName       string                     `json:"nodeName,omitempty"`
	Phase          string                     `json:"phase,omitempty"`
	Conditions     []metav1.Condition         `json:"conditions,omitempty"`
}

func (s *LocalMachineStatus) provisioned() bool {
	return s.Initialization != nil && s.Initialization.Provisioned != nil && *s.Initialization.Provisioned
}

// fromUnstructured converts an informer's object into one of the typed mirrors.
func fromUnstructured[T any](obj any) (*T, error) {
	u, ok := obj.(runtime.Unstructured)
	if !ok {
		return nil, errNotUnstructured
	}
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), out); err != nil {
		return nil, err
	}
	return out, nil
}
