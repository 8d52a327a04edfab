package butler

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// LocalObjectReference names an object in the same namespace (or a cluster-scoped object).
type LocalObjectReference struct {
	Name string `json:"name"`
}

// NamespacedObjectReference names an object that may live in another namespace.
type NamespacedObjectReference struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

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
	MultiTenancy MultiTenancyConfig `json:"multiTenancy,omitempty"`
	// DefaultNamespace holds TenantClusters created without a Team. Defaults to butler-tenants.
	DefaultNamespace         string                     `json:"defaultNamespace,omitempty"`
	DefaultProviderConfigRef *NamespacedObjectReference `json:"defaultProviderConfigRef,omitempty"`
	// DefaultTeamLimits apply to every Team that sets no resourceLimits of its own.
	DefaultTeamLimits    *ResourceLimits      `json:"defaultTeamLimits,omitempty"`
	DefaultAddonVersions AddonVersions        `json:"defaultAddonVersions,omitempty"`
	ControlPlaneExposure ControlPlaneExposure `json:"controlPlaneExposure,omitempty"`
	ControlPlaneProvider ControlPlaneProvider `json:"controlPlaneProvider,omitempty"`
	SnapshotStore        *SnapshotStore       `json:"snapshotStore,omitempty"`
	// KubernetesVersions is the platform's version catalog (empty: none, any version is accepted).
	KubernetesVersions []OfferedVersion `json:"kubernetesVersions,omitempty"`
	// Maintenance is every TenantCluster's maintenance unless its Team or the cluster sets one.
	Maintenance *MaintenanceSpec `json:"maintenance,omitempty"`
	// ControlPlaneProviderNamespaces are where the control plane provider's controllers run; their
	// leader-election Leases are read there only (empty: none is read).
	ControlPlaneProviderNamespaces []string `json:"controlPlaneProviderNamespaces,omitempty"`
}

// OfferedVersion is one Kubernetes version of the catalog.
type OfferedVersion struct {
	Version string `json:"version"`
	// ExpirationDate, once passed, makes the version expired: refused for new clusters and
	// updated in each cluster's next maintenance window.
	ExpirationDate *metav1.Time `json:"expirationDate,omitempty"`
}

// MaintenanceSpec is when a TenantCluster may be changed by the platform, and what it changes.
type MaintenanceSpec struct {
	Window     *MaintenanceWindow     `json:"window,omitempty"`
	AutoUpdate *MaintenanceAutoUpdate `json:"autoUpdate,omitempty"`
}

// MaintenanceWindow is a daily or weekly window.
type MaintenanceWindow struct {
	// Days are the weekdays the window opens on; empty = every day.
	Days []string `json:"days,omitempty"`
	// Start is the time of day the window opens, HH:MM.
	Start string `json:"start"`
	// Duration is how long it stays open.
	Duration metav1.Duration `json:"duration"`
	// Location is an IANA time zone; empty = UTC.
	Location string `json:"location,omitempty"`
}

// MaintenanceAutoUpdate is what maintenance updates by itself.
type MaintenanceAutoUpdate struct {
	// KubernetesVersion moves the cluster to the newest offered patch of its minor.
	KubernetesVersion bool `json:"kubernetesVersion,omitempty"`
}

// MaintenanceStatus is the last maintenance and the next window.
type MaintenanceStatus struct {
	LastMaintenance *MaintenanceRecord `json:"lastMaintenance,omitempty"`
	NextWindowStart *metav1.Time       `json:"nextWindowStart,omitempty"`
}

// MaintenanceRecord is what one maintenance did.
type MaintenanceRecord struct {
	Time        metav1.Time `json:"time"`
	Description string      `json:"description"`
}

// MultiTenancyConfig configures tenancy enforcement.
type MultiTenancyConfig struct {
	// Mode is Enforced, Optional or Disabled (default).
	Mode MultiTenancyMode `json:"mode,omitempty"`
}

// AddonVersions are the platform's default addon chart versions.
type AddonVersions struct {
	Cilium      string `json:"cilium,omitempty"`
	Metallb     string `json:"metallb,omitempty"`
	CertManager string `json:"certManager,omitempty"`
	Longhorn    string `json:"longhorn,omitempty"`
	Traefik     string `json:"traefik,omitempty"`
	Fluxcd      string `json:"fluxcd,omitempty"`
}

// ControlPlaneProvider names the hosted control plane provider.
type ControlPlaneProvider string

const (
	ControlPlaneProviderSteward ControlPlaneProvider = "steward"
	ControlPlaneProviderKamaji  ControlPlaneProvider = "kamaji"
)

// ControlPlaneExposure says how tenant API servers are exposed by default.
type ControlPlaneExposure struct {
	// Mode is LoadBalancer (default), Ingress or Gateway. Ingress and Gateway need a hostname.
	Mode             ExposureMode               `json:"mode,omitempty"`
	Hostname         string                     `json:"hostname,omitempty"`
	IngressClassName string                     `json:"ingressClassName,omitempty"`
	GatewayRef       *NamespacedObjectReference `json:"gatewayRef,omitempty"`
}

