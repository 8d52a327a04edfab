package steward

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Values of status.kubernetesResources.version.status butler acts on.
const (
	// VersionStatusReady is a control plane that serves at status.kubernetesResources.version.version.
	VersionStatusReady = "Ready"
	// VersionStatusSleeping is a control plane scaled to zero replicas (its data kept).
	VersionStatusSleeping = "Sleeping"
)

// TenantControlPlane is the part of a Steward (or Kamaji) TenantControlPlane butler reads.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type TenantControlPlane struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              TenantControlPlaneSpec   `json:"spec,omitempty"`
	Status            TenantControlPlaneStatus `json:"status,omitempty"`
}

// TenantControlPlaneSpec is the part of the spec butler reads.
type TenantControlPlaneSpec struct {
	Kubernetes KubernetesSpec `json:"kubernetes,omitempty"`
}

// KubernetesSpec is the Kubernetes the control plane is asked to run.
type KubernetesSpec struct {
	Version string `json:"version,omitempty"`
}

// TenantControlPlaneStatus is the part of the status butler reads.
type TenantControlPlaneStatus struct {
	// ControlPlaneEndpoint is "host:port".
	ControlPlaneEndpoint string              `json:"controlPlaneEndpoint,omitempty"`
	Kubeconfig           KubeconfigsStatus   `json:"kubeconfig,omitempty"`
	KubernetesResources  KubernetesResources `json:"kubernetesResources,omitempty"`
	// Storage is where the control plane keeps its data (Steward and Kamaji report it).
	Storage *StorageStatus `json:"storage,omitempty"`
}

// StorageStatus names the datastore of a control plane.
type StorageStatus struct {
	DataStoreName string `json:"dataStoreName,omitempty"`
}

// KubeconfigsStatus names the generated kubeconfig Secrets.
type KubeconfigsStatus struct {
	Admin             KubeconfigStatus `json:"admin,omitempty"`
	ControllerManager KubeconfigStatus `json:"controllerManager,omitempty"`
	Scheduler         KubeconfigStatus `json:"scheduler,omitempty"`
}

// KubeconfigStatus is one generated kubeconfig.
type KubeconfigStatus struct {
	SecretName string `json:"secretName,omitempty"`
	Checksum   string `json:"checksum,omitempty"`
}

// KubernetesResources is the status of the control plane's workloads.
type KubernetesResources struct {
	Version    KubernetesVersion `json:"version,omitempty"`
	Deployment *DeploymentStatus `json:"deployment,omitempty"`
}

// DeploymentStatus is the control plane's Deployment as the provider reports it.
type DeploymentStatus struct {
	// Replicas is how many control plane pods run: 0 once stopped.
	Replicas *int32 `json:"replicas,omitempty"`
}

// KubernetesVersion is the running version and its state (Provisioning, Upgrading, Ready, ...).
type KubernetesVersion struct {
	Version string `json:"version,omitempty"`
	Status  string `json:"status,omitempty"`
}

// StewardControlPlaneSpec is the part of a StewardControlPlane's spec butler sets.
type StewardControlPlaneSpec struct {
	Version           string                 `json:"version"`
	Replicas          *int32                 `json:"replicas,omitempty"`
	DataStoreName     string                 `json:"dataStoreName,omitempty"`
	APIServer         *ControlPlaneComponent `json:"apiServer,omitempty"`
	ControllerManager *ControlPlaneComponent `json:"controllerManager,omitempty"`
	Scheduler         *ControlPlaneComponent `json:"scheduler,omitempty"`
	Network           *NetworkComponent      `json:"network,omitempty"`
}

// ControlPlaneComponent customizes one control plane component.
type ControlPlaneComponent struct {
	Resources *Resources `json:"resources,omitempty"`
}

// Resources are a component's requests and limits.
type Resources struct {
	Requests corev1.ResourceList `json:"requests,omitempty"`
	Limits   corev1.ResourceList `json:"limits,omitempty"`
}

// Service types of a control plane's Service.
const (
	ServiceTypeLoadBalancer = "LoadBalancer"
	ServiceTypeClusterIP    = "ClusterIP"
)

// NetworkComponent says how the control plane is exposed.
type NetworkComponent struct {
	ServiceType string            `json:"serviceType,omitempty"`
	CertSANs    []string          `json:"certSANs,omitempty"`
	Ingress     *IngressComponent `json:"ingress,omitempty"`
	Gateway     *GatewayComponent `json:"gateway,omitempty"`
}

// IngressComponent exposes the control plane through an Ingress in the management cluster.
type IngressComponent struct {
	ClassName string `json:"className,omitempty"`
	Hostname  string `json:"hostname"`
}

// GatewayComponent exposes the control plane through a Gateway API TLSRoute.
type GatewayComponent struct {
	Hostname   string            `json:"hostname"`
	ParentRefs []ParentReference `json:"parentRefs,omitempty"`
}

// ParentReference names the Gateway a route attaches to.
type ParentReference struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}
