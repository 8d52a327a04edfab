package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// LocalObjectReference names an object in the same namespace (or a cluster-scoped object).
type LocalObjectReference struct {
	Name string `json:"name"`
}

// NamespacedObjectReference names an object that may live in another namespace.
type NamespacedObjectReference struct {
	Name string `json:"name"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ButlerConfig holds platform-wide settings. It is a singleton named "butler".
type ButlerConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ButlerConfigSpec   `json:"spec,omitempty"`
	Status ButlerConfigStatus `json:"status,omitempty"`
}

// MultiTenancyMode says whether TenantClusters must live in a Team's namespace.
type MultiTenancyMode string

const (
	MultiTenancyEnforced MultiTenancyMode = "Enforced"
	MultiTenancyOptional MultiTenancyMode = "Optional"
	MultiTenancyDisabled MultiTenancyMode = "Disabled"
)

// ExposureMode is how a tenant control plane endpoint is reached.
type ExposureMode string

const (
	ExposureLoadBalancer ExposureMode = "LoadBalancer"
	ExposureIngress      ExposureMode = "Ingress"
	ExposureGateway      ExposureMode = "Gateway"
)

// ButlerConfigSpec is the desired platform configuration.
type ButlerConfigSpec struct {
	// +optional
	MultiTenancy MultiTenancyConfig `json:"multiTenancy,omitempty"`
	// DefaultNamespace holds TenantClusters created without a Team. Defaults to butler-tenants.
	// +optional
	DefaultNamespace string `json:"defaultNamespace,omitempty"`
	// +optional
	DefaultProviderConfigRef *NamespacedObjectReference `json:"defaultProviderConfigRef,omitempty"`
	// DefaultTeamLimits apply to every Team that sets no resourceLimits of its own.
	// +optional
	DefaultTeamLimits *ResourceLimits `json:"defaultTeamLimits,omitempty"`
	// +optional
	DefaultAddonVersions AddonVersions `json:"defaultAddonVersions,omitempty"`
	// +optional
	ControlPlaneExposure ControlPlaneExposure `json:"controlPlaneExposure,omitempty"`
}

// MultiTenancyConfig configures tenancy enforcement.
type MultiTenancyConfig struct {
	// Mode is Enforced, Optional or Disabled (default).
	// +optional
	Mode MultiTenancyMode `json:"mode,omitempty"`
}

// AddonVersions are the platform's default addon chart versions.
type AddonVersions struct {
	// +optional
	Cilium string `json:"cilium,omitempty"`
	// +optional
	Metallb string `json:"metallb,omitempty"`
	// +optional
	CertManager string `json:"certManager,omitempty"`
	// +optional
	Longhorn string `json:"longhorn,omitempty"`
	// +optional
	Traefik string `json:"traefik,omitempty"`
	// +optional
	Fluxcd string `json:"fluxcd,omitempty"`
}

// ControlPlaneExposure says how tenant API servers are exposed by default.
type ControlPlaneExposure struct {
	// Mode is LoadBalancer (default), Ingress or Gateway. Ingress and Gateway need a hostname.
	// +optional
	Mode ExposureMode `json:"mode,omitempty"`
	// +optional
	Hostname string `json:"hostname,omitempty"`
	// +optional
	IngressClassName string `json:"ingressClassName,omitempty"`
	// +optional
	GatewayRef *NamespacedObjectReference `json:"gatewayRef,omitempty"`
}

// ButlerConfigStatus is the observed platform state.
type ButlerConfigStatus struct {
	// +optional
	TeamCount int32 `json:"teamCount,omitempty"`
	// +optional
	ClusterCount int32 `json:"clusterCount,omitempty"`
	// +optional
	ControlPlaneExposureMode ExposureMode `json:"controlPlaneExposureMode,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ButlerConfigList is a list of ButlerConfig.
type ButlerConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ButlerConfig `json:"items"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Team is a group of people, their access and their limits. Its namespace has the Team's name.
type Team struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TeamSpec   `json:"spec,omitempty"`
	Status TeamStatus `json:"status,omitempty"`
}

// TeamRole is the access a member has to the Team's clusters.
type TeamRole string

const (
	TeamRoleAdmin    TeamRole = "admin"
	TeamRoleOperator TeamRole = "operator"
	TeamRoleViewer   TeamRole = "viewer"
	// TeamRoleMember is accepted as another word for operator (Butler's README writes it).
	TeamRoleMember TeamRole = "member"
)

// TeamSpec is the desired state of a Team.
type TeamSpec struct {
	// +optional
	DisplayName string `json:"displayName,omitempty"`
	// +optional
	Description string `json:"description,omitempty"`
	// +optional
	Access TeamAccess `json:"access,omitempty"`
	// ResourceLimits bound what the Team may create; ButlerConfig's defaultTeamLimits apply where unset.
	// +optional
	ResourceLimits *ResourceLimits `json:"resourceLimits,omitempty"`
	// +optional
	ProviderConfigRef *NamespacedObjectReference `json:"providerConfigRef,omitempty"`
	// +optional
	ClusterDefaults *ClusterDefaults `json:"clusterDefaults,omitempty"`
}

// TeamAccess lists the users and groups of a Team.
type TeamAccess struct {
	// +optional
	// +listType=map
	// +listMapKey=name
	Users []TeamMember `json:"users,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=name
	Groups []TeamMember `json:"groups,omitempty"`
}