// ButlerConfigStatus is the observed platform state.
type ButlerConfigStatus struct {
	TeamCount                int32              `json:"teamCount,omitempty"`
	ClusterCount             int32              `json:"clusterCount,omitempty"`
	ControlPlaneExposureMode ExposureMode       `json:"controlPlaneExposureMode,omitempty"`
	ObservedGeneration       int64              `json:"observedGeneration,omitempty"`
	Conditions               []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ButlerConfigList is a list of ButlerConfig.
type ButlerConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ButlerConfig `json:"items"`
}

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
	DisplayName string     `json:"displayName,omitempty"`
	Description string     `json:"description,omitempty"`
	Access      TeamAccess `json:"access,omitempty"`
	// ResourceLimits bound what the Team may create; ButlerConfig's defaultTeamLimits apply where unset.
	ResourceLimits    *ResourceLimits            `json:"resourceLimits,omitempty"`
	ProviderConfigRef *NamespacedObjectReference `json:"providerConfigRef,omitempty"`
	ClusterDefaults   *ClusterDefaults           `json:"clusterDefaults,omitempty"`
}

// TeamAccess lists the users and groups of a Team.
type TeamAccess struct {
	Users  []TeamMember `json:"users,omitempty"`
	Groups []TeamMember `json:"groups,omitempty"`
}

// TeamMember is one user or group and its role.
type TeamMember struct {
	Name string `json:"name"`
	// Role is admin, operator (or member) or viewer (default).
	Role TeamRole `json:"role,omitempty"`
}

// ResourceLimits bound a Team's clusters, workers and resources.
type ResourceLimits struct {
	MaxClusters               *int32             `json:"maxClusters,omitempty"`
	MaxWorkersPerCluster      *int32             `json:"maxWorkersPerCluster,omitempty"`
	MaxTotalWorkers           *int32             `json:"maxTotalWorkers,omitempty"`
	MaxTotalCPU               *resource.Quantity `json:"maxTotalCPU,omitempty"`
	MaxTotalMemory            *resource.Quantity `json:"maxTotalMemory,omitempty"`
	MaxTotalStorage           *resource.Quantity `json:"maxTotalStorage,omitempty"`
	AllowedKubernetesVersions []string           `json:"allowedKubernetesVersions,omitempty"`
	AllowedProviders          []string           `json:"allowedProviders,omitempty"`
	AllowedAddons             []string           `json:"allowedAddons,omitempty"`
	DeniedAddons              []string           `json:"deniedAddons,omitempty"`
	// MaxSnapshots bounds the Team's TenantClusterSnapshots; MaxSnapshotBytes the bytes they
	// hold in the snapshot store (a new one is refused once they hold it).
	MaxSnapshots     *int32             `json:"maxSnapshots,omitempty"`
	MaxSnapshotBytes *resource.Quantity `json:"maxSnapshotBytes,omitempty"`
}

