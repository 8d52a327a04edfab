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
	// VersionStatusUpgrading is a control plane moving from status...version.version to the
	// spec's: Steward while its Deployment rolls, the old version serving meanwhile.
	VersionStatusUpgrading = "Upgrading"
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

// TenantControlPlaneSpec is the part of the spec butler reads: the controllers its version, the
// local provider (Steward's stand-in) what it runs.
type TenantControlPlaneSpec struct {
	Kubernetes     KubernetesSpec     `json:"kubernetes,omitempty"`
	NetworkProfile NetworkProfileSpec `json:"networkProfile,omitempty"`
	ControlPlane   ControlPlaneSpec   `json:"controlPlane,omitempty"`
	// DataStore is the DataStore asked for, "" for Steward's placement.
	DataStore         string `json:"dataStore,omitempty"`
	DataStoreSchema   string `json:"dataStoreSchema,omitempty"`
	DataStoreUsername string `json:"dataStoreUsername,omitempty"`
}

// KubernetesSpec is the Kubernetes the control plane is asked to run.
type KubernetesSpec struct {
	Version              string      `json:"version,omitempty"`
	AdmissionControllers []string    `json:"admissionControllers,omitempty"`
	Kubelet              KubeletSpec `json:"kubelet,omitempty"`
}

// KubeletSpec is how the tenant's kubelets are configured.
type KubeletSpec struct {
	Cgroupfs string `json:"cgroupfs,omitempty"`
}

// NetworkProfileSpec is the control plane's network.
type NetworkProfileSpec struct {
	Address       string   `json:"address,omitempty"`
	Port          int32    `json:"port,omitempty"`
	CertSANs      []string `json:"certSANs,omitempty"`
	ServiceCIDR   string   `json:"serviceCidr,omitempty"`
	PodCIDR       string   `json:"podCidr,omitempty"`
	ClusterDomain string   `json:"clusterDomain,omitempty"`
	DNSServiceIPs []string `json:"dnsServiceIPs,omitempty"`
}

// ControlPlaneSpec is how the control plane runs.
type ControlPlaneSpec struct {
	Deployment DeploymentSpec `json:"deployment,omitempty"`
}

// DeploymentSpec is the control plane's Deployment.
type DeploymentSpec struct {
	// Replicas is how many control plane pods run; unset is one.
	Replicas  *int32    `json:"replicas,omitempty"`
	ExtraArgs ExtraArgs `json:"extraArgs,omitempty"`
}