// TeamMember is one user or group and its role.
type TeamMember struct {
	Name string `json:"name"`
	// Role is admin, operator (or member) or viewer (default).
	// +optional
	Role TeamRole `json:"role,omitempty"`
}

// ResourceLimits bound a Team's clusters, workers and resources.
type ResourceLimits struct {
	// +optional
	MaxClusters *int32 `json:"maxClusters,omitempty"`
	// +optional
	MaxWorkersPerCluster *int32 `json:"maxWorkersPerCluster,omitempty"`
	// +optional
	MaxTotalWorkers *int32 `json:"maxTotalWorkers,omitempty"`
	// +optional
	MaxTotalCPU *resource.Quantity `json:"maxTotalCPU,omitempty"`
	// +optional
	MaxTotalMemory *resource.Quantity `json:"maxTotalMemory,omitempty"`
	// +optional
	MaxTotalStorage *resource.Quantity `json:"maxTotalStorage,omitempty"`
	// +optional
	// +listType=set
	AllowedKubernetesVersions []string `json:"allowedKubernetesVersions,omitempty"`
	// +optional
	// +listType=set
	AllowedProviders []string `json:"allowedProviders,omitempty"`
	// +optional
	// +listType=set
	AllowedAddons []string `json:"allowedAddons,omitempty"`
	// +optional
	// +listType=set
	DeniedAddons []string `json:"deniedAddons,omitempty"`
}

// ClusterDefaults fill in TenantClusters created by the Team.
type ClusterDefaults struct {
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// +optional
	WorkerCount *int32 `json:"workerCount,omitempty"`
	// +optional
	WorkerCPU *int32 `json:"workerCPU,omitempty"`
	// +optional
	WorkerMemory *resource.Quantity `json:"workerMemory,omitempty"`
	// +optional
	WorkerDisk *resource.Quantity `json:"workerDisk,omitempty"`
	// +optional
	// +listType=atomic
	DefaultAddons []string `json:"defaultAddons,omitempty"`
}

// TeamPhase is the lifecycle phase of a Team.
type TeamPhase string

const (
	TeamPhasePending     TeamPhase = "Pending"
	TeamPhaseReady       TeamPhase = "Ready"
	TeamPhaseTerminating TeamPhase = "Terminating"
	TeamPhaseFailed      TeamPhase = "Failed"
)