// ClusterDefaults fill in TenantClusters created by the Team.
type ClusterDefaults struct {
	KubernetesVersion string             `json:"kubernetesVersion,omitempty"`
	WorkerCount       *int32             `json:"workerCount,omitempty"`
	WorkerCPU         *int32             `json:"workerCPU,omitempty"`
	WorkerMemory      *resource.Quantity `json:"workerMemory,omitempty"`
	WorkerDisk        *resource.Quantity `json:"workerDisk,omitempty"`
	DefaultAddons     []string           `json:"defaultAddons,omitempty"`
	// Maintenance is the Team's clusters' maintenance unless a cluster sets its own.
	Maintenance *MaintenanceSpec `json:"maintenance,omitempty"`
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
	Phase         TeamPhase      `json:"phase,omitempty"`
	Namespace     string         `json:"namespace,omitempty"`
	ClusterCount  int32          `json:"clusterCount,omitempty"`
	MemberCount   int32          `json:"memberCount,omitempty"`
	ResourceUsage *ResourceUsage `json:"resourceUsage,omitempty"`
	// QuotaStatus is OK, Warning or Exceeded.
	QuotaStatus        string             `json:"quotaStatus,omitempty"`
	QuotaMessage       string             `json:"quotaMessage,omitempty"`
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// ResourceUsage is what a Team's clusters use now.
type ResourceUsage struct {
	Clusters int32              `json:"clusters,omitempty"`
	Nodes    int32              `json:"nodes,omitempty"`
	CPU      *resource.Quantity `json:"cpu,omitempty"`
	Memory   *resource.Quantity `json:"memory,omitempty"`
	Storage  *resource.Quantity `json:"storage,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TeamList is a list of Team.
type TeamList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Team `json:"items"`
}

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
	TeamRef           *LocalObjectReference      `json:"teamRef,omitempty"`
	ProviderConfigRef *NamespacedObjectReference `json:"providerConfigRef,omitempty"`
	ControlPlane      ControlPlaneSpec           `json:"controlPlane,omitempty"`
	Workers           WorkersSpec                `json:"workers"`
	Networking        NetworkingSpec             `json:"networking,omitempty"`
	Addons            AddonsSpec                 `json:"addons,omitempty"`
	// Hibernation stops the cluster while it is not used and wakes it again.
	Hibernation *HibernationSpec `json:"hibernation,omitempty"`
	RestoreFrom *RestoreSource   `json:"restoreFrom,omitempty"`
	// Snapshots takes TenantClusterSnapshots of the cluster on schedules and keeps the newest.
	Snapshots *SnapshotPolicy `json:"snapshots,omitempty"`
	// Maintenance is the cluster's maintenance window and automatic updates.
	Maintenance *MaintenanceSpec `json:"maintenance,omitempty"`
}

// SnapshotPolicy is when a cluster's snapshots are taken, how many are kept, and what happens
// to them when the cluster is deleted.
type SnapshotPolicy struct {
	Schedules []SnapshotSchedule `json:"schedules,omitempty"`
	// OnClusterDelete: Retain (default) keeps the scheduled snapshots, Delete deletes them.
	OnClusterDelete SnapshotDeletionPolicy `json:"onClusterDelete,omitempty"`
}

// SnapshotDeletionPolicy says whether scheduled snapshots outlive their cluster.
type SnapshotDeletionPolicy string

const (
	SnapshotsRetain SnapshotDeletionPolicy = "Retain"
	SnapshotsDelete SnapshotDeletionPolicy = "Delete"
)

// SnapshotSchedule takes a snapshot at each of its cron times and keeps the newest Keep.
type SnapshotSchedule struct {
	Name     string `json:"name"`
	Schedule string `json:"schedule"`
	Location string `json:"location,omitempty"`
	Keep     int32  `json:"keep"`
}

// HibernationSpec is when a tenant cluster sleeps: workers scaled to zero, the control plane
// stopped, its data and addons kept.
type HibernationSpec struct {
	// Hibernated is the standing wish: true sleeps, false wakes. Schedules, a request to a
	// sleeping cluster (wakeOnRequest) and the idle timeout write it too.
	Hibernated bool `json:"hibernated,omitempty"`
	// Schedules sleep and wake the cluster at set times, like Gardener's.
	Schedules []HibernationSchedule `json:"schedules,omitempty"`
	// WakeOnRequest keeps the endpoint answering while asleep: the first connection wakes the
	// control plane and is passed through once it serves.
	WakeOnRequest bool `json:"wakeOnRequest,omitempty"`
	// IdleTimeout hibernates the cluster again after this long without an open client
	// connection or a request; needs wakeOnRequest (only its listener sees the requests).
	IdleTimeout *metav1.Duration `json:"idleTimeout,omitempty"`
}

// HibernationSchedule is one pair of cron times (five fields) in a time zone.
type HibernationSchedule struct {
	// Start is when the cluster goes to sleep (cron); empty = never by this schedule.
	Start string `json:"start,omitempty"`
	// End is when it wakes (cron); empty = never by this schedule.
	End string `json:"end,omitempty"`
	// Location is an IANA time zone such as Europe/Berlin; empty = UTC.
	Location string `json:"location,omitempty"`
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
	Type ControlPlaneType `json:"type,omitempty"`
	// Replicas: hosted 1-3 (default 1); standalone 1, 3 or 5.
	Replicas *int32 `json:"replicas,omitempty"`
	// ServiceType overrides ButlerConfig's exposure mode: LoadBalancer, Ingress or Gateway.
	ServiceType  ExposureMode           `json:"serviceType,omitempty"`
	DataStoreRef *LocalObjectReference  `json:"dataStoreRef,omitempty"`
	CertSANs     []string               `json:"certSANs,omitempty"`
	Resources    *ControlPlaneResources `json:"resources,omitempty"`
	// MachineTemplate sizes control plane machines; standalone only.
	MachineTemplate *MachineTemplate `json:"machineTemplate,omitempty"`
}

// ControlPlaneResources are the requests and limits of the control plane components.
type ControlPlaneResources struct {
	APIServer         *ComponentResources `json:"apiServer,omitempty"`
	ControllerManager *ComponentResources `json:"controllerManager,omitempty"`
	Scheduler         *ComponentResources `json:"scheduler,omitempty"`
}

// ComponentResources are the compute requests and limits of one control plane component.
type ComponentResources struct {
	Requests corev1.ResourceList `json:"requests,omitempty"`
	Limits   corev1.ResourceList `json:"limits,omitempty"`
}

// WorkersSpec is the worker pool of a tenant cluster.
type WorkersSpec struct {
	// Replicas is the number of workers (>= 0); the scale subresource maps to it.
	Replicas        int32           `json:"replicas"`
	MachineTemplate MachineTemplate `json:"machineTemplate,omitempty"`
	// AutoRepair replaces workers whose nodes are unhealthy (a Cluster API MachineHealthCheck).
	AutoRepair *AutoRepair `json:"autoRepair,omitempty"`
}

// AutoRepair is when a worker counts as unhealthy and how many may be replaced at once.
type AutoRepair struct {
	Enabled             bool                     `json:"enabled,omitempty"`
	UnhealthyConditions []UnhealthyNodeCondition `json:"unhealthyConditions,omitempty"`
	NodeStartupTimeout  *metav1.Duration         `json:"nodeStartupTimeout,omitempty"`
	MaxUnhealthy        *intstr.IntOrString      `json:"maxUnhealthy,omitempty"`
}

// UnhealthyNodeCondition is a node condition that, held for Timeout, makes the node unhealthy.
type UnhealthyNodeCondition struct {
	Type    string          `json:"type"`
	Status  string          `json:"status"`
	Timeout metav1.Duration `json:"timeout"`
}

// MachineTemplate sizes a machine and picks its OS.
type MachineTemplate struct {
	// CPU is the number of cores (default 4).
	CPU *int32 `json:"cpu,omitempty"`
	// Memory defaults to 16Gi.
	Memory *resource.Quantity `json:"memory,omitempty"`
	// DiskSize defaults to 100Gi.
	DiskSize *resource.Quantity `json:"diskSize,omitempty"`
	OS       OSSpec             `json:"os,omitempty"`
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
	Type     OSType `json:"type,omitempty"`
	Version  string `json:"version,omitempty"`
	ImageRef string `json:"imageRef,omitempty"`
}

// NetworkingSpec is the tenant cluster's address plan.
type NetworkingSpec struct {
	// PodCIDR defaults to 10.244.0.0/16; immutable.
	PodCIDR string `json:"podCIDR,omitempty"`
	// ServiceCIDR defaults to 10.96.0.0/12; immutable.
	ServiceCIDR string `json:"serviceCIDR,omitempty"`
	// LoadBalancerPool is an explicit range for service load balancers; exclusive with lbPoolSize.
	LoadBalancerPool *AddressRange `json:"loadBalancerPool,omitempty"`
	// LBPoolSize asks IPAM for this many load balancer addresses; exclusive with loadBalancerPool.
	LBPoolSize *int32 `json:"lbPoolSize,omitempty"`
}

// AddressRange is an inclusive range of IP addresses.
type AddressRange struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// AddonsSpec selects the platform addons of a tenant cluster.
type AddonsSpec struct {
	CNI          *CNIAddon          `json:"cni,omitempty"`
	LoadBalancer *LoadBalancerAddon `json:"loadBalancer,omitempty"`
	CertManager  *CertManagerAddon  `json:"certManager,omitempty"`
	Storage      *StorageAddon      `json:"storage,omitempty"`
	Ingress      *IngressAddon      `json:"ingress,omitempty"`
	Gitops       *GitOpsAddon       `json:"gitops,omitempty"`
}

// CNIAddon is the cluster network plugin.
type CNIAddon struct {
	// Provider is cilium.
	Provider string                `json:"provider,omitempty"`
	Version  string                `json:"version,omitempty"`
	Values   *runtime.RawExtension `json:"values,omitempty"`
}

// LoadBalancerAddon is the bare-metal load balancer.
type LoadBalancerAddon struct {
	// Provider is metallb.
	Provider string                `json:"provider,omitempty"`
	Version  string                `json:"version,omitempty"`
	Values   *runtime.RawExtension `json:"values,omitempty"`
}

// CertManagerAddon installs cert-manager.
type CertManagerAddon struct {
	Enabled *bool                 `json:"enabled,omitempty"`
	Version string                `json:"version,omitempty"`
	Values  *runtime.RawExtension `json:"values,omitempty"`
}

// StorageAddon is the persistent storage provider.
type StorageAddon struct {
	// Provider is longhorn or linstor.
	Provider string                `json:"provider,omitempty"`
	Version  string                `json:"version,omitempty"`
	Values   *runtime.RawExtension `json:"values,omitempty"`
}

// IngressAddon is the ingress controller.
type IngressAddon struct {
	Enabled *bool `json:"enabled,omitempty"`
	// Provider is traefik or nginx.
	Provider string                `json:"provider,omitempty"`
	Version  string                `json:"version,omitempty"`
	Values   *runtime.RawExtension `json:"values,omitempty"`
}

// GitOpsAddon bootstraps a GitOps engine from a repository.
type GitOpsAddon struct {
	// Provider is fluxcd or argocd.
	Provider   string         `json:"provider,omitempty"`
	Version    string         `json:"version,omitempty"`
	Repository *GitRepository `json:"repository,omitempty"`
}

// GitRepository is where GitOps reads the cluster's desired state.
type GitRepository struct {
	URL       string                `json:"url"`
	Branch    string                `json:"branch,omitempty"`
	Path      string                `json:"path,omitempty"`
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// Interval is how often Flux fetches the repository (nil: 1m).
	Interval *metav1.Duration `json:"interval,omitempty"`
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
	// TenantClusterHibernated: workers at zero, control plane stopped, data kept.
	TenantClusterHibernated TenantClusterPhase = "Hibernated"
)

// TenantClusterStatus is the observed state of a tenant cluster.
type TenantClusterStatus struct {
	Phase                TenantClusterPhase       `json:"phase,omitempty"`
	Conditions           []metav1.Condition       `json:"conditions,omitempty"`
	ObservedGeneration   int64                    `json:"observedGeneration,omitempty"`
	TenantNamespace      string                   `json:"tenantNamespace,omitempty"`
	ControlPlaneEndpoint string                   `json:"controlPlaneEndpoint,omitempty"`
	KubeconfigSecretRef  *LocalObjectReference    `json:"kubeconfigSecretRef,omitempty"`
	IPAllocationRefs     []LocalObjectReference   `json:"ipAllocationRefs,omitempty"`
	ObservedState        *ObservedClusterState    `json:"observedState,omitempty"`
	LastOperation        *LastOperation           `json:"lastOperation,omitempty"`
	DataStoreName        string                   `json:"dataStoreName,omitempty"`
	Restore              *RestoreStatus           `json:"restore,omitempty"`
	Credentials          *TenantCredentialsStatus `json:"credentials,omitempty"`
	Maintenance          *MaintenanceStatus       `json:"maintenance,omitempty"`
	Gitops               *GitOpsStatus            `json:"gitops,omitempty"`
}

// GitOpsStatus is the sync of spec.addons.gitops.repository into the tenant.
type GitOpsStatus struct {
	Revision string `json:"revision,omitempty"`
	InSync   bool   `json:"inSync"`
}

// TenantCredentialsStatus is what a TenantCluster's status says of its credentials.
type TenantCredentialsStatus struct {
	Expiry   []CredentialExpiry   `json:"expiry,omitempty"`
	Rotation *CredentialsRotation `json:"rotation,omitempty"`
}

// CredentialExpiry is when one credential of the tenant expires.
type CredentialExpiry struct {
	Name     string      `json:"name"`
	NotAfter metav1.Time `json:"notAfter"`
}

// OperationAnnotation on a TenantCluster asks for a one-off operation (Gardener's
// gardener.cloud/operation); the TenantCluster controller removes it once it has taken it.
const (
	OperationAnnotation = "butler.butlerlabs.dev/operation"
	// OperationRotateCredentialsStart starts a rotation of the tenant CA and the service-account
	// key: new ones are made and trusted beside the old, and everything is moved over to them.
	OperationRotateCredentialsStart = "rotate-credentials-start"
	// OperationRotateCredentialsComplete completes it: the old CA and key are no longer trusted.
	OperationRotateCredentialsComplete = "rotate-credentials-complete"
)

// CredentialsRotationPhase is where a two-phase rotation stands.
type CredentialsRotationPhase string

const (
	RotationPreparing  CredentialsRotationPhase = "Preparing"
	RotationPrepared   CredentialsRotationPhase = "Prepared"
	RotationCompleting CredentialsRotationPhase = "Completing"
	RotationCompleted  CredentialsRotationPhase = "Completed"
)

// CredentialsRotation is a rotation of the tenant CA and the service-account key.
type CredentialsRotation struct {
	Phase              CredentialsRotationPhase `json:"phase"`
	LastInitiationTime *metav1.Time             `json:"lastInitiationTime,omitempty"`
	LastCompletionTime *metav1.Time             `json:"lastCompletionTime,omitempty"`
}

// LastOperation is the one-line progress of the operation in flight or last finished.
type LastOperation struct {
	Type           string      `json:"type"`
	State          string      `json:"state"`
	Progress       int32       `json:"progress"`
	Description    string      `json:"description"`
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`
}

// ObservedClusterState is what the tenant cluster reports of itself.
type ObservedClusterState struct {
	KubernetesVersion string          `json:"kubernetesVersion,omitempty"`
	Workers           WorkerCounts    `json:"workers,omitempty"`
	Addons            []ObservedAddon `json:"addons,omitempty"`
}

// WorkerCounts are the desired and ready workers.
type WorkerCounts struct {
	Desired int32 `json:"desired"`
	Ready   int32 `json:"ready"`
}

// ObservedAddon is one addon as installed in the tenant cluster.
type ObservedAddon struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	Status  string `json:"status,omitempty"`
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

	Spec   KubeconfigRequestSpec   `json:"spec,omitempty"`
	Status KubeconfigRequestStatus `json:"status,omitempty"`
}