// ExtraArgs are each component's extra flags ("--flag=value").
type ExtraArgs struct {
	APIServer         []string `json:"apiServer,omitempty"`
	ControllerManager []string `json:"controllerManager,omitempty"`
	Scheduler         []string `json:"scheduler,omitempty"`
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

// StorageStatus names the datastore of a control plane, and the tenant's place in it.
type StorageStatus struct {
	DataStoreName string        `json:"dataStoreName,omitempty"`
	Setup         *StorageSetup `json:"setup,omitempty"`
}

// StorageSetup is the tenant's key prefix (schema) and user in its datastore.
type StorageSetup struct {
	Schema string `json:"schema,omitempty"`
	User   string `json:"user,omitempty"`
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

// StewardControlPlane is capi-steward's control plane, which the local provider stands in for.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type StewardControlPlane struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              StewardControlPlaneSpec   `json:"spec,omitempty"`
	Status            StewardControlPlaneStatus `json:"status,omitempty"`
}

// ConditionTenantControlPlaneCreated is the StewardControlPlane condition capi-steward (and the
// local stand-in) sets False, with why, when the TenantControlPlane cannot be created.
const ConditionTenantControlPlaneCreated = "TenantControlPlaneCreated"

// StewardControlPlaneStatus is the part of a StewardControlPlane's status butler reads.
type StewardControlPlaneStatus struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// StewardControlPlaneSpec is the part of a StewardControlPlane's spec butler sets (the controllers)
// or reads (the local provider).
type StewardControlPlaneSpec struct {
	Version           string                 `json:"version"`
	Replicas          *int32                 `json:"replicas,omitempty"`
	DataStoreName     string                 `json:"dataStoreName,omitempty"`
	DataStoreSchema   string                 `json:"dataStoreSchema,omitempty"`
	DataStoreUsername string                 `json:"dataStoreUsername,omitempty"`
	APIServer         *ControlPlaneComponent `json:"apiServer,omitempty"`
	ControllerManager *ControlPlaneComponent `json:"controllerManager,omitempty"`
	Scheduler         *ControlPlaneComponent `json:"scheduler,omitempty"`
	Network           *NetworkComponent      `json:"network,omitempty"`
	Addons            *AddonsSpec            `json:"addons,omitempty"`
	Deployment        *DeploymentComponent   `json:"deployment,omitempty"`
}

// DeploymentComponent is the part of the control plane's Deployment butler sets: capi-steward
// hands it to the TenantControlPlane (deployment.podAdditionalMetadata, additionalVolumes).
type DeploymentComponent struct {
	PodAdditionalMetadata *AdditionalMetadata `json:"podAdditionalMetadata,omitempty"`
	ExtraVolumes          []corev1.Volume     `json:"extraVolumes,omitempty"`
}

// AdditionalMetadata are labels and annotations added to the provider's objects.
type AdditionalMetadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// AddonsSpec is the part of the control plane's addons butler reads.
type AddonsSpec struct {
	CoreDNS *CoreDNSAddon `json:"coreDNS,omitempty"`
}

// CoreDNSAddon is the CoreDNS addon: its Service's addresses.
type CoreDNSAddon struct {
	DNSServiceIPs []string `json:"dnsServiceIPs,omitempty"`
}

// ControlPlaneComponent customizes one control plane component: its resources, extra flags
// ("--flag=value", over the provider's own) and mounts of the Deployment's extra volumes.
type ControlPlaneComponent struct {
	Resources         *Resources           `json:"resources,omitempty"`
	ExtraArgs         []string             `json:"extraArgs,omitempty"`
	ExtraVolumeMounts []corev1.VolumeMount `json:"extraVolumeMounts,omitempty"`
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
	ServiceType string `json:"serviceType,omitempty"`
	// ServiceAddress is the Service's address, if fixed.
	ServiceAddress string `json:"serviceAddress,omitempty"`
	// DNSServiceIPs are the tenant's cluster DNS addresses (addons.coreDNS.dnsServiceIPs wins).
	DNSServiceIPs []string          `json:"dnsServiceIPs,omitempty"`
	CertSANs      []string          `json:"certSANs,omitempty"`
	Ingress       *IngressComponent `json:"ingress,omitempty"`
	Gateway       *GatewayComponent `json:"gateway,omitempty"`
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

// DataStore is the part of a Steward (or Kamaji) DataStore a control plane provider reads: where
// the datastore serves, and the CA and root client certificate it is reached with.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type DataStore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              DataStoreSpec `json:"spec,omitempty"`
}

// DataStoreSpec is the datastore's driver, endpoints and TLS files.
type DataStoreSpec struct {
	Driver    string              `json:"driver,omitempty"`
	Endpoints []string            `json:"endpoints,omitempty"`
	TLSConfig *DataStoreTLSConfig `json:"tlsConfig,omitempty"`
}

// DataStoreTLSConfig is the CA that signs the datastore's certificates and the root client's.
type DataStoreTLSConfig struct {
	CertificateAuthority *CertKeyPair `json:"certificateAuthority,omitempty"`
	ClientCertificate    *CertKeyPair `json:"clientCertificate,omitempty"`
}

// CertKeyPair is a certificate and its key.
type CertKeyPair struct {
	Certificate *ContentRef `json:"certificate,omitempty"`
	PrivateKey  *ContentRef `json:"privateKey,omitempty"`
}

// ContentRef is one file: inline content (base64 in the object) or a key of a Secret.
type ContentRef struct {
	Content         []byte              `json:"content,omitempty"`
	SecretReference *KeySecretReference `json:"secretReference,omitempty"`
}

// KeySecretReference is a key of a Secret.
type KeySecretReference struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	KeyPath   string `json:"keyPath"`
}