// TeamStatus is the observed state of a Team.
type TeamStatus struct {
	// +optional
	Phase TeamPhase `json:"phase,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	ClusterCount int32 `json:"clusterCount,omitempty"`
	// +optional
	MemberCount int32 `json:"memberCount,omitempty"`
	// +optional
	ResourceUsage *ResourceUsage `json:"resourceUsage,omitempty"`
	// QuotaStatus is OK, Warning or Exceeded.
	// +optional
	QuotaStatus string `json:"quotaStatus,omitempty"`
	// +optional
	QuotaMessage string `json:"quotaMessage,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ResourceUsage is what a Team's clusters use now.
type ResourceUsage struct {
	// +optional
	Clusters int32 `json:"clusters,omitempty"`
	// +optional
	Nodes int32 `json:"nodes,omitempty"`
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty"`
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
	// +optional
	Storage *resource.Quantity `json:"storage,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TeamList is a list of Team.
type TeamList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Team `json:"items"`
}

// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=CreateKubeconfig,verb=create,subresource=kubeconfig,input=KubeconfigRequest,result=KubeconfigRequest
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantCluster is one tenant Kubernetes cluster.
type TenantCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TenantClusterSpec   `json:"spec,omitempty"`
	Status TenantClusterStatus `json:"status,omitempty"`
}

// TenantClusterSpec is the desired state of a tenant cluster.
type TenantClusterSpec struct {
	// KubernetesVersion is vMAJOR.MINOR.PATCH. It may only move forward, one minor at a time.
	KubernetesVersion string `json:"kubernetesVersion"`
	// TeamRef names the owning Team. In Enforced mode it must match the namespace's Team.
	// +optional
	TeamRef *LocalObjectReference `json:"teamRef,omitempty"`
	// +optional
	ProviderConfigRef *NamespacedObjectReference `json:"providerConfigRef,omitempty"`
	// +optional
	ControlPlane ControlPlaneSpec `json:"controlPlane,omitempty"`
	Workers      WorkersSpec      `json:"workers"`
	// +optional
	Networking NetworkingSpec `json:"networking,omitempty"`
	// +optional
	Addons AddonsSpec `json:"addons,omitempty"`
}

// ControlPlaneType says where the tenant control plane runs.
type ControlPlaneType string

const (
	// ControlPlaneHosted runs the control plane as pods in the management cluster.
	ControlPlaneHosted ControlPlaneType = "hosted"
	// ControlPlaneStandalone runs the control plane on its own machines.
	ControlPlaneStandalone ControlPlaneType = "standalone"
)

// ControlPlaneSpec configures the tenant control plane.
type ControlPlaneSpec struct {
	// Type is hosted (default) or standalone; immutable.
	// +optional
	Type ControlPlaneType `json:"type,omitempty"`
	// Replicas: hosted 1-3 (default 1); standalone 1, 3 or 5.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// ServiceType overrides ButlerConfig's exposure mode: LoadBalancer, Ingress or Gateway.
	// +optional
	ServiceType ExposureMode `json:"serviceType,omitempty"`
	// +optional
	DataStoreRef *LocalObjectReference `json:"dataStoreRef,omitempty"`
	// +optional
	// +listType=atomic
	CertSANs []string `json:"certSANs,omitempty"`
	// +optional
	Resources *ControlPlaneResources `json:"resources,omitempty"`
	// MachineTemplate sizes control plane machines; standalone only.
	// +optional
	MachineTemplate *MachineTemplate `json:"machineTemplate,omitempty"`
}

// ControlPlaneResources are the requests and limits of the control plane components.
type ControlPlaneResources struct {
	// +optional
	APIServer *ComponentResources `json:"apiServer,omitempty"`
	// +optional
	ControllerManager *ComponentResources `json:"controllerManager,omitempty"`
	// +optional
	Scheduler *ComponentResources `json:"scheduler,omitempty"`
}

// ComponentResources are the compute requests and limits of one control plane component.
type ComponentResources struct {
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty"`
}

// WorkersSpec is the worker pool of a tenant cluster.
type WorkersSpec struct {
	// Replicas is the number of workers (>= 0); the scale subresource maps to it.
	Replicas int32 `json:"replicas"`
	// +optional
	MachineTemplate MachineTemplate `json:"machineTemplate,omitempty"`
}

// MachineTemplate sizes a machine and picks its OS.
type MachineTemplate struct {
	// CPU is the number of cores (default 4).
	// +optional
	CPU *int32 `json:"cpu,omitempty"`
	// Memory defaults to 16Gi.
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
	// DiskSize defaults to 100Gi.
	// +optional
	DiskSize *resource.Quantity `json:"diskSize,omitempty"`
	// +optional
	OS OSSpec `json:"os,omitempty"`
}

// OSType is a worker operating system.
type OSType string

const (
	OSTalos        OSType = "talos"
	OSRocky        OSType = "rocky"
	OSFlatcar      OSType = "flatcar"
	OSBottlerocket OSType = "bottlerocket"
	OSKairos       OSType = "kairos"
)

// OSSpec is a worker's operating system.
type OSSpec struct {
	// Type is talos (default), rocky, flatcar, bottlerocket or kairos; immutable.
	// +optional
	Type OSType `json:"type,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	ImageRef string `json:"imageRef,omitempty"`
}

// NetworkingSpec is the tenant cluster's address plan.
type NetworkingSpec struct {
	// PodCIDR defaults to 10.244.0.0/16; immutable.
	// +optional
	PodCIDR string `json:"podCIDR,omitempty"`
	// ServiceCIDR defaults to 10.96.0.0/12; immutable.
	// +optional
	ServiceCIDR string `json:"serviceCIDR,omitempty"`
	// LoadBalancerPool is an explicit range for service load balancers; exclusive with lbPoolSize.
	// +optional
	LoadBalancerPool *AddressRange `json:"loadBalancerPool,omitempty"`
	// LBPoolSize asks IPAM for this many load balancer addresses; exclusive with loadBalancerPool.
	// +optional
	LBPoolSize *int32 `json:"lbPoolSize,omitempty"`
}

// AddressRange is an inclusive range of IP addresses.
type AddressRange struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// AddonsSpec selects the platform addons of a tenant cluster.
type AddonsSpec struct {
	// +optional
	CNI *CNIAddon `json:"cni,omitempty"`
	// +optional
	LoadBalancer *LoadBalancerAddon `json:"loadBalancer,omitempty"`
	// +optional
	CertManager *CertManagerAddon `json:"certManager,omitempty"`
	// +optional
	Storage *StorageAddon `json:"storage,omitempty"`
	// +optional
	Ingress *IngressAddon `json:"ingress,omitempty"`
	// +optional
	Gitops *GitOpsAddon `json:"gitops,omitempty"`
}

// CNIAddon is the cluster network plugin.
type CNIAddon struct {
	// Provider is cilium.
	// +optional
	Provider string `json:"provider,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Values *runtime.RawExtension `json:"values,omitempty"`
}

// LoadBalancerAddon is the bare-metal load balancer.
type LoadBalancerAddon struct {
	// Provider is metallb.
	// +optional
	Provider string `json:"provider,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Values *runtime.RawExtension `json:"values,omitempty"`
}

// CertManagerAddon installs cert-manager.
type CertManagerAddon struct {
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Values *runtime.RawExtension `json:"values,omitempty"`
}

// StorageAddon is the persistent storage provider.
type StorageAddon struct {
	// Provider is longhorn or linstor.
	// +optional
	Provider string `json:"provider,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Values *runtime.RawExtension `json:"values,omitempty"`
}

// IngressAddon is the ingress controller.
type IngressAddon struct {
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// Provider is traefik or nginx.
	// +optional
	Provider string `json:"provider,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Values *runtime.RawExtension `json:"values,omitempty"`
}

// GitOpsAddon bootstraps a GitOps engine from a repository.
type GitOpsAddon struct {
	// Provider is fluxcd or argocd.
	// +optional
	Provider string `json:"provider,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Repository *GitRepository `json:"repository,omitempty"`
}

// GitRepository is where GitOps reads the cluster's desired state.
type GitRepository struct {
	URL string `json:"url"`
	// +optional
	Branch string `json:"branch,omitempty"`
	// +optional
	Path string `json:"path,omitempty"`
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
}

// TenantClusterPhase is the lifecycle phase of a tenant cluster.
type TenantClusterPhase string

const (
	TenantClusterPending      TenantClusterPhase = "Pending"
	TenantClusterProvisioning TenantClusterPhase = "Provisioning"
	TenantClusterInstalling   TenantClusterPhase = "Installing"
	TenantClusterReady        TenantClusterPhase = "Ready"
	TenantClusterUpdating     TenantClusterPhase = "Updating"
	TenantClusterDeleting     TenantClusterPhase = "Deleting"
	TenantClusterFailed       TenantClusterPhase = "Failed"
)

// TenantClusterStatus is the observed state of a tenant cluster.
type TenantClusterStatus struct {
	// +optional
	Phase TenantClusterPhase `json:"phase,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	TenantNamespace string `json:"tenantNamespace,omitempty"`
	// +optional
	ControlPlaneEndpoint string `json:"controlPlaneEndpoint,omitempty"`
	// +optional
	KubeconfigSecretRef *LocalObjectReference `json:"kubeconfigSecretRef,omitempty"`
	// +optional
	// +listType=atomic
	IPAllocationRefs []LocalObjectReference `json:"ipAllocationRefs,omitempty"`
	// +optional
	ObservedState *ObservedClusterState `json:"observedState,omitempty"`
}

// ObservedClusterState is what the tenant cluster reports of itself.
type ObservedClusterState struct {
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// +optional
	Workers WorkerCounts `json:"workers,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=name
	Addons []ObservedAddon `json:"addons,omitempty"`
}

// WorkerCounts are the desired and ready workers.
type WorkerCounts struct {
	// +optional
	Desired int32 `json:"desired"`
	// +optional
	Ready int32 `json:"ready"`
}

// ObservedAddon is one addon as installed in the tenant cluster.
type ObservedAddon struct {
	Name string `json:"name"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Status string `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantClusterList is a list of TenantCluster.
type TenantClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TenantCluster `json:"items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// KubeconfigRequest asks for a tenant cluster's admin kubeconfig (the tenantclusters/kubeconfig subresource).
type KubeconfigRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec KubeconfigRequestSpec `json:"spec,omitempty"`
	// +optional
	Status KubeconfigRequestStatus `json:"status,omitempty"`
}

// KubeconfigRequestSpec says how long the kubeconfig should be valid.
type KubeconfigRequestSpec struct {
	// +optional
	ExpirationSeconds *int64 `json:"expirationSeconds,omitempty"`
}

// KubeconfigRequestStatus carries the issued kubeconfig.
type KubeconfigRequestStatus struct {
	// +optional
	Kubeconfig []byte `json:"kubeconfig,omitempty"`
	// +optional
	ExpirationTimestamp metav1.Time `json:"expirationTimestamp,omitempty"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantAddon is an addon installed into one tenant cluster.
type TenantAddon struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TenantAddonSpec   `json:"spec,omitempty"`
	Status TenantAddonStatus `json:"status,omitempty"`
}

// TenantAddonSpec is the desired addon. Exactly one of addon and helm is set.
type TenantAddonSpec struct {
	// ClusterRef names a TenantCluster in the same namespace.
	ClusterRef LocalObjectReference `json:"clusterRef"`
	// Addon names an AddonDefinition from the catalog.
	// +optional
	Addon string `json:"addon,omitempty"`
	// Helm installs a chart that is not in the catalog.
	// +optional
	Helm *HelmChartSpec `json:"helm,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Values *runtime.RawExtension `json:"values,omitempty"`
	// DependsOn names other TenantAddons of the same cluster.
	// +optional
	// +listType=map
	// +listMapKey=name
	DependsOn []LocalObjectReference `json:"dependsOn,omitempty"`
}

// HelmChartSpec is a chart installed directly.
type HelmChartSpec struct {
	Repository string `json:"repository"`
	Chart      string `json:"chart"`
	// +optional
	ReleaseName string `json:"releaseName,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	CreateNamespace *bool `json:"createNamespace,omitempty"`
}

// TenantAddonPhase is the lifecycle phase of an addon.
type TenantAddonPhase string

const (
	TenantAddonPending    TenantAddonPhase = "Pending"
	TenantAddonInstalling TenantAddonPhase = "Installing"
	TenantAddonInstalled  TenantAddonPhase = "Installed"
	TenantAddonUpgrading  TenantAddonPhase = "Upgrading"
	TenantAddonDegraded   TenantAddonPhase = "Degraded"
	TenantAddonFailed     TenantAddonPhase = "Failed"
	TenantAddonDeleting   TenantAddonPhase = "Deleting"
)

// TenantAddonStatus is the observed state of an addon.
type TenantAddonStatus struct {
	// +optional
	Phase TenantAddonPhase `json:"phase,omitempty"`
	// +optional
	InstalledVersion string `json:"installedVersion,omitempty"`
	// +optional
	HelmRelease *HelmReleaseStatus `json:"helmRelease,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// HelmReleaseStatus is the Helm release behind an addon.
type HelmReleaseStatus struct {
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Revision int32 `json:"revision,omitempty"`
	// +optional
	Status string `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantAddonList is a list of TenantAddon.
type TenantAddonList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TenantAddon `json:"items"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// AddonDefinition is one entry of the addon catalog. It has no status.
type AddonDefinition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec AddonDefinitionSpec `json:"spec,omitempty"`
}

// AddonCategory groups catalog entries.
type AddonCategory string

// AddonDefinitionSpec describes an addon and its chart.
type AddonDefinitionSpec struct {
	// +optional
	DisplayName string `json:"displayName,omitempty"`
	// +optional
	Description string         `json:"description,omitempty"`
	Category    AddonCategory  `json:"category"`
	Chart       ChartReference `json:"chart"`
	// +optional
	Defaults *AddonDefaults `json:"defaults,omitempty"`
	// Platform marks addons the platform itself installs.
	// +optional
	Platform bool `json:"platform,omitempty"`
	// DependsOn names other AddonDefinitions.
	// +optional
	// +listType=set
	DependsOn []string `json:"dependsOn,omitempty"`
}

// ChartReference locates a Helm chart.
type ChartReference struct {
	// Repository is an http(s):// or oci:// URL, or a local path for bundled charts.
	Repository string `json:"repository"`
	Name       string `json:"name"`
	// +optional
	DefaultVersion string `json:"defaultVersion,omitempty"`
	// +optional
	// +listType=set
	AvailableVersions []string `json:"availableVersions,omitempty"`
}

// AddonDefaults are the install defaults of a catalog addon.
type AddonDefaults struct {
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	ReleaseName string `json:"releaseName,omitempty"`
	// +optional
	CreateNamespace *bool `json:"createNamespace,omitempty"`
	// +optional
	Values *runtime.RawExtension `json:"values,omitempty"`
	// Timeout is a duration such as 10m.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// AddonDefinitionList is a list of AddonDefinition.
type AddonDefinitionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AddonDefinition `json:"items"`
}

// +genclient
// +genclient:method=Allocate,verb=create,subresource=allocate,input=IPAllocation,result=IPAllocation
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NetworkPool is a range of addresses handed out to tenants.
type NetworkPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NetworkPoolSpec   `json:"spec,omitempty"`
	Status NetworkPoolStatus `json:"status,omitempty"`
}

// NetworkPoolSpec is the address space of a pool.
type NetworkPoolSpec struct {
	// CIDR is the pool's IPv4 or IPv6 prefix.
	CIDR string `json:"cidr"`
	// Reserved CIDRs inside cidr are never handed out.
	// +optional
	// +listType=atomic
	Reserved []ReservedRange `json:"reserved,omitempty"`
	// Ranges are the parts of cidr that may be handed out; empty means all of cidr
	// less the network and broadcast addresses.
	// +optional
	// +listType=atomic
	Ranges []AddressRange `json:"ranges,omitempty"`
	// +optional
	Defaults PoolDefaults `json:"defaults,omitempty"`
}

// ReservedRange is a CIDR kept out of allocation.
type ReservedRange struct {
	CIDR string `json:"cidr"`
	// +optional
	Description string `json:"description,omitempty"`
}

// PoolDefaults are the allocation sizes used when a request gives none.
type PoolDefaults struct {
	// +optional
	NodesPerTenant *int32 `json:"nodesPerTenant,omitempty"`
	// +optional
	LBPoolPerTenant *int32 `json:"lbPoolPerTenant,omitempty"`
}

// NetworkPoolStatus is computed from the allocation state, never taken from a client.
type NetworkPoolStatus struct {
	// +optional
	TotalIPs int64 `json:"totalIPs"`
	// +optional
	AllocatedIPs int64 `json:"allocatedIPs"`
	// +optional
	AvailableIPs int64 `json:"availableIPs"`
	// +optional
	AllocationCount int32 `json:"allocationCount"`
	// FragmentationPercent is 100 - largest free block * 100 / total free.
	// +optional
	FragmentationPercent int32 `json:"fragmentationPercent"`
	// +optional
	LargestFreeBlock int64 `json:"largestFreeBlock"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NetworkPoolList is a list of NetworkPool.
type NetworkPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NetworkPool `json:"items"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// IPAllocation is a block of addresses held by one tenant.
type IPAllocation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   IPAllocationSpec   `json:"spec,omitempty"`
	Status IPAllocationStatus `json:"status,omitempty"`
}

// IPAllocationType says what the addresses are for.
type IPAllocationType string

const (
	IPAllocationNodes        IPAllocationType = "nodes"
	IPAllocationLoadBalancer IPAllocationType = "loadbalancer"
)

// IPAllocationSpec asks for addresses. Exactly one of count and pinnedRange is set. Immutable.
type IPAllocationSpec struct {
	// PoolRef names a NetworkPool in the same namespace.
	PoolRef LocalObjectReference `json:"poolRef"`
	// +optional
	TenantClusterRef *NamespacedObjectReference `json:"tenantClusterRef,omitempty"`
	Type             IPAllocationType           `json:"type"`
	// +optional
	Count *int32 `json:"count,omitempty"`
	// +optional
	PinnedRange *PinnedRange `json:"pinnedRange,omitempty"`
}

// PinnedRange is an exact inclusive range to reserve.
type PinnedRange struct {
	StartAddress string `json:"startAddress"`
	EndAddress   string `json:"endAddress"`
}

// IPAllocationPhase is the lifecycle phase of an allocation.
type IPAllocationPhase string

const (
	IPAllocationPending   IPAllocationPhase = "Pending"
	IPAllocationAllocated IPAllocationPhase = "Allocated"
	IPAllocationReleased  IPAllocationPhase = "Released"
	IPAllocationFailed    IPAllocationPhase = "Failed"
)

// IPAllocationStatus is the block held.
type IPAllocationStatus struct {
	// +optional
	Phase IPAllocationPhase `json:"phase,omitempty"`
	// +optional
	StartAddress string `json:"startAddress,omitempty"`
	// +optional
	EndAddress string `json:"endAddress,omitempty"`
	// CIDR is set only when the block is an aligned power of two.
	// +optional
	CIDR string `json:"cidr,omitempty"`
	// Addresses lists the block, capped for huge blocks.
	// +optional
	// +listType=atomic
	Addresses []string `json:"addresses,omitempty"`
	// +optional
	AllocatedCount int64 `json:"allocatedCount,omitempty"`
	// +optional
	AllocatedAt *metav1.Time `json:"allocatedAt,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// IPAllocationList is a list of IPAllocation.
type IPAllocationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []IPAllocation `json:"items"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ProviderConfig says where and how workers are made.
type ProviderConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProviderConfigSpec   `json:"spec,omitempty"`
	Status ProviderConfigStatus `json:"status,omitempty"`
}

// ProviderType is an infrastructure provider.
type ProviderType string

const (
	ProviderHarvester ProviderType = "harvester"
	ProviderNutanix   ProviderType = "nutanix"
	ProviderProxmox   ProviderType = "proxmox"
	ProviderAWS       ProviderType = "aws"
	ProviderAzure     ProviderType = "azure"
	ProviderGCP       ProviderType = "gcp"
	ProviderLocal     ProviderType = "local"
)

// ProviderConfigSpec is one infrastructure provider's settings.
type ProviderConfigSpec struct {
	Provider ProviderType `json:"provider"`
	// CredentialsRef is a Secret in the management cluster; optional only for local.
	// +optional
	CredentialsRef *SecretKeyReference `json:"credentialsRef,omitempty"`
	// +optional
	Harvester *HarvesterConfig `json:"harvester,omitempty"`
	// +optional
	Nutanix *NutanixConfig `json:"nutanix,omitempty"`
	// +optional
	Proxmox *ProxmoxConfig `json:"proxmox,omitempty"`
	// +optional
	AWS *AWSConfig `json:"aws,omitempty"`
	// +optional
	Azure *AzureConfig `json:"azure,omitempty"`
	// +optional
	GCP *GCPConfig `json:"gcp,omitempty"`
	// +optional
	Network ProviderNetwork `json:"network,omitempty"`
	// +optional
	Scope ProviderScope `json:"scope,omitempty"`
	// +optional
	Limits *ProviderLimits `json:"limits,omitempty"`
}

// SecretKeyReference names a key of a Secret.
type SecretKeyReference struct {
	Name string `json:"name"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Key string `json:"key,omitempty"`
}

// HarvesterConfig are Harvester settings.
type HarvesterConfig struct {
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// NetworkName is namespace/name of a Harvester VM network.
	NetworkName string `json:"networkName"`
	// +optional
	ImageName string `json:"imageName,omitempty"`
	// +optional
	StorageClassName string `json:"storageClassName,omitempty"`
}

// NutanixConfig are Nutanix Prism settings.
type NutanixConfig struct {
	Endpoint string `json:"endpoint"`
	// +optional
	Port int32 `json:"port,omitempty"`
	// +optional
	Insecure    bool   `json:"insecure,omitempty"`
	ClusterUUID string `json:"clusterUUID"`
	SubnetUUID  string `json:"subnetUUID"`
	// +optional
	ImageUUID string `json:"imageUUID,omitempty"`
	// +optional
	StorageContainerUUID string `json:"storageContainerUUID,omitempty"`
}

// ProxmoxConfig are Proxmox VE settings.
type ProxmoxConfig struct {
	Endpoint string `json:"endpoint"`
	// +optional
	Insecure bool `json:"insecure,omitempty"`
	// +listType=set
	Nodes   []string `json:"nodes"`
	Storage string   `json:"storage"`
	// +optional
	TemplateID int32 `json:"templateID,omitempty"`
	// +optional
	VMIDRange *VMIDRange `json:"vmidRange,omitempty"`
}

// VMIDRange bounds the Proxmox VM ids Butler uses.
type VMIDRange struct {
	Start int32 `json:"start"`
	End   int32 `json:"end"`
}

// AWSConfig are AWS settings.
type AWSConfig struct {
	Region string `json:"region"`
	// +optional
	VPCID string `json:"vpcID,omitempty"`
	// +optional
	// +listType=set
	SubnetIDs []string `json:"subnetIDs,omitempty"`
	// +optional
	// +listType=set
	SecurityGroupIDs []string `json:"securityGroupIDs,omitempty"`
}

// AzureConfig are Azure settings.
type AzureConfig struct {
	SubscriptionID string `json:"subscriptionID"`
	ResourceGroup  string `json:"resourceGroup"`
	// +optional
	Location string `json:"location,omitempty"`
	// +optional
	VnetName string `json:"vnetName,omitempty"`
	// +optional
	SubnetName string `json:"subnetName,omitempty"`
	// +optional
	VMSize string `json:"vmSize,omitempty"`
}

// GCPConfig are Google Cloud settings.
type GCPConfig struct {
	ProjectID string `json:"projectID"`
	Region    string `json:"region"`
	// +optional
	Zone string `json:"zone,omitempty"`
	// +optional
	Network string `json:"network,omitempty"`
	// +optional
	Subnetwork string `json:"subnetwork,omitempty"`
	// +optional
	MachineType string `json:"machineType,omitempty"`
}

// NetworkMode says who hands out worker addresses.
type NetworkMode string

const (
	NetworkModeIPAM  NetworkMode = "ipam"
	NetworkModeCloud NetworkMode = "cloud"
)

// ProviderNetwork is how workers get addresses.
type ProviderNetwork struct {
	// Mode is ipam (addresses from NetworkPools) or cloud (default).
	// +optional
	Mode NetworkMode `json:"mode,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=name
	PoolRefs []PoolReference `json:"poolRefs,omitempty"`
	// +optional
	Subnet string `json:"subnet,omitempty"`
	// +optional
	Gateway string `json:"gateway,omitempty"`
	// +optional
	// +listType=atomic
	DNSServers []string `json:"dnsServers,omitempty"`
	// +optional
	LoadBalancer *LoadBalancerAllocation `json:"loadBalancer,omitempty"`
	// +optional
	QuotaPerTenant *TenantIPQuota `json:"quotaPerTenant,omitempty"`
}

// PoolReference is a NetworkPool and its priority (lower first).
type PoolReference struct {
	Name string `json:"name"`
	// +optional
	Priority int32 `json:"priority,omitempty"`
}

// LBAllocationMode says how load balancer addresses grow.
type LBAllocationMode string

const (
	LBAllocationStatic  LBAllocationMode = "static"
	LBAllocationElastic LBAllocationMode = "elastic"
)

// LoadBalancerAllocation sizes tenants' load balancer pools.
type LoadBalancerAllocation struct {
	// +optional
	DefaultPoolSize *int32 `json:"defaultPoolSize,omitempty"`
	// +optional
	AllocationMode LBAllocationMode `json:"allocationMode,omitempty"`
	// +optional
	InitialPoolSize *int32 `json:"initialPoolSize,omitempty"`
	// +optional
	GrowthIncrement *int32 `json:"growthIncrement,omitempty"`
}

// TenantIPQuota bounds the addresses one tenant may hold.
type TenantIPQuota struct {
	// +optional
	MaxNodeIPs *int32 `json:"maxNodeIPs,omitempty"`
	// +optional
	MaxLoadBalancerIPs *int32 `json:"maxLoadBalancerIPs,omitempty"`
}

// ScopeType says who may use a ProviderConfig.
type ScopeType string

const (
	ScopePlatform ScopeType = "platform"
	ScopeTeam     ScopeType = "team"
)

// ProviderScope limits a ProviderConfig to the platform or one Team.
type ProviderScope struct {
	// +optional
	Type ScopeType `json:"type,omitempty"`
	// +optional
	TeamRef *LocalObjectReference `json:"teamRef,omitempty"`
}

// ProviderLimits bound what Teams may create through this provider.
type ProviderLimits struct {
	// +optional
	MaxClustersPerTeam *int32 `json:"maxClustersPerTeam,omitempty"`
	// +optional
	MaxNodesPerTeam *int32 `json:"maxNodesPerTeam,omitempty"`
}

// ProviderConfigStatus is the observed state of a provider.
type ProviderConfigStatus struct {
	// +optional
	Validated bool `json:"validated,omitempty"`
	// +optional
	Ready bool `json:"ready,omitempty"`
	// +optional
	Capacity *ProviderCapacity `json:"capacity,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ProviderCapacity is what the provider's pools can still hold.
type ProviderCapacity struct {
	// +optional
	AvailableIPs int64 `json:"availableIPs,omitempty"`
	// +optional
	EstimatedTenants int32 `json:"estimatedTenants,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ProviderConfigList is a list of ProviderConfig.
type ProviderConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProviderConfig `json:"items"`
}