// KubeconfigRequestSpec says how long the kubeconfig should be valid.
type KubeconfigRequestSpec struct {
	ExpirationSeconds *int64 `json:"expirationSeconds,omitempty"`
}

// KubeconfigRequestStatus carries the issued kubeconfig.
type KubeconfigRequestStatus struct {
	Kubeconfig          []byte      `json:"kubeconfig,omitempty"`
	ExpirationTimestamp metav1.Time `json:"expirationTimestamp,omitempty"`
	User                string      `json:"user,omitempty"`
	Groups              []string    `json:"groups,omitempty"`
}

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
	Addon string `json:"addon,omitempty"`
	// Helm installs a chart that is not in the catalog.
	Helm    *HelmChartSpec        `json:"helm,omitempty"`
	Version string                `json:"version,omitempty"`
	Values  *runtime.RawExtension `json:"values,omitempty"`
	// DependsOn names other TenantAddons of the same cluster.
	DependsOn []LocalObjectReference `json:"dependsOn,omitempty"`
}

// HelmChartSpec is a chart installed directly.
type HelmChartSpec struct {
	Repository      string `json:"repository"`
	Chart           string `json:"chart"`
	ReleaseName     string `json:"releaseName,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	CreateNamespace *bool  `json:"createNamespace,omitempty"`
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
	Phase              TenantAddonPhase   `json:"phase,omitempty"`
	InstalledVersion   string             `json:"installedVersion,omitempty"`
	HelmRelease        *HelmReleaseStatus `json:"helmRelease,omitempty"`
	Message            string             `json:"message,omitempty"`
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// HelmReleaseStatus is the Helm release behind an addon.
type HelmReleaseStatus struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Version   string `json:"version,omitempty"`
	Revision  int32  `json:"revision,omitempty"`
	Status    string `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantAddonList is a list of TenantAddon.
type TenantAddonList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TenantAddon `json:"items"`
}

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
	DisplayName string         `json:"displayName,omitempty"`
	Description string         `json:"description,omitempty"`
	Category    AddonCategory  `json:"category"`
	Chart       ChartReference `json:"chart"`
	Defaults    *AddonDefaults `json:"defaults,omitempty"`
	// Platform marks addons the platform itself installs.
	Platform bool `json:"platform,omitempty"`
	// DependsOn names other AddonDefinitions.
	DependsOn []string `json:"dependsOn,omitempty"`
	// TrustTeamValues lets the chart install with values a Team sets (a TenantAddon's
	// spec.values, a TenantCluster's spec.addons.<slot>.values) as the chart is. Without it such
	// a TenantAddon is rendered first and refused when it grants more than edit, as a chart named
	// by repository is.
	TrustTeamValues bool `json:"trustTeamValues,omitempty"`
}

