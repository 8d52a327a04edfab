package machines

import (
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
	// A real node that could not boot (its network, containerd or kubelet), or whose process
	// exited since.
	ReasonNodeBootFailed = "NodeBootFailed"
	ReasonNodeDown       = "NodeDown"
	// A machine that has no room for its files (bytes or inodes): a real node's state directory
	// or the nodes' run directory, seen before it joins, or a write that failed midway.
	ReasonNodeOutOfSpace = "NodeOutOfSpace"
	// A real node whose process would listen where another socket in its network namespace
	// does: the message names the address and the socket's processes.
	ReasonNodePortTaken = "NodePortTaken"
)

// LocalMachine phases (status.phase, a column of kubectl get).
const (
	PhasePending  = "Pending"
	PhaseJoining  = "Joining"
	PhaseRunning  = "Running"
	PhaseFailed   = "Failed"
	PhaseDeleting = "Deleting"
)