// ChartReference locates a Helm chart.
type ChartReference struct {
	// Repository is an http(s):// or oci:// URL, or a local path for bundled charts.
	Repository        string   `json:"repository"`
	Name              string   `json:"name"`
	DefaultVersion    string   `json:"defaultVersion,omitempty"`
	AvailableVersions []string `json:"availableVersions,omitempty"`
}

// AddonDefaults are the install defaults of a catalog addon.
type AddonDefaults struct {
	Namespace       string                `json:"namespace,omitempty"`
	ReleaseName     string                `json:"releaseName,omitempty"`
	CreateNamespace *bool                 `json:"createNamespace,omitempty"`
	Values          *runtime.RawExtension `json:"values,omitempty"`
	// Timeout is a duration such as 10m.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// AddonDefinitionList is a list of AddonDefinition.
type AddonDefinitionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AddonDefinition `json:"items"`
}

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
	Reserved []ReservedRange `json:"reserved,omitempty"`
	// Ranges are the parts of cidr that may be handed out; empty means all of cidr
	// less the network and broadcast addresses.
	Ranges   []AddressRange `json:"ranges,omitempty"`
	Defaults PoolDefaults   `json:"defaults,omitempty"`
}

// ReservedRange is a CIDR kept out of allocation.
type ReservedRange struct {
	CIDR        string `json:"cidr"`
	Description string `json:"description,omitempty"`
}

// PoolDefaults are the allocation sizes used when a request gives none.
type PoolDefaults struct {
	NodesPerTenant  *int32 `json:"nodesPerTenant,omitempty"`
	LBPoolPerTenant *int32 `json:"lbPoolPerTenant,omitempty"`
}

// NetworkPoolStatus is computed from the allocation state, never taken from a client.
type NetworkPoolStatus struct {
	TotalIPs        int64 `json:"totalIPs"`
	AllocatedIPs    int64 `json:"allocatedIPs"`
	AvailableIPs    int64 `json:"availableIPs"`
	AllocationCount int32 `json:"allocationCount"`
	// FragmentationPercent is 100 - largest free block * 100 / total free.
	FragmentationPercent int32              `json:"fragmentationPercent"`
	LargestFreeBlock     int64              `json:"largestFreeBlock"`
	ObservedGeneration   int64              `json:"observedGeneration,omitempty"`
	Conditions           []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NetworkPoolList is a list of NetworkPool.
type NetworkPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NetworkPool `json:"items"`
}

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
	PoolRef          LocalObjectReference       `json:"poolRef"`
	TenantClusterRef *NamespacedObjectReference `json:"tenantClusterRef,omitempty"`
	Type             IPAllocationType           `json:"type"`
	Count            *int32                     `json:"count,omitempty"`
	PinnedRange      *PinnedRange               `json:"pinnedRange,omitempty"`
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
	Phase        IPAllocationPhase `json:"phase,omitempty"`
	StartAddress string            `json:"startAddress,omitempty"`
	EndAddress   string            `json:"endAddress,omitempty"`
	// CIDR is set only when the block is an aligned power of two.
	CIDR string `json:"cidr,omitempty"`
	// Addresses lists the block, capped for huge blocks.
	Addresses      []string     `json:"addresses,omitempty"`
	AllocatedCount int64        `json:"allocatedCount,omitempty"`
	AllocatedAt    *metav1.Time `json:"allocatedAt,omitempty"`
	Message        string       `json:"message,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// IPAllocationList is a list of IPAllocation.
type IPAllocationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []IPAllocation `json:"items"`
}

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
	CredentialsRef *SecretKeyReference `json:"credentialsRef,omitempty"`
	Harvester      *HarvesterConfig    `json:"harvester,omitempty"`
	Nutanix        *NutanixConfig      `json:"nutanix,omitempty"`
	Proxmox        *ProxmoxConfig      `json:"proxmox,omitempty"`
	AWS            *AWSConfig          `json:"aws,omitempty"`
	Azure          *AzureConfig        `json:"azure,omitempty"`
	GCP            *GCPConfig          `json:"gcp,omitempty"`
	Network        ProviderNetwork     `json:"network,omitempty"`
	Scope          ProviderScope       `json:"scope,omitempty"`
	Limits         *ProviderLimits     `json:"limits,omitempty"`
	Local          *LocalConfig        `json:"local,omitempty"`
}

// LocalNodeType is the kind of node a local machine is.
type LocalNodeType string

const (
	// LocalNodeKwok is a Node the tenant's kwok keeps Ready: nothing runs.
	LocalNodeKwok LocalNodeType = "kwok"
	// LocalNodeReal is a kubelet, containerd and runc on the provider's host that runs the pods.
	LocalNodeReal LocalNodeType = "real"
)

// LocalConfig are the local provider's settings.
type LocalConfig struct {
	// NodeType is what the workers of the clusters on this ProviderConfig are; kwok when empty.
	NodeType LocalNodeType `json:"nodeType,omitempty"`
}

// SecretKeyReference names a key of a Secret.
type SecretKeyReference struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Key       string `json:"key,omitempty"`
}

// HarvesterConfig are Harvester settings.
type HarvesterConfig struct {
	Endpoint  string `json:"endpoint,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// NetworkName is namespace/name of a Harvester VM network.
	NetworkName      string `json:"networkName"`
	ImageName        string `json:"imageName,omitempty"`
	StorageClassName string `json:"storageClassName,omitempty"`
}

// NutanixConfig are Nutanix Prism settings.
type NutanixConfig struct {
	Endpoint             string `json:"endpoint"`
	Port                 int32  `json:"port,omitempty"`
	Insecure             bool   `json:"insecure,omitempty"`
	ClusterUUID          string `json:"clusterUUID"`
	SubnetUUID           string `json:"subnetUUID"`
	ImageUUID            string `json:"imageUUID,omitempty"`
	StorageContainerUUID string `json:"storageContainerUUID,omitempty"`
}

// ProxmoxConfig are Proxmox VE settings.
type ProxmoxConfig struct {
	Endpoint   string     `json:"endpoint"`
	Insecure   bool       `json:"insecure,omitempty"`
	Nodes      []string   `json:"nodes"`
	Storage    string     `json:"storage"`
	TemplateID int32      `json:"templateID,omitempty"`
	VMIDRange  *VMIDRange `json:"vmidRange,omitempty"`
}

// VMIDRange bounds the Proxmox VM ids Butler uses.
type VMIDRange struct {
	Start int32 `json:"start"`
	End   int32 `json:"end"`
}

// AWSConfig are AWS settings.
type AWSConfig struct {
	Region           string   `json:"region"`
	VPCID            string   `json:"vpcID,omitempty"`
	SubnetIDs        []string `json:"subnetIDs,omitempty"`
	SecurityGroupIDs []string `json:"securityGroupIDs,omitempty"`
}

// AzureConfig are Azure settings.
type AzureConfig struct {
	SubscriptionID string `json:"subscriptionID"`
	ResourceGroup  string `json:"resourceGroup"`
	Location       string `json:"location,omitempty"`
	VnetName       string `json:"vnetName,omitempty"`
	SubnetName     string `json:"subnetName,omitempty"`
	VMSize         string `json:"vmSize,omitempty"`
}

// GCPConfig are Google Cloud settings.
type GCPConfig struct {
	ProjectID   string `json:"projectID"`
	Region      string `json:"region"`
	Zone        string `json:"zone,omitempty"`
	Network     string `json:"network,omitempty"`
	Subnetwork  string `json:"subnetwork,omitempty"`
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
	Mode           NetworkMode             `json:"mode,omitempty"`
	PoolRefs       []PoolReference         `json:"poolRefs,omitempty"`
	Subnet         string                  `json:"subnet,omitempty"`
	Gateway        string                  `json:"gateway,omitempty"`
	DNSServers     []string                `json:"dnsServers,omitempty"`
	LoadBalancer   *LoadBalancerAllocation `json:"loadBalancer,omitempty"`
	QuotaPerTenant *TenantIPQuota          `json:"quotaPerTenant,omitempty"`
}

// PoolReference is a NetworkPool and its priority (lower first).
type PoolReference struct {
	Name     string `json:"name"`
	Priority int32  `json:"priority,omitempty"`
}

// LBAllocationMode says how load balancer addresses grow.
type LBAllocationMode string

const (
	LBAllocationStatic  LBAllocationMode = "static"
	LBAllocationElastic LBAllocationMode = "elastic"
)

// LoadBalancerAllocation sizes tenants' load balancer pools.
type LoadBalancerAllocation struct {
	DefaultPoolSize *int32           `json:"defaultPoolSize,omitempty"`
	AllocationMode  LBAllocationMode `json:"allocationMode,omitempty"`
	InitialPoolSize *int32           `json:"initialPoolSize,omitempty"`
	GrowthIncrement *int32           `json:"growthIncrement,omitempty"`
}

// TenantIPQuota bounds the addresses one tenant may hold.
type TenantIPQuota struct {
	MaxNodeIPs         *int32 `json:"maxNodeIPs,omitempty"`
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
	Type    ScopeType             `json:"type,omitempty"`
	TeamRef *LocalObjectReference `json:"teamRef,omitempty"`
}

// ProviderLimits bound what Teams may create through this provider.
type ProviderLimits struct {
	MaxClustersPerTeam *int32 `json:"maxClustersPerTeam,omitempty"`
	MaxNodesPerTeam    *int32 `json:"maxNodesPerTeam,omitempty"`
}

// ProviderConfigStatus is the observed state of a provider.
type ProviderConfigStatus struct {
	Validated          bool               `json:"validated,omitempty"`
	Ready              bool               `json:"ready,omitempty"`
	Capacity           *ProviderCapacity  `json:"capacity,omitempty"`
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// ProviderCapacity is what the provider's pools can still hold.
type ProviderCapacity struct {
	AvailableIPs     int64 `json:"availableIPs,omitempty"`
	EstimatedTenants int32 `json:"estimatedTenants,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ProviderConfigList is a list of ProviderConfig.
type ProviderConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProviderConfig `json:"items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantClusterSnapshot is a TenantCluster's datastore key range at one etcd revision.
type TenantClusterSnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TenantClusterSnapshotSpec   `json:"spec,omitempty"`
	Status TenantClusterSnapshotStatus `json:"status,omitempty"`
}

// TenantClusterSnapshotSpec says which cluster to snapshot.
type TenantClusterSnapshotSpec struct {
	ClusterRef LocalObjectReference `json:"clusterRef"`
}

// SnapshotPhase is where a snapshot is in its life.
type SnapshotPhase string

const (
	SnapshotPending SnapshotPhase = "Pending"
	SnapshotRunning SnapshotPhase = "Running"
	SnapshotReady   SnapshotPhase = "Ready"
	SnapshotFailed  SnapshotPhase = "Failed"
)

// TenantClusterSnapshotStatus is what was taken and where it is.
type TenantClusterSnapshotStatus struct {
	Phase             SnapshotPhase `json:"phase,omitempty"`
	Revision          int64         `json:"revision,omitempty"`
	ObjectCount       int64         `json:"objectCount,omitempty"`
	Bytes             int64         `json:"bytes,omitempty"`
	Checksum          string        `json:"checksum,omitempty"`
	Location          string        `json:"location,omitempty"`
	KubernetesVersion string        `json:"kubernetesVersion,omitempty"`
	DataStoreName     string        `json:"dataStoreName,omitempty"`
	StartTime         *metav1.Time  `json:"startTime,omitempty"`
	CompletionTime    *metav1.Time  `json:"completionTime,omitempty"`
	Message           string        `json:"message,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantClusterSnapshotList is a list of TenantClusterSnapshots.
type TenantClusterSnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TenantClusterSnapshot `json:"items"`
}

// RestoreSource names the snapshot a TenantCluster's data comes from.
type RestoreSource struct {
	Name    string `json:"name"`
	Confirm string `json:"confirm,omitempty"`
}

// RestoreStatus records a restore, so that it runs once.
type RestoreStatus struct {
	SnapshotName   string       `json:"snapshotName"`
	SnapshotUID    string       `json:"snapshotUID,omitempty"`
	Revision       int64        `json:"revision,omitempty"`
	InPlace        bool         `json:"inPlace,omitempty"`
	Phase          string       `json:"phase,omitempty"`
	ObjectCount    int64        `json:"objectCount,omitempty"`
	Dropped        int64        `json:"dropped,omitempty"`
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	Message        string       `json:"message,omitempty"`
}

// SnapshotStore is where TenantClusterSnapshots keep their data.
type SnapshotStore struct {
	Directory *DirectorySnapshotStore `json:"directory,omitempty"`
	S3        *S3SnapshotStore        `json:"s3,omitempty"`
}

// S3SnapshotStore is a bucket of S3-compatible object storage; its credentials are in a Secret.
type S3SnapshotStore struct {
	Endpoint             string                    `json:"endpoint"`
	Bucket               string                    `json:"bucket"`
	Prefix               string                    `json:"prefix,omitempty"`
	Region               string                    `json:"region,omitempty"`
	CredentialsSecretRef NamespacedObjectReference `json:"credentialsSecretRef"`
}

// DirectorySnapshotStore is a directory snapshot store.
type DirectorySnapshotStore struct {
	Path string `json:"path"`
}

// Labels and finalizers of snapshots.
const (
	// ClusterLabel on a TenantClusterSnapshot names its TenantCluster (in the same namespace).
	ClusterLabel = "butler.butlerlabs.dev/tenant-cluster"
	// SnapshotDataFinalizer holds a deleted TenantClusterSnapshot until its data is deleted.
	SnapshotDataFinalizer = "butler.butlerlabs.dev/snapshot-data"
	// SnapshotScheduleLabel names the schedule that took a snapshot.
	SnapshotScheduleLabel = "butler.butlerlabs.dev/snapshot-schedule"
	// RestorePhase values of RestoreStatus.Phase.
	RestoreRunning   = "Running"
	RestoreSucceeded = "Succeeded"
	RestoreFailed    = "Failed"
)
