package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// LocalObjectReference names an object in the same namespace (or a cluster-scoped object).
type LocalObjectReference struct {
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
}

// NamespacedObjectReference names an object that may live in another namespace.
type NamespacedObjectReference struct {
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// +optional
	Namespace string `json:"namespace,omitempty" protobuf:"bytes,2,opt,name=namespace"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ButlerConfig holds platform-wide settings. It is a singleton named "butler".
type ButlerConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec   ButlerConfigSpec   `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	Status ButlerConfigStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
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
	MultiTenancy MultiTenancyConfig `json:"multiTenancy,omitempty" protobuf:"bytes,1,opt,name=multiTenancy"`
	// DefaultNamespace holds TenantClusters created without a Team. Defaults to butler-tenants.
	// +optional
	DefaultNamespace string `json:"defaultNamespace,omitempty" protobuf:"bytes,2,opt,name=defaultNamespace"`
	// +optional
	DefaultProviderConfigRef *NamespacedObjectReference `json:"defaultProviderConfigRef,omitempty" protobuf:"bytes,3,opt,name=defaultProviderConfigRef"`
	// DefaultTeamLimits apply to every Team that sets no resourceLimits of its own.
	// +optional
	DefaultTeamLimits *ResourceLimits `json:"defaultTeamLimits,omitempty" protobuf:"bytes,4,opt,name=defaultTeamLimits"`
	// +optional
	DefaultAddonVersions AddonVersions `json:"defaultAddonVersions,omitempty" protobuf:"bytes,5,opt,name=defaultAddonVersions"`
	// +optional
	ControlPlaneExposure ControlPlaneExposure `json:"controlPlaneExposure,omitempty" protobuf:"bytes,6,opt,name=controlPlaneExposure"`
	// ControlPlaneProvider is the hosted control plane provider TenantClusters get: steward
	// (default: a StewardControlPlane, turned into a Steward TenantControlPlane) or kamaji (a
	// KamajiControlPlane).
	// +optional
	ControlPlaneProvider ControlPlaneProvider `json:"controlPlaneProvider,omitempty" protobuf:"bytes,7,opt,name=controlPlaneProvider,casttype=ControlPlaneProvider"`
	// SnapshotStore is where TenantClusterSnapshots keep their data.
	// +optional
	SnapshotStore *SnapshotStore `json:"snapshotStore,omitempty" protobuf:"bytes,8,opt,name=snapshotStore"`
	// KubernetesVersions is the platform's version catalog: the Kubernetes versions TenantClusters
	// may run, each with an optional expiration date. A TenantCluster asking for a version the
	// catalog does not offer, or for an expired one, is refused (422); a cluster that runs an
	// expired version is updated to the newest offered patch of its minor in its next maintenance
	// window. Empty: no catalog, any well-formed version is accepted.
	// +optional
	// +listType=map
	// +listMapKey=version
	KubernetesVersions []OfferedVersion `json:"kubernetesVersions,omitempty" protobuf:"bytes,9,rep,name=kubernetesVersions"`
	// Maintenance is every TenantCluster's maintenance window and automatic updates; a Team's
	// clusterDefaults.maintenance and a cluster's spec.maintenance set their own (window and
	// autoUpdate each on its own).
	// +optional
	Maintenance *MaintenanceSpec `json:"maintenance,omitempty" protobuf:"bytes,10,opt,name=maintenance"`
	// ControlPlaneProviderNamespaces are the namespaces of the management cluster where the
	// control plane provider's controllers run (Steward and its Cluster API provider: steward-system
	// in their install files). butler reads their leader-election Leases there, and only there, to
	// say at once that one is not running (ControlPlaneReady ProviderNotRunning): whoever may
	// write Leases in a namespace named here is trusted as much as those controllers. Empty: no
	// Lease is read, and a provider that does not act is named after 90 s
	// (ProviderNotResponding).
	// +optional
	// +listType=set
	ControlPlaneProviderNamespaces []string `json:"controlPlaneProviderNamespaces,omitempty" protobuf:"bytes,11,rep,name=controlPlaneProviderNamespaces"`
}

// OfferedVersion is one Kubernetes version of the platform's catalog.
type OfferedVersion struct {
	// Version is vMAJOR.MINOR.PATCH.
	Version string `json:"version" protobuf:"bytes,1,opt,name=version"`
	// ExpirationDate, once passed, makes the version expired: refused for new clusters and for
	// upgrades, and updated in each cluster that runs it in its next maintenance window, even
	// with automatic updates off. Empty: never expires.
	// +optional
	ExpirationDate *metav1.Time `json:"expirationDate,omitempty" protobuf:"bytes,2,opt,name=expirationDate"`
}

// MaintenanceSpec is when the platform may change a TenantCluster by itself, and what it changes.
type MaintenanceSpec struct {
	// Window is when maintenance runs. Without one, nothing is updated automatically.
	// +optional
	Window *MaintenanceWindow `json:"window,omitempty" protobuf:"bytes,1,opt,name=window"`
	// AutoUpdate is what maintenance updates without being asked. An expired Kubernetes version
	// is updated whatever it says.
	// +optional
	AutoUpdate *MaintenanceAutoUpdate `json:"autoUpdate,omitempty" protobuf:"bytes,2,opt,name=autoUpdate"`
}

// MaintenanceWindow is a daily or weekly time window.
type MaintenanceWindow struct {
	// Days are the weekdays the window opens on (Monday ... Sunday); empty = every day.
	// +optional
	// +listType=set
	Days []string `json:"days,omitempty" protobuf:"bytes,1,rep,name=days"`
	// Start is the time of day the window opens, HH:MM (24-hour) in location.
	Start string `json:"start" protobuf:"bytes,2,opt,name=start"`
	// Duration is how long the window stays open: 30m to 6h.
	Duration metav1.Duration `json:"duration" protobuf:"bytes,3,opt,name=duration"`
	// Location is an IANA time zone such as Europe/Berlin; empty = UTC.
	// +optional
	Location string `json:"location,omitempty" protobuf:"bytes,4,opt,name=location"`
}

// MaintenanceAutoUpdate is what maintenance updates by itself inside the window.
type MaintenanceAutoUpdate struct {
	// KubernetesVersion moves the cluster to the newest patch of its minor version that the
	// catalog offers (and that has not expired). Minor versions are never changed automatically.
	// +optional
	KubernetesVersion bool `json:"kubernetesVersion,omitempty" protobuf:"varint,1,opt,name=kubernetesVersion"`
}

// MaintenanceStatus is the last maintenance and when the next window opens.
type MaintenanceStatus struct {
	// LastMaintenance is the last change maintenance made (or tried to make).
	// +optional
	LastMaintenance *MaintenanceRecord `json:"lastMaintenance,omitempty" protobuf:"bytes,1,opt,name=lastMaintenance"`
	// NextWindowStart is when the next maintenance window opens.
	// +optional
	NextWindowStart *metav1.Time `json:"nextWindowStart,omitempty" protobuf:"bytes,2,opt,name=nextWindowStart"`
}

// MaintenanceRecord is what one maintenance did.
type MaintenanceRecord struct {
	// Time is when it ran.
	Time metav1.Time `json:"time" protobuf:"bytes,1,opt,name=time"`
	// Description says what it changed and why, or why the change was refused.
	Description string `json:"description" protobuf:"bytes,2,opt,name=description"`
}

// MultiTenancyConfig configures tenancy enforcement.
type MultiTenancyConfig struct {
	// Mode is Enforced, Optional or Disabled (default).
	// +optional
	Mode MultiTenancyMode `json:"mode,omitempty" protobuf:"bytes,1,opt,name=mode,casttype=MultiTenancyMode"`
}

// AddonVersions are the platform's default addon chart versions.
type AddonVersions struct {
	// +optional
	Cilium string `json:"cilium,omitempty" protobuf:"bytes,1,opt,name=cilium"`
	// +optional
	Metallb string `json:"metallb,omitempty" protobuf:"bytes,2,opt,name=metallb"`
	// +optional
	CertManager string `json:"certManager,omitempty" protobuf:"bytes,3,opt,name=certManager"`
	// +optional
	Longhorn string `json:"longhorn,omitempty" protobuf:"bytes,4,opt,name=longhorn"`
	// +optional
	Traefik string `json:"traefik,omitempty" protobuf:"bytes,5,opt,name=traefik"`
	// +optional
	Fluxcd string `json:"fluxcd,omitempty" protobuf:"bytes,6,opt,name=fluxcd"`
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
	// +optional
	Mode ExposureMode `json:"mode,omitempty" protobuf:"bytes,1,opt,name=mode,casttype=ExposureMode"`
	// +optional
	Hostname string `json:"hostname,omitempty" protobuf:"bytes,2,opt,name=hostname"`
	// +optional
	IngressClassName string `json:"ingressClassName,omitempty" protobuf:"bytes,3,opt,name=ingressClassName"`
	// +optional
	GatewayRef *NamespacedObjectReference `json:"gatewayRef,omitempty" protobuf:"bytes,4,opt,name=gatewayRef"`
}

// ButlerConfigStatus is the observed platform state.
type ButlerConfigStatus struct {
	// +optional
	TeamCount int32 `json:"teamCount,omitempty" protobuf:"varint,1,opt,name=teamCount"`
	// +optional
	ClusterCount int32 `json:"clusterCount,omitempty" protobuf:"varint,2,opt,name=clusterCount"`
	// +optional
	ControlPlaneExposureMode ExposureMode `json:"controlPlaneExposureMode,omitempty" protobuf:"bytes,3,opt,name=controlPlaneExposureMode,casttype=ExposureMode"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty" protobuf:"varint,4,opt,name=observedGeneration"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" protobuf:"bytes,5,rep,name=conditions"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ButlerConfigList is a list of ButlerConfig.
type ButlerConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []ButlerConfig `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Team is a group of people, their access and their limits. Its namespace has the Team's name.
type Team struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec   TeamSpec   `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	Status TeamStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
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
	DisplayName string `json:"displayName,omitempty" protobuf:"bytes,1,opt,name=displayName"`
	// +optional
	Description string `json:"description,omitempty" protobuf:"bytes,2,opt,name=description"`
	// +optional
	Access TeamAccess `json:"access,omitempty" protobuf:"bytes,3,opt,name=access"`
	// ResourceLimits bound what the Team may create; ButlerConfig's defaultTeamLimits apply where unset.
	// +optional
	ResourceLimits *ResourceLimits `json:"resourceLimits,omitempty" protobuf:"bytes,4,opt,name=resourceLimits"`
	// +optional
	ProviderConfigRef *NamespacedObjectReference `json:"providerConfigRef,omitempty" protobuf:"bytes,5,opt,name=providerConfigRef"`
	// +optional
	ClusterDefaults *ClusterDefaults `json:"clusterDefaults,omitempty" protobuf:"bytes,6,opt,name=clusterDefaults"`
}

// TeamAccess lists the users and groups of a Team.
type TeamAccess struct {
	// +optional
	// +listType=map
	// +listMapKey=name
	Users []TeamMember `json:"users,omitempty" protobuf:"bytes,1,rep,name=users"`
	// +optional
	// +listType=map
	// +listMapKey=name
	Groups []TeamMember `json:"groups,omitempty" protobuf:"bytes,2,rep,name=groups"`
}

// TeamMember is one user or group and its role.
type TeamMember struct {
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// Role is admin, operator (or member) or viewer (default).
	// +optional
	Role TeamRole `json:"role,omitempty" protobuf:"bytes,2,opt,name=role,casttype=TeamRole"`
}

// ResourceLimits bound a Team's clusters, workers and resources.
type ResourceLimits struct {
	// +optional
	MaxClusters *int32 `json:"maxClusters,omitempty" protobuf:"varint,1,opt,name=maxClusters"`
	// +optional
	MaxWorkersPerCluster *int32 `json:"maxWorkersPerCluster,omitempty" protobuf:"varint,2,opt,name=maxWorkersPerCluster"`
	// +optional
	MaxTotalWorkers *int32 `json:"maxTotalWorkers,omitempty" protobuf:"varint,3,opt,name=maxTotalWorkers"`
	// +optional
	MaxTotalCPU *resource.Quantity `json:"maxTotalCPU,omitempty" protobuf:"bytes,4,opt,name=maxTotalCPU"`
	// +optional
	MaxTotalMemory *resource.Quantity `json:"maxTotalMemory,omitempty" protobuf:"bytes,5,opt,name=maxTotalMemory"`
	// +optional
	MaxTotalStorage *resource.Quantity `json:"maxTotalStorage,omitempty" protobuf:"bytes,6,opt,name=maxTotalStorage"`
	// +optional
	// +listType=set
	AllowedKubernetesVersions []string `json:"allowedKubernetesVersions,omitempty" protobuf:"bytes,7,rep,name=allowedKubernetesVersions"`
	// +optional
	// +listType=set
	AllowedProviders []string `json:"allowedProviders,omitempty" protobuf:"bytes,8,rep,name=allowedProviders"`
	// +optional
	// +listType=set
	AllowedAddons []string `json:"allowedAddons,omitempty" protobuf:"bytes,9,rep,name=allowedAddons"`
	// +optional
	// +listType=set
	DeniedAddons []string `json:"deniedAddons,omitempty" protobuf:"bytes,10,rep,name=deniedAddons"`
	// MaxSnapshots bounds the TenantClusterSnapshots in the Team's namespace (by hand and
	// scheduled, whatever their phase).
	// +optional
	MaxSnapshots *int32 `json:"maxSnapshots,omitempty" protobuf:"varint,11,opt,name=maxSnapshots"`
	// MaxSnapshotBytes bounds the bytes the Team's snapshots hold in the snapshot store (the sum
	// of their status.bytes): a new snapshot is refused once they hold it.
	// +optional
	MaxSnapshotBytes *resource.Quantity `json:"maxSnapshotBytes,omitempty" protobuf:"bytes,12,opt,name=maxSnapshotBytes"`
}

// ClusterDefaults fill in TenantClusters created by the Team.
type ClusterDefaults struct {
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty" protobuf:"bytes,1,opt,name=kubernetesVersion"`
	// +optional
	WorkerCount *int32 `json:"workerCount,omitempty" protobuf:"varint,2,opt,name=workerCount"`
	// +optional
	WorkerCPU *int32 `json:"workerCPU,omitempty" protobuf:"varint,3,opt,name=workerCPU"`
	// +optional
	WorkerMemory *resource.Quantity `json:"workerMemory,omitempty" protobuf:"bytes,4,opt,name=workerMemory"`
	// +optional
	WorkerDisk *resource.Quantity `json:"workerDisk,omitempty" protobuf:"bytes,5,opt,name=workerDisk"`
	// +optional
	// +listType=atomic
	DefaultAddons []string `json:"defaultAddons,omitempty" protobuf:"bytes,6,rep,name=defaultAddons"`
	// Maintenance is the maintenance of the Team's clusters that set none of their own (window
	// and autoUpdate each on its own); ButlerConfig's where the Team sets none.
	// +optional
	Maintenance *MaintenanceSpec `json:"maintenance,omitempty" protobuf:"bytes,7,opt,name=maintenance"`
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
	Phase TeamPhase `json:"phase,omitempty" protobuf:"bytes,1,opt,name=phase,casttype=TeamPhase"`
	// +optional
	Namespace string `json:"namespace,omitempty" protobuf:"bytes,2,opt,name=namespace"`
	// +optional
	ClusterCount int32 `json:"clusterCount,omitempty" protobuf:"varint,3,opt,name=clusterCount"`
	// +optional
	MemberCount int32 `json:"memberCount,omitempty" protobuf:"varint,4,opt,name=memberCount"`
	// +optional
	ResourceUsage *ResourceUsage `json:"resourceUsage,omitempty" protobuf:"bytes,5,opt,name=resourceUsage"`
	// QuotaStatus is OK, Warning or Exceeded.
	// +optional
	QuotaStatus string `json:"quotaStatus,omitempty" protobuf:"bytes,6,opt,name=quotaStatus"`
	// +optional
	QuotaMessage string `json:"quotaMessage,omitempty" protobuf:"bytes,7,opt,name=quotaMessage"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty" protobuf:"varint,8,opt,name=observedGeneration"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" protobuf:"bytes,9,rep,name=conditions"`
}

// ResourceUsage is what a Team's clusters use now.
type ResourceUsage struct {
	// +optional
	Clusters int32 `json:"clusters,omitempty" protobuf:"varint,1,opt,name=clusters"`
	// +optional
	Nodes int32 `json:"nodes,omitempty" protobuf:"varint,2,opt,name=nodes"`
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty" protobuf:"bytes,3,opt,name=cpu"`
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty" protobuf:"bytes,4,opt,name=memory"`
	// +optional
	Storage *resource.Quantity `json:"storage,omitempty" protobuf:"bytes,5,opt,name=storage"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TeamList is a list of Team.
type TeamList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []Team `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=CreateKubeconfig,verb=create,subresource=kubeconfig,input=KubeconfigRequest,result=KubeconfigRequest
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantCluster is one tenant Kubernetes cluster.
type TenantCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec   TenantClusterSpec   `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	Status TenantClusterStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// TenantClusterSpec is the desired state of a tenant cluster.
type TenantClusterSpec struct {
	// KubernetesVersion is vMAJOR.MINOR.PATCH. It may only move forward, one minor at a time.
	KubernetesVersion string `json:"kubernetesVersion" protobuf:"bytes,1,opt,name=kubernetesVersion"`
	// TeamRef names the owning Team. In Enforced mode it must match the namespace's Team.
	// +optional
	TeamRef *LocalObjectReference `json:"teamRef,omitempty" protobuf:"bytes,2,opt,name=teamRef"`
	// +optional
	ProviderConfigRef *NamespacedObjectReference `json:"providerConfigRef,omitempty" protobuf:"bytes,3,opt,name=providerConfigRef"`
	// +optional
	ControlPlane ControlPlaneSpec `json:"controlPlane,omitempty" protobuf:"bytes,4,opt,name=controlPlane"`
	Workers      WorkersSpec      `json:"workers" protobuf:"bytes,5,opt,name=workers"`
	// +optional
	Networking NetworkingSpec `json:"networking,omitempty" protobuf:"bytes,6,opt,name=networking"`
	// +optional
	Addons AddonsSpec `json:"addons,omitempty" protobuf:"bytes,7,opt,name=addons"`
	// Hibernation stops the cluster while it is not used and wakes it again.
	// +optional
	Hibernation *HibernationSpec `json:"hibernation,omitempty" protobuf:"bytes,8,opt,name=hibernation"`
	// RestoreFrom makes a new cluster from a TenantClusterSnapshot (its data, with a new
	// identity: CA, service-account keys, endpoint, workers), or, set on an existing cluster
	// with confirm, rolls the cluster back to it in place.
	// +optional
	RestoreFrom *RestoreSource `json:"restoreFrom,omitempty" protobuf:"bytes,9,opt,name=restoreFrom"`
	// Snapshots takes TenantClusterSnapshots of the cluster on schedules and keeps the newest.
	// +optional
	Snapshots *SnapshotPolicy `json:"snapshots,omitempty" protobuf:"bytes,10,opt,name=snapshots"`
	// Maintenance is the cluster's maintenance window and automatic updates; where it sets
	// neither, its Team's clusterDefaults.maintenance or ButlerConfig's maintenance apply.
	// +optional
	Maintenance *MaintenanceSpec `json:"maintenance,omitempty" protobuf:"bytes,11,opt,name=maintenance"`
}

// SnapshotPolicy is when a cluster's snapshots are taken, how many are kept, and what happens
// to them when the cluster is deleted.
type SnapshotPolicy struct {
	// Schedules each take a snapshot at their cron times.
	// +optional
	// +listType=map
	// +listMapKey=name
	Schedules []SnapshotSchedule `json:"schedules,omitempty" protobuf:"bytes,1,rep,name=schedules"`
	// OnClusterDelete is what deleting the cluster does to the snapshots its schedules took:
	// Retain (the default) keeps them, Delete deletes them and their data. Snapshots created by
	// hand are always kept.
	// +optional
	OnClusterDelete SnapshotDeletionPolicy `json:"onClusterDelete,omitempty" protobuf:"bytes,2,opt,name=onClusterDelete,casttype=SnapshotDeletionPolicy"`
}

// SnapshotDeletionPolicy says whether scheduled snapshots outlive their cluster.
type SnapshotDeletionPolicy string

const (
	SnapshotsRetain SnapshotDeletionPolicy = "Retain"
	SnapshotsDelete SnapshotDeletionPolicy = "Delete"
)

// SnapshotSchedule takes a snapshot at each of its cron times and keeps the newest ones.
type SnapshotSchedule struct {
	// Name names the schedule (a DNS label). Its snapshots are named
	// <cluster>-<name>-<YYYYMMDDhhmm>, the firing time in UTC, so one firing makes at most one.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// Schedule is a cron expression: five fields or an @descriptor such as @daily.
	Schedule string `json:"schedule" protobuf:"bytes,2,opt,name=schedule"`
	// Location is an IANA time zone such as Europe/Berlin; empty = UTC.
	// +optional
	Location string `json:"location,omitempty" protobuf:"bytes,3,opt,name=location"`
	// Keep is how many of the schedule's snapshots to keep (at least 1): a snapshot is deleted,
	// with its data, once Keep Ready snapshots of the schedule are newer than it.
	Keep int32 `json:"keep" protobuf:"varint,4,opt,name=keep"`
}

// HibernationSpec is when a tenant cluster sleeps: workers scaled to zero, the control plane
// stopped, its data and addons kept.
type HibernationSpec struct {
	// Hibernated is the standing wish: true sleeps, false wakes. Schedules, a request to a
	// sleeping cluster (wakeOnRequest) and the idle timeout write it too.
	// +optional
	Hibernated bool `json:"hibernated,omitempty" protobuf:"varint,1,opt,name=hibernated"`
	// Schedules sleep and wake the cluster at set times, like Gardener's.
	// +optional
	// +listType=atomic
	Schedules []HibernationSchedule `json:"schedules,omitempty" protobuf:"bytes,2,rep,name=schedules"`
	// WakeOnRequest keeps the endpoint answering while asleep: the first connection wakes the
	// control plane and is passed through once it serves.
	// +optional
	WakeOnRequest bool `json:"wakeOnRequest,omitempty" protobuf:"varint,3,opt,name=wakeOnRequest"`
	// IdleTimeout hibernates the cluster again after this long without an open client
	// connection or a request; needs wakeOnRequest (only its listener sees the requests).
	// +optional
	IdleTimeout *metav1.Duration `json:"idleTimeout,omitempty" protobuf:"bytes,4,opt,name=idleTimeout"`
}

// HibernationSchedule is one pair of cron times (five fields) in a time zone.
type HibernationSchedule struct {
	// Start is when the cluster goes to sleep (cron); empty = never by this schedule.
	// +optional
	Start string `json:"start,omitempty" protobuf:"bytes,1,opt,name=start"`
	// End is when it wakes (cron); empty = never by this schedule.
	// +optional
	End string `json:"end,omitempty" protobuf:"bytes,2,opt,name=end"`
	// Location is an IANA time zone such as Europe/Berlin; empty = UTC.
	// +optional
	Location string `json:"location,omitempty" protobuf:"bytes,3,opt,name=location"`
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
	Type ControlPlaneType `json:"type,omitempty" protobuf:"bytes,1,opt,name=type,casttype=ControlPlaneType"`
	// Replicas: hosted 1-3 (default 1); standalone 1, 3 or 5.
	// +optional
	Replicas *int32 `json:"replicas,omitempty" protobuf:"varint,2,opt,name=replicas"`
	// ServiceType overrides ButlerConfig's exposure mode: LoadBalancer, Ingress or Gateway.
	// +optional
	ServiceType ExposureMode `json:"serviceType,omitempty" protobuf:"bytes,3,opt,name=serviceType,casttype=ExposureMode"`
	// +optional
	DataStoreRef *LocalObjectReference `json:"dataStoreRef,omitempty" protobuf:"bytes,4,opt,name=dataStoreRef"`
	// +optional
	// +listType=atomic
	CertSANs []string `json:"certSANs,omitempty" protobuf:"bytes,5,rep,name=certSANs"`
	// +optional
	Resources *ControlPlaneResources `json:"resources,omitempty" protobuf:"bytes,6,opt,name=resources"`
	// MachineTemplate sizes control plane machines; standalone only.
	// +optional
	MachineTemplate *MachineTemplate `json:"machineTemplate,omitempty" protobuf:"bytes,7,opt,name=machineTemplate"`
}

// ControlPlaneResources are the requests and limits of the control plane components.
type ControlPlaneResources struct {
	// +optional
	APIServer *ComponentResources `json:"apiServer,omitempty" protobuf:"bytes,1,opt,name=apiServer"`
	// +optional
	ControllerManager *ComponentResources `json:"controllerManager,omitempty" protobuf:"bytes,2,opt,name=controllerManager"`
	// +optional
	Scheduler *ComponentResources `json:"scheduler,omitempty" protobuf:"bytes,3,opt,name=scheduler"`
}

// ComponentResources are the compute requests and limits of one control plane component.
type ComponentResources struct {
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty" protobuf:"bytes,1,rep,name=requests,casttype=k8s.io/api/core/v1.ResourceList,castkey=k8s.io/api/core/v1.ResourceName"`
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty" protobuf:"bytes,2,rep,name=limits,casttype=k8s.io/api/core/v1.ResourceList,castkey=k8s.io/api/core/v1.ResourceName"`
}

// WorkersSpec is the worker pool of a tenant cluster.
type WorkersSpec struct {
	// Replicas is the number of workers (>= 0); the scale subresource maps to it.
	Replicas int32 `json:"replicas" protobuf:"varint,1,opt,name=replicas"`
	// +optional
	MachineTemplate MachineTemplate `json:"machineTemplate,omitempty" protobuf:"bytes,2,opt,name=machineTemplate"`
	// AutoRepair replaces workers whose nodes are unhealthy, through a Cluster API
	// MachineHealthCheck over the workers' machines. A hibernated cluster is never repaired.
	// +optional
	AutoRepair *AutoRepair `json:"autoRepair,omitempty" protobuf:"bytes,3,opt,name=autoRepair"`
}

// AutoRepair is when a worker counts as unhealthy and how many may be replaced at once.
type AutoRepair struct {
	// Enabled turns auto-repair on.
	// +optional
	Enabled bool `json:"enabled,omitempty" protobuf:"varint,1,opt,name=enabled"`
	// UnhealthyConditions make a worker unhealthy when its node holds one for its timeout.
	// Default: Ready False or Unknown for 5m.
	// +optional
	// +listType=atomic
	UnhealthyConditions []UnhealthyNodeCondition `json:"unhealthyConditions,omitempty" protobuf:"bytes,2,rep,name=unhealthyConditions"`
	// NodeStartupTimeout makes a worker unhealthy when its node has not joined within it.
	// Default 10m.
	// +optional
	NodeStartupTimeout *metav1.Duration `json:"nodeStartupTimeout,omitempty" protobuf:"bytes,3,opt,name=nodeStartupTimeout"`
	// MaxUnhealthy stops all repairs while more workers than this are unhealthy (a number or a
	// percentage of the workers): many at once is a network or platform failure that
	// replacing machines would not cure. Default 40%.
	// +optional
	MaxUnhealthy *intstr.IntOrString `json:"maxUnhealthy,omitempty" protobuf:"bytes,4,opt,name=maxUnhealthy"`
}

// UnhealthyNodeCondition is a node condition that, held for Timeout, makes the worker unhealthy.
type UnhealthyNodeCondition struct {
	// Type is the node condition's type, such as Ready.
	Type string `json:"type" protobuf:"bytes,1,opt,name=type"`
	// Status is True, False or Unknown.
	Status string `json:"status" protobuf:"bytes,2,opt,name=status"`
	// Timeout is how long the condition must hold (at least 30s).
	Timeout metav1.Duration `json:"timeout" protobuf:"bytes,3,opt,name=timeout"`
}

// MachineTemplate sizes a machine and picks its OS.
type MachineTemplate struct {
	// CPU is the number of cores (default 4).
	// +optional
	CPU *int32 `json:"cpu,omitempty" protobuf:"varint,1,opt,name=cpu"`
	// Memory defaults to 16Gi.
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty" protobuf:"bytes,2,opt,name=memory"`
	// DiskSize defaults to 100Gi.
	// +optional
	DiskSize *resource.Quantity `json:"diskSize,omitempty" protobuf:"bytes,3,opt,name=diskSize"`
	// +optional
	OS OSSpec `json:"os,omitempty" protobuf:"bytes,4,opt,name=os"`
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
	Type OSType `json:"type,omitempty" protobuf:"bytes,1,opt,name=type,casttype=OSType"`
	// +optional
	Version string `json:"version,omitempty" protobuf:"bytes,2,opt,name=version"`
	// +optional
	ImageRef string `json:"imageRef,omitempty" protobuf:"bytes,3,opt,name=imageRef"`
}

// NetworkingSpec is the tenant cluster's address plan.
type NetworkingSpec struct {
	// PodCIDR defaults to 10.244.0.0/16; immutable.
	// +optional
	PodCIDR string `json:"podCIDR,omitempty" protobuf:"bytes,1,opt,name=podCIDR"`
	// ServiceCIDR defaults to 10.96.0.0/12; immutable.
	// +optional
	ServiceCIDR string `json:"serviceCIDR,omitempty" protobuf:"bytes,2,opt,name=serviceCIDR"`
	// LoadBalancerPool is an explicit range for service load balancers; exclusive with lbPoolSize.
	// +optional
	LoadBalancerPool *AddressRange `json:"loadBalancerPool,omitempty" protobuf:"bytes,3,opt,name=loadBalancerPool"`
	// LBPoolSize asks IPAM for this many load balancer addresses; exclusive with loadBalancerPool.
	// +optional
	LBPoolSize *int32 `json:"lbPoolSize,omitempty" protobuf:"varint,4,opt,name=lbPoolSize"`
}

// AddressRange is an inclusive range of IP addresses.
type AddressRange struct {
	Start string `json:"start" protobuf:"bytes,1,opt,name=start"`
	End   string `json:"end" protobuf:"bytes,2,opt,name=end"`
}

// AddonsSpec selects the platform addons of a tenant cluster.
type AddonsSpec struct {
	// +optional
	CNI *CNIAddon `json:"cni,omitempty" protobuf:"bytes,1,opt,name=cni"`
	// +optional
	LoadBalancer *LoadBalancerAddon `json:"loadBalancer,omitempty" protobuf:"bytes,2,opt,name=loadBalancer"`
	// +optional
	CertManager *CertManagerAddon `json:"certManager,omitempty" protobuf:"bytes,3,opt,name=certManager"`
	// +optional
	Storage *StorageAddon `json:"storage,omitempty" protobuf:"bytes,4,opt,name=storage"`
	// +optional
	Ingress *IngressAddon `json:"ingress,omitempty" protobuf:"bytes,5,opt,name=ingress"`
	// +optional
	Gitops *GitOpsAddon `json:"gitops,omitempty" protobuf:"bytes,6,opt,name=gitops"`
}

// CNIAddon is the cluster network plugin.
type CNIAddon struct {
	// Provider is cilium.
	// +optional
	Provider string `json:"provider,omitempty" protobuf:"bytes,1,opt,name=provider"`
	// +optional
	Version string `json:"version,omitempty" protobuf:"bytes,2,opt,name=version"`
	// +optional
	Values *runtime.RawExtension `json:"values,omitempty" protobuf:"bytes,3,opt,name=values"`
}

// LoadBalancerAddon is the bare-metal load balancer.
type LoadBalancerAddon struct {
	// Provider is metallb.
	// +optional
	Provider string `json:"provider,omitempty" protobuf:"bytes,1,opt,name=provider"`
	// +optional
	Version string `json:"version,omitempty" protobuf:"bytes,2,opt,name=version"`
	// +optional
	Values *runtime.RawExtension `json:"values,omitempty" protobuf:"bytes,3,opt,name=values"`
}

// CertManagerAddon installs cert-manager.
type CertManagerAddon struct {
	// +optional
	Enabled *bool `json:"enabled,omitempty" protobuf:"varint,1,opt,name=enabled"`
	// +optional
	Version string `json:"version,omitempty" protobuf:"bytes,2,opt,name=version"`
	// +optional
	Values *runtime.RawExtension `json:"values,omitempty" protobuf:"bytes,3,opt,name=values"`
}

// StorageAddon is the persistent storage provider.
type StorageAddon struct {
	// Provider is longhorn or linstor.
	// +optional
	Provider string `json:"provider,omitempty" protobuf:"bytes,1,opt,name=provider"`
	// +optional
	Version string `json:"version,omitempty" protobuf:"bytes,2,opt,name=version"`
	// +optional
	Values *runtime.RawExtension `json:"values,omitempty" protobuf:"bytes,3,opt,name=values"`
}

// IngressAddon is the ingress controller.
type IngressAddon struct {
	// +optional
	Enabled *bool `json:"enabled,omitempty" protobuf:"varint,1,opt,name=enabled"`
	// Provider is traefik or nginx.
	// +optional
	Provider string `json:"provider,omitempty" protobuf:"bytes,2,opt,name=provider"`
	// +optional
	Version string `json:"version,omitempty" protobuf:"bytes,3,opt,name=version"`
	// +optional
	Values *runtime.RawExtension `json:"values,omitempty" protobuf:"bytes,4,opt,name=values"`
}

// GitOpsAddon bootstraps a GitOps engine from a repository.
type GitOpsAddon struct {
	// Provider is fluxcd or argocd.
	// +optional
	Provider string `json:"provider,omitempty" protobuf:"bytes,1,opt,name=provider"`
	// +optional
	Version string `json:"version,omitempty" protobuf:"bytes,2,opt,name=version"`
	// +optional
	Repository *GitRepository `json:"repository,omitempty" protobuf:"bytes,3,opt,name=repository"`
}

// GitRepository is where GitOps reads the cluster's desired state.
type GitRepository struct {
	URL string `json:"url" protobuf:"bytes,1,opt,name=url"`
	// +optional
	Branch string `json:"branch,omitempty" protobuf:"bytes,2,opt,name=branch"`
	// +optional
	Path string `json:"path,omitempty" protobuf:"bytes,3,opt,name=path"`
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty" protobuf:"bytes,4,opt,name=secretRef"`
	// Interval is how often Flux fetches the repository: a new commit is applied within it, and
	// status.gitops shows its revision within it. Default 1m; at least 10s, at most 24h.
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty" protobuf:"bytes,5,opt,name=interval"`
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

// Reconciling and Stalled are kstatus's conditions (sigs.k8s.io/cli-utils, read by Flux's health
// checks): Reconciling True while a cluster is on its way to what its spec asks, from its create
// on; Stalled True while it is Failed; neither once it is Ready or Hibernated.
const (
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// TenantClusterStatus is the observed state of a tenant cluster.
type TenantClusterStatus struct {
	// +optional
	Phase TenantClusterPhase `json:"phase,omitempty" protobuf:"bytes,1,opt,name=phase,casttype=TenantClusterPhase"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" protobuf:"bytes,2,rep,name=conditions"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty" protobuf:"varint,3,opt,name=observedGeneration"`
	// +optional
	TenantNamespace string `json:"tenantNamespace,omitempty" protobuf:"bytes,4,opt,name=tenantNamespace"`
	// +optional
	ControlPlaneEndpoint string `json:"controlPlaneEndpoint,omitempty" protobuf:"bytes,5,opt,name=controlPlaneEndpoint"`
	// +optional
	KubeconfigSecretRef *LocalObjectReference `json:"kubeconfigSecretRef,omitempty" protobuf:"bytes,6,opt,name=kubeconfigSecretRef"`
	// +optional
	// +listType=atomic
	IPAllocationRefs []LocalObjectReference `json:"ipAllocationRefs,omitempty" protobuf:"bytes,7,rep,name=ipAllocationRefs"`
	// +optional
	ObservedState *ObservedClusterState `json:"observedState,omitempty" protobuf:"bytes,8,opt,name=observedState"`
	// LastOperation is the one-line progress of what the lifecycle controller is doing now.
	// +optional
	LastOperation *LastOperation `json:"lastOperation,omitempty" protobuf:"bytes,9,opt,name=lastOperation"`
	// DataStoreName is the datastore (a Steward/Kamaji DataStore, cluster-scoped) that holds the
	// tenant's data under its own key prefix: spec.controlPlane.dataStoreRef, or the one the
	// control plane provider placed it on, as its TenantControlPlane reports.
	// +optional
	DataStoreName string `json:"dataStoreName,omitempty" protobuf:"bytes,10,opt,name=dataStoreName"`
	// Restore records the last restore from spec.restoreFrom.
	// +optional
	Restore *RestoreStatus `json:"restore,omitempty" protobuf:"bytes,12,opt,name=restore"`
	// Credentials are the tenant's credentials: when each expires, and the rotation of the tenant
	// CA and the service-account key.
	// +optional
	Credentials *TenantCredentialsStatus `json:"credentials,omitempty" protobuf:"bytes,13,opt,name=credentials"`
	// Maintenance is the cluster's last maintenance and its next window.
	// +optional
	Maintenance *MaintenanceStatus `json:"maintenance,omitempty" protobuf:"bytes,14,opt,name=maintenance"`
	// GitOps is the sync of spec.addons.gitops.repository into the tenant by Flux (the
	// condition GitOpsSynced says why it is not in sync); absent without a repository.
	// +optional
	Gitops *GitOpsStatus `json:"gitops,omitempty" protobuf:"bytes,15,opt,name=gitops"`
}

// GitOpsStatus is what a TenantCluster's status says of its repository's sync.
type GitOpsStatus struct {
	// Revision is the revision Flux last applied in the tenant ("main@sha1:<commit>"), kept
	// while a later one fails.
	// +optional
	Revision string `json:"revision,omitempty" protobuf:"bytes,1,opt,name=revision"`
	// InSync is true when the tenant holds the repository's latest revision: Flux's
	// Kustomization is Ready at its GitRepository's artifact.
	InSync bool `json:"inSync" protobuf:"varint,2,opt,name=inSync"`
}

// TenantCredentialsStatus is what a TenantCluster's status says of its credentials (never a
// secret: names and times only).
type TenantCredentialsStatus struct {
	// Expiry lists the tenant's certificates by name (ca, apiserver, admin-kubeconfig, ...) and
	// when each expires.
	// +optional
	// +listType=map
	// +listMapKey=name
	Expiry []CredentialExpiry `json:"expiry,omitempty" protobuf:"bytes,1,rep,name=expiry"`
	// Rotation is the last or current rotation of the tenant CA and the service-account key.
	// +optional
	Rotation *CredentialsRotation `json:"rotation,omitempty" protobuf:"bytes,2,opt,name=rotation"`
}

// CredentialExpiry is when one credential of the tenant expires.
type CredentialExpiry struct {
	// Name names the credential.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// NotAfter is when it expires.
	NotAfter metav1.Time `json:"notAfter" protobuf:"bytes,2,opt,name=notAfter"`
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

// CredentialsRotationPhase is where a two-phase rotation stands (Gardener's phases).
type CredentialsRotationPhase string

const (
	// RotationPreparing: the new CA and key are made and trusted beside the old ones; nodes and
	// addons are moved over.
	RotationPreparing CredentialsRotationPhase = "Preparing"
	// RotationPrepared: old and new are trusted, everything runs on the new; waiting for the
	// complete operation.
	RotationPrepared CredentialsRotationPhase = "Prepared"
	// RotationCompleting: the old CA and key are being dropped.
	RotationCompleting CredentialsRotationPhase = "Completing"
	// RotationCompleted: only the new CA and key are trusted.
	RotationCompleted CredentialsRotationPhase = "Completed"
)

// CredentialsRotation is a rotation of the tenant CA and the service-account key, started and
// completed by the annotation butler.butlerlabs.dev/operation: rotate-credentials-start, then
// rotate-credentials-complete.
type CredentialsRotation struct {
	// Phase is Preparing, Prepared, Completing or Completed.
	Phase CredentialsRotationPhase `json:"phase" protobuf:"bytes,1,opt,name=phase,casttype=CredentialsRotationPhase"`
	// LastInitiationTime is when the last rotation started.
	// +optional
	LastInitiationTime *metav1.Time `json:"lastInitiationTime,omitempty" protobuf:"bytes,2,opt,name=lastInitiationTime"`
	// LastCompletionTime is when the last rotation completed.
	// +optional
	LastCompletionTime *metav1.Time `json:"lastCompletionTime,omitempty" protobuf:"bytes,3,opt,name=lastCompletionTime"`
}

// LastOperation is the one-line progress of the operation in flight or last finished (Gardener's
// lastOperation is the model).
type LastOperation struct {
	// Type is Create, Reconcile or Delete.
	Type string `json:"type" protobuf:"bytes,1,opt,name=type"`
	// State is Processing, Succeeded, Error (retried) or Failed (needs a person).
	State string `json:"state" protobuf:"bytes,2,opt,name=state"`
	// Progress is the share of the lifecycle steps done, 0 to 100.
	Progress int32 `json:"progress" protobuf:"varint,3,opt,name=progress"`
	// Description says what is being done or waited for.
	Description string `json:"description" protobuf:"bytes,4,opt,name=description"`
	// LastUpdateTime is when the state or the description last changed.
	// +optional
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty" protobuf:"bytes,5,opt,name=lastUpdateTime"`
}

// ObservedClusterState is what the tenant cluster reports of itself.
type ObservedClusterState struct {
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty" protobuf:"bytes,1,opt,name=kubernetesVersion"`
	// +optional
	Workers WorkerCounts `json:"workers,omitempty" protobuf:"bytes,2,opt,name=workers"`
	// +optional
	// +listType=map
	// +listMapKey=name
	Addons []ObservedAddon `json:"addons,omitempty" protobuf:"bytes,3,rep,name=addons"`
}

// WorkerCounts are the desired and ready workers.
type WorkerCounts struct {
	// +optional
	Desired int32 `json:"desired" protobuf:"varint,1,opt,name=desired"`
	// +optional
	Ready int32 `json:"ready" protobuf:"varint,2,opt,name=ready"`
}

// ObservedAddon is one addon as installed in the tenant cluster.
type ObservedAddon struct {
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// +optional
	Version string `json:"version,omitempty" protobuf:"bytes,2,opt,name=version"`
	// +optional
	Status string `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantClusterList is a list of TenantCluster.
type TenantClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []TenantCluster `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// KubeconfigRequest asks for a tenant cluster's admin kubeconfig (the tenantclusters/kubeconfig subresource).
type KubeconfigRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec KubeconfigRequestSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status KubeconfigRequestStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// KubeconfigRequestSpec says how long the kubeconfig should be valid.
type KubeconfigRequestSpec struct {
	// +optional
	ExpirationSeconds *int64 `json:"expirationSeconds,omitempty" protobuf:"varint,1,opt,name=expirationSeconds"`
}

// KubeconfigRequestStatus carries the issued kubeconfig.
type KubeconfigRequestStatus struct {
	// +optional
	Kubeconfig []byte `json:"kubeconfig,omitempty" protobuf:"bytes,1,opt,name=kubeconfig"`
	// +optional
	ExpirationTimestamp metav1.Time `json:"expirationTimestamp,omitempty" protobuf:"bytes,2,opt,name=expirationTimestamp"`
	// User is the user name the kubeconfig's certificate gives the tenant cluster: the asker's,
	// prefixed "butler:" (and ending ":readonly" for a read-only kubeconfig).
	// +optional
	User string `json:"user,omitempty" protobuf:"bytes,3,opt,name=user"`
	// Groups are the certificate's groups: the asker's groups that the cluster's Team lists,
	// prefixed "butler:group:". They carry identity only; the Team's bindings in the tenant
	// give the role.
	// +optional
	// +listType=atomic
	Groups []string `json:"groups,omitempty" protobuf:"bytes,4,rep,name=groups"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantAddon is an addon installed into one tenant cluster.
type TenantAddon struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec   TenantAddonSpec   `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	Status TenantAddonStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// TenantAddonSpec is the desired addon. Exactly one of addon and helm is set.
type TenantAddonSpec struct {
	// ClusterRef names a TenantCluster in the same namespace.
	ClusterRef LocalObjectReference `json:"clusterRef" protobuf:"bytes,1,opt,name=clusterRef"`
	// Addon names an AddonDefinition from the catalog.
	// +optional
	Addon string `json:"addon,omitempty" protobuf:"bytes,2,opt,name=addon"`
	// Helm installs a chart that is not in the catalog.
	// +optional
	Helm *HelmChartSpec `json:"helm,omitempty" protobuf:"bytes,3,opt,name=helm"`
	// +optional
	Version string `json:"version,omitempty" protobuf:"bytes,4,opt,name=version"`
	// +optional
	Values *runtime.RawExtension `json:"values,omitempty" protobuf:"bytes,5,opt,name=values"`
	// DependsOn names other TenantAddons of the same cluster.
	// +optional
	// +listType=map
	// +listMapKey=name
	DependsOn []LocalObjectReference `json:"dependsOn,omitempty" protobuf:"bytes,6,rep,name=dependsOn"`
}

// HelmChartSpec is a chart installed directly.
type HelmChartSpec struct {
	Repository string `json:"repository" protobuf:"bytes,1,opt,name=repository"`
	Chart      string `json:"chart" protobuf:"bytes,2,opt,name=chart"`
	// +optional
	ReleaseName string `json:"releaseName,omitempty" protobuf:"bytes,3,opt,name=releaseName"`
	// +optional
	Namespace string `json:"namespace,omitempty" protobuf:"bytes,4,opt,name=namespace"`
	// +optional
	CreateNamespace *bool `json:"createNamespace,omitempty" protobuf:"varint,5,opt,name=createNamespace"`
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
	Phase TenantAddonPhase `json:"phase,omitempty" protobuf:"bytes,1,opt,name=phase,casttype=TenantAddonPhase"`
	// +optional
	InstalledVersion string `json:"installedVersion,omitempty" protobuf:"bytes,2,opt,name=installedVersion"`
	// +optional
	HelmRelease *HelmReleaseStatus `json:"helmRelease,omitempty" protobuf:"bytes,3,opt,name=helmRelease"`
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,4,opt,name=message"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty" protobuf:"varint,5,opt,name=observedGeneration"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" protobuf:"bytes,6,rep,name=conditions"`
}

// HelmReleaseStatus is the Helm release behind an addon.
type HelmReleaseStatus struct {
	// +optional
	Name string `json:"name,omitempty" protobuf:"bytes,1,opt,name=name"`
	// +optional
	Namespace string `json:"namespace,omitempty" protobuf:"bytes,2,opt,name=namespace"`
	// +optional
	Version string `json:"version,omitempty" protobuf:"bytes,3,opt,name=version"`
	// +optional
	Revision int32 `json:"revision,omitempty" protobuf:"varint,4,opt,name=revision"`
	// +optional
	Status string `json:"status,omitempty" protobuf:"bytes,5,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantAddonList is a list of TenantAddon.
type TenantAddonList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []TenantAddon `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// AddonDefinition is one entry of the addon catalog. It has no status.
type AddonDefinition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec AddonDefinitionSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
}

// AddonCategory groups catalog entries.
type AddonCategory string

// AddonDefinitionSpec describes an addon and its chart.
type AddonDefinitionSpec struct {
	// +optional
	DisplayName string `json:"displayName,omitempty" protobuf:"bytes,1,opt,name=displayName"`
	// +optional
	Description string         `json:"description,omitempty" protobuf:"bytes,2,opt,name=description"`
	Category    AddonCategory  `json:"category" protobuf:"bytes,3,opt,name=category,casttype=AddonCategory"`
	Chart       ChartReference `json:"chart" protobuf:"bytes,4,opt,name=chart"`
	// +optional
	Defaults *AddonDefaults `json:"defaults,omitempty" protobuf:"bytes,5,opt,name=defaults"`
	// Platform marks addons the platform itself installs.
	// +optional
	Platform bool `json:"platform,omitempty" protobuf:"varint,6,opt,name=platform"`
	// DependsOn names other AddonDefinitions.
	// +optional
	// +listType=set
	DependsOn []string `json:"dependsOn,omitempty" protobuf:"bytes,7,rep,name=dependsOn"`
	// TrustTeamValues lets the chart install with values a Team sets (a TenantAddon's
	// spec.values, a TenantCluster's spec.addons.<slot>.values) as the chart is. Without it such
	// a TenantAddon is rendered first and refused when it grants more than edit, as a chart named
	// by repository is.
	// +optional
	TrustTeamValues bool `json:"trustTeamValues,omitempty" protobuf:"varint,8,opt,name=trustTeamValues"`
}

// ChartReference locates a Helm chart.
type ChartReference struct {
	// Repository is an http(s):// or oci:// URL, or a local path for bundled charts.
	Repository string `json:"repository" protobuf:"bytes,1,opt,name=repository"`
	Name       string `json:"name" protobuf:"bytes,2,opt,name=name"`
	// +optional
	DefaultVersion string `json:"defaultVersion,omitempty" protobuf:"bytes,3,opt,name=defaultVersion"`
	// +optional
	// +listType=set
	AvailableVersions []string `json:"availableVersions,omitempty" protobuf:"bytes,4,rep,name=availableVersions"`
}

// AddonDefaults are the install defaults of a catalog addon.
type AddonDefaults struct {
	// +optional
	Namespace string `json:"namespace,omitempty" protobuf:"bytes,1,opt,name=namespace"`
	// +optional
	ReleaseName string `json:"releaseName,omitempty" protobuf:"bytes,2,opt,name=releaseName"`
	// +optional
	CreateNamespace *bool `json:"createNamespace,omitempty" protobuf:"varint,3,opt,name=createNamespace"`
	// +optional
	Values *runtime.RawExtension `json:"values,omitempty" protobuf:"bytes,4,opt,name=values"`
	// Timeout is a duration such as 10m.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty" protobuf:"bytes,5,opt,name=timeout"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// AddonDefinitionList is a list of AddonDefinition.
type AddonDefinitionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []AddonDefinition `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// +genclient
// +genclient:method=Allocate,verb=create,subresource=allocate,input=IPAllocation,result=IPAllocation
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NetworkPool is a range of addresses handed out to tenants.
type NetworkPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec   NetworkPoolSpec   `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	Status NetworkPoolStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// NetworkPoolSpec is the address space of a pool.
type NetworkPoolSpec struct {
	// CIDR is the pool's IPv4 or IPv6 prefix.
	CIDR string `json:"cidr" protobuf:"bytes,1,opt,name=cidr"`
	// Reserved CIDRs inside cidr are never handed out.
	// +optional
	// +listType=atomic
	Reserved []ReservedRange `json:"reserved,omitempty" protobuf:"bytes,2,rep,name=reserved"`
	// Ranges are the parts of cidr that may be handed out; empty means all of cidr
	// less the network and broadcast addresses.
	// +optional
	// +listType=atomic
	Ranges []AddressRange `json:"ranges,omitempty" protobuf:"bytes,3,rep,name=ranges"`
	// +optional
	Defaults PoolDefaults `json:"defaults,omitempty" protobuf:"bytes,4,opt,name=defaults"`
}

// ReservedRange is a CIDR kept out of allocation.
type ReservedRange struct {
	CIDR string `json:"cidr" protobuf:"bytes,1,opt,name=cidr"`
	// +optional
	Description string `json:"description,omitempty" protobuf:"bytes,2,opt,name=description"`
}

// PoolDefaults are the allocation sizes used when a request gives none.
type PoolDefaults struct {
	// +optional
	NodesPerTenant *int32 `json:"nodesPerTenant,omitempty" protobuf:"varint,1,opt,name=nodesPerTenant"`
	// +optional
	LBPoolPerTenant *int32 `json:"lbPoolPerTenant,omitempty" protobuf:"varint,2,opt,name=lbPoolPerTenant"`
}

// NetworkPoolStatus is computed from the allocation state, never taken from a client.
type NetworkPoolStatus struct {
	// +optional
	TotalIPs int64 `json:"totalIPs" protobuf:"varint,1,opt,name=totalIPs"`
	// +optional
	AllocatedIPs int64 `json:"allocatedIPs" protobuf:"varint,2,opt,name=allocatedIPs"`
	// +optional
	AvailableIPs int64 `json:"availableIPs" protobuf:"varint,3,opt,name=availableIPs"`
	// +optional
	AllocationCount int32 `json:"allocationCount" protobuf:"varint,4,opt,name=allocationCount"`
	// FragmentationPercent is 100 - largest free block * 100 / total free.
	// +optional
	FragmentationPercent int32 `json:"fragmentationPercent" protobuf:"varint,5,opt,name=fragmentationPercent"`
	// +optional
	LargestFreeBlock int64 `json:"largestFreeBlock" protobuf:"varint,6,opt,name=largestFreeBlock"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty" protobuf:"varint,7,opt,name=observedGeneration"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" protobuf:"bytes,8,rep,name=conditions"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NetworkPoolList is a list of NetworkPool.
type NetworkPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []NetworkPool `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// IPAllocation is a block of addresses held by one tenant.
type IPAllocation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec   IPAllocationSpec   `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	Status IPAllocationStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
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
	PoolRef LocalObjectReference `json:"poolRef" protobuf:"bytes,1,opt,name=poolRef"`
	// +optional
	TenantClusterRef *NamespacedObjectReference `json:"tenantClusterRef,omitempty" protobuf:"bytes,2,opt,name=tenantClusterRef"`
	Type             IPAllocationType           `json:"type" protobuf:"bytes,3,opt,name=type,casttype=IPAllocationType"`
	// +optional
	Count *int32 `json:"count,omitempty" protobuf:"varint,4,opt,name=count"`
	// +optional
	PinnedRange *PinnedRange `json:"pinnedRange,omitempty" protobuf:"bytes,5,opt,name=pinnedRange"`
}

// PinnedRange is an exact inclusive range to reserve.
type PinnedRange struct {
	StartAddress string `json:"startAddress" protobuf:"bytes,1,opt,name=startAddress"`
	EndAddress   string `json:"endAddress" protobuf:"bytes,2,opt,name=endAddress"`
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
	Phase IPAllocationPhase `json:"phase,omitempty" protobuf:"bytes,1,opt,name=phase,casttype=IPAllocationPhase"`
	// +optional
	StartAddress string `json:"startAddress,omitempty" protobuf:"bytes,2,opt,name=startAddress"`
	// +optional
	EndAddress string `json:"endAddress,omitempty" protobuf:"bytes,3,opt,name=endAddress"`
	// CIDR is set only when the block is an aligned power of two.
	// +optional
	CIDR string `json:"cidr,omitempty" protobuf:"bytes,4,opt,name=cidr"`
	// Addresses lists the block, capped for huge blocks.
	// +optional
	// +listType=atomic
	Addresses []string `json:"addresses,omitempty" protobuf:"bytes,5,rep,name=addresses"`
	// +optional
	AllocatedCount int64 `json:"allocatedCount,omitempty" protobuf:"varint,6,opt,name=allocatedCount"`
	// +optional
	AllocatedAt *metav1.Time `json:"allocatedAt,omitempty" protobuf:"bytes,7,opt,name=allocatedAt"`
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,8,opt,name=message"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// IPAllocationList is a list of IPAllocation.
type IPAllocationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []IPAllocation `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ProviderConfig says where and how workers are made.
type ProviderConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec   ProviderConfigSpec   `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	Status ProviderConfigStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
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
	Provider ProviderType `json:"provider" protobuf:"bytes,1,opt,name=provider,casttype=ProviderType"`
	// CredentialsRef is a Secret in the management cluster; optional only for local.
	// +optional
	CredentialsRef *SecretKeyReference `json:"credentialsRef,omitempty" protobuf:"bytes,2,opt,name=credentialsRef"`
	// +optional
	Harvester *HarvesterConfig `json:"harvester,omitempty" protobuf:"bytes,3,opt,name=harvester"`
	// +optional
	Nutanix *NutanixConfig `json:"nutanix,omitempty" protobuf:"bytes,4,opt,name=nutanix"`
	// +optional
	Proxmox *ProxmoxConfig `json:"proxmox,omitempty" protobuf:"bytes,5,opt,name=proxmox"`
	// +optional
	AWS *AWSConfig `json:"aws,omitempty" protobuf:"bytes,6,opt,name=aws"`
	// +optional
	Azure *AzureConfig `json:"azure,omitempty" protobuf:"bytes,7,opt,name=azure"`
	// +optional
	GCP *GCPConfig `json:"gcp,omitempty" protobuf:"bytes,8,opt,name=gcp"`
	// +optional
	Network ProviderNetwork `json:"network,omitempty" protobuf:"bytes,9,opt,name=network"`
	// +optional
	Scope ProviderScope `json:"scope,omitempty" protobuf:"bytes,10,opt,name=scope"`
	// +optional
	Limits *ProviderLimits `json:"limits,omitempty" protobuf:"bytes,11,opt,name=limits"`
	// Local are the settings of provider local; only with it.
	// +optional
	Local *LocalConfig `json:"local,omitempty" protobuf:"bytes,12,opt,name=local"`
}

// LocalNodeType is the kind of node a local machine is.
type LocalNodeType string

const (
	// LocalNodeKwok is a Node the tenant's kwok keeps Ready: nothing runs (cheap, for density).
	LocalNodeKwok LocalNodeType = "kwok"
	// LocalNodeReal is a kubelet, containerd and runc in a network namespace of its own on the
	// local provider's host, which runs the pods.
	LocalNodeReal LocalNodeType = "real"
)

// LocalConfig are the local provider's settings. Real nodes run the tenants' pods as processes
// on the provider's host, so they are the platform's choice (a ProviderConfig offered to the
// Teams it trusts with them), not a TenantCluster field every operator could set.
type LocalConfig struct {
	// NodeType is what the workers of the clusters on this ProviderConfig are: kwok (the
	// default) or real. Immutable: the clusters' machines were made with it.
	// +optional
	NodeType LocalNodeType `json:"nodeType,omitempty" protobuf:"bytes,1,opt,name=nodeType,casttype=LocalNodeType"`
}

// SecretKeyReference names a key of a Secret.
type SecretKeyReference struct {
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// +optional
	Namespace string `json:"namespace,omitempty" protobuf:"bytes,2,opt,name=namespace"`
	// +optional
	Key string `json:"key,omitempty" protobuf:"bytes,3,opt,name=key"`
}

// HarvesterConfig are Harvester settings.
type HarvesterConfig struct {
	// +optional
	Endpoint string `json:"endpoint,omitempty" protobuf:"bytes,1,opt,name=endpoint"`
	// +optional
	Namespace string `json:"namespace,omitempty" protobuf:"bytes,2,opt,name=namespace"`
	// NetworkName is namespace/name of a Harvester VM network.
	NetworkName string `json:"networkName" protobuf:"bytes,3,opt,name=networkName"`
	// +optional
	ImageName string `json:"imageName,omitempty" protobuf:"bytes,4,opt,name=imageName"`
	// +optional
	StorageClassName string `json:"storageClassName,omitempty" protobuf:"bytes,5,opt,name=storageClassName"`
}

// NutanixConfig are Nutanix Prism settings.
type NutanixConfig struct {
	Endpoint string `json:"endpoint" protobuf:"bytes,1,opt,name=endpoint"`
	// +optional
	Port int32 `json:"port,omitempty" protobuf:"varint,2,opt,name=port"`
	// +optional
	Insecure    bool   `json:"insecure,omitempty" protobuf:"varint,3,opt,name=insecure"`
	ClusterUUID string `json:"clusterUUID" protobuf:"bytes,4,opt,name=clusterUUID"`
	SubnetUUID  string `json:"subnetUUID" protobuf:"bytes,5,opt,name=subnetUUID"`
	// +optional
	ImageUUID string `json:"imageUUID,omitempty" protobuf:"bytes,6,opt,name=imageUUID"`
	// +optional
	StorageContainerUUID string `json:"storageContainerUUID,omitempty" protobuf:"bytes,7,opt,name=storageContainerUUID"`
}

// ProxmoxConfig are Proxmox VE settings.
type ProxmoxConfig struct {
	Endpoint string `json:"endpoint" protobuf:"bytes,1,opt,name=endpoint"`
	// +optional
	Insecure bool `json:"insecure,omitempty" protobuf:"varint,2,opt,name=insecure"`
	// +listType=set
	Nodes   []string `json:"nodes" protobuf:"bytes,3,rep,name=nodes"`
	Storage string   `json:"storage" protobuf:"bytes,4,opt,name=storage"`
	// +optional
	TemplateID int32 `json:"templateID,omitempty" protobuf:"varint,5,opt,name=templateID"`
	// +optional
	VMIDRange *VMIDRange `json:"vmidRange,omitempty" protobuf:"bytes,6,opt,name=vmidRange"`
}

// VMIDRange bounds the Proxmox VM ids Butler uses.
type VMIDRange struct {
	Start int32 `json:"start" protobuf:"varint,1,opt,name=start"`
	End   int32 `json:"end" protobuf:"varint,2,opt,name=end"`
}

// AWSConfig are AWS settings.
type AWSConfig struct {
	Region string `json:"region" protobuf:"bytes,1,opt,name=region"`
	// +optional
	VPCID string `json:"vpcID,omitempty" protobuf:"bytes,2,opt,name=vpcID"`
	// +optional
	// +listType=set
	SubnetIDs []string `json:"subnetIDs,omitempty" protobuf:"bytes,3,rep,name=subnetIDs"`
	// +optional
	// +listType=set
	SecurityGroupIDs []string `json:"securityGroupIDs,omitempty" protobuf:"bytes,4,rep,name=securityGroupIDs"`
}

// AzureConfig are Azure settings.
type AzureConfig struct {
	SubscriptionID string `json:"subscriptionID" protobuf:"bytes,1,opt,name=subscriptionID"`
	ResourceGroup  string `json:"resourceGroup" protobuf:"bytes,2,opt,name=resourceGroup"`
	// +optional
	Location string `json:"location,omitempty" protobuf:"bytes,3,opt,name=location"`
	// +optional
	VnetName string `json:"vnetName,omitempty" protobuf:"bytes,4,opt,name=vnetName"`
	// +optional
	SubnetName string `json:"subnetName,omitempty" protobuf:"bytes,5,opt,name=subnetName"`
	// +optional
	VMSize string `json:"vmSize,omitempty" protobuf:"bytes,6,opt,name=vmSize"`
}

// GCPConfig are Google Cloud settings.
type GCPConfig struct {
	ProjectID string `json:"projectID" protobuf:"bytes,1,opt,name=projectID"`
	Region    string `json:"region" protobuf:"bytes,2,opt,name=region"`
	// +optional
	Zone string `json:"zone,omitempty" protobuf:"bytes,3,opt,name=zone"`
	// +optional
	Network string `json:"network,omitempty" protobuf:"bytes,4,opt,name=network"`
	// +optional
	Subnetwork string `json:"subnetwork,omitempty" protobuf:"bytes,5,opt,name=subnetwork"`
	// +optional
	MachineType string `json:"machineType,omitempty" protobuf:"bytes,6,opt,name=machineType"`
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
	Mode NetworkMode `json:"mode,omitempty" protobuf:"bytes,1,opt,name=mode,casttype=NetworkMode"`
	// +optional
	// +listType=map
	// +listMapKey=name
	PoolRefs []PoolReference `json:"poolRefs,omitempty" protobuf:"bytes,2,rep,name=poolRefs"`
	// +optional
	Subnet string `json:"subnet,omitempty" protobuf:"bytes,3,opt,name=subnet"`
	// +optional
	Gateway string `json:"gateway,omitempty" protobuf:"bytes,4,opt,name=gateway"`
	// +optional
	// +listType=atomic
	DNSServers []string `json:"dnsServers,omitempty" protobuf:"bytes,5,rep,name=dnsServers"`
	// +optional
	LoadBalancer *LoadBalancerAllocation `json:"loadBalancer,omitempty" protobuf:"bytes,6,opt,name=loadBalancer"`
	// +optional
	QuotaPerTenant *TenantIPQuota `json:"quotaPerTenant,omitempty" protobuf:"bytes,7,opt,name=quotaPerTenant"`
}

// PoolReference is a NetworkPool and its priority (lower first).
type PoolReference struct {
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// +optional
	Priority int32 `json:"priority,omitempty" protobuf:"varint,2,opt,name=priority"`
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
	DefaultPoolSize *int32 `json:"defaultPoolSize,omitempty" protobuf:"varint,1,opt,name=defaultPoolSize"`
	// +optional
	AllocationMode LBAllocationMode `json:"allocationMode,omitempty" protobuf:"bytes,2,opt,name=allocationMode,casttype=LBAllocationMode"`
	// +optional
	InitialPoolSize *int32 `json:"initialPoolSize,omitempty" protobuf:"varint,3,opt,name=initialPoolSize"`
	// +optional
	GrowthIncrement *int32 `json:"growthIncrement,omitempty" protobuf:"varint,4,opt,name=growthIncrement"`
}

// TenantIPQuota bounds the addresses one tenant may hold.
type TenantIPQuota struct {
	// +optional
	MaxNodeIPs *int32 `json:"maxNodeIPs,omitempty" protobuf:"varint,1,opt,name=maxNodeIPs"`
	// +optional
	MaxLoadBalancerIPs *int32 `json:"maxLoadBalancerIPs,omitempty" protobuf:"varint,2,opt,name=maxLoadBalancerIPs"`
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
	Type ScopeType `json:"type,omitempty" protobuf:"bytes,1,opt,name=type,casttype=ScopeType"`
	// +optional
	TeamRef *LocalObjectReference `json:"teamRef,omitempty" protobuf:"bytes,2,opt,name=teamRef"`
}

// ProviderLimits bound what Teams may create through this provider.
type ProviderLimits struct {
	// +optional
	MaxClustersPerTeam *int32 `json:"maxClustersPerTeam,omitempty" protobuf:"varint,1,opt,name=maxClustersPerTeam"`
	// +optional
	MaxNodesPerTeam *int32 `json:"maxNodesPerTeam,omitempty" protobuf:"varint,2,opt,name=maxNodesPerTeam"`
}

// ProviderConfigStatus is the observed state of a provider.
type ProviderConfigStatus struct {
	// +optional
	Validated bool `json:"validated,omitempty" protobuf:"varint,1,opt,name=validated"`
	// +optional
	Ready bool `json:"ready,omitempty" protobuf:"varint,2,opt,name=ready"`
	// +optional
	Capacity *ProviderCapacity `json:"capacity,omitempty" protobuf:"bytes,3,opt,name=capacity"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty" protobuf:"varint,4,opt,name=observedGeneration"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" protobuf:"bytes,5,rep,name=conditions"`
}

// ProviderCapacity is what the provider's pools can still hold.
type ProviderCapacity struct {
	// +optional
	AvailableIPs int64 `json:"availableIPs,omitempty" protobuf:"varint,1,opt,name=availableIPs"`
	// +optional
	EstimatedTenants int32 `json:"estimatedTenants,omitempty" protobuf:"varint,2,opt,name=estimatedTenants"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ProviderConfigList is a list of ProviderConfig.
type ProviderConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []ProviderConfig `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantClusterSnapshot is a TenantCluster's whole datastore key range at one etcd revision,
// kept in the snapshot store that ButlerConfig names. It points to its cluster by the label
// butler.butlerlabs.dev/cluster, not an owner reference: it outlives the cluster. Deleting it
// deletes its data.
type TenantClusterSnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec   TenantClusterSnapshotSpec   `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	Status TenantClusterSnapshotStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// TenantClusterSnapshotSpec says which cluster to snapshot. It is immutable.
type TenantClusterSnapshotSpec struct {
	// ClusterRef names a TenantCluster in the same namespace.
	ClusterRef LocalObjectReference `json:"clusterRef" protobuf:"bytes,1,opt,name=clusterRef"`
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
	// +optional
	Phase SnapshotPhase `json:"phase,omitempty" protobuf:"bytes,1,opt,name=phase,casttype=SnapshotPhase"`
	// Revision is the datastore's etcd revision the snapshot was read at: every write of the
	// cluster up to it is in the snapshot, none after.
	// +optional
	Revision int64 `json:"revision,omitempty" protobuf:"varint,2,opt,name=revision"`
	// ObjectCount is the number of keys in the snapshot.
	// +optional
	ObjectCount int64 `json:"objectCount,omitempty" protobuf:"varint,3,opt,name=objectCount"`
	// Bytes is the size of the stored (compressed) snapshot.
	// +optional
	Bytes int64 `json:"bytes,omitempty" protobuf:"varint,4,opt,name=bytes"`
	// Checksum is "sha256:<hex>" of the stored bytes; a restore refuses data that does not match.
	// +optional
	Checksum string `json:"checksum,omitempty" protobuf:"bytes,5,opt,name=checksum"`
	// Location is where the snapshot store keeps the data (a path or an object URL).
	// +optional
	Location string `json:"location,omitempty" protobuf:"bytes,6,opt,name=location"`
	// KubernetesVersion is the cluster's version when the snapshot was taken: a cluster of an
	// older version cannot restore it.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty" protobuf:"bytes,7,opt,name=kubernetesVersion"`
	// DataStoreName is the datastore the snapshot was read from.
	// +optional
	DataStoreName string `json:"dataStoreName,omitempty" protobuf:"bytes,8,opt,name=dataStoreName"`
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty" protobuf:"bytes,9,opt,name=startTime"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty" protobuf:"bytes,10,opt,name=completionTime"`
	// Message says why a snapshot waits or failed.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,11,opt,name=message"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantClusterSnapshotList is a list of TenantClusterSnapshots.
type TenantClusterSnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []TenantClusterSnapshot `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// RestoreSource names the snapshot a TenantCluster's data comes from.
type RestoreSource struct {
	// Name is a TenantClusterSnapshot in the cluster's namespace.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// Confirm must be the cluster's own name to restore an existing cluster in place: every
	// object the cluster holds now is replaced by the snapshot's. A new cluster needs none.
	// +optional
	Confirm string `json:"confirm,omitempty" protobuf:"bytes,2,opt,name=confirm"`
}

// RestoreStatus records a restore, so that it runs once.
type RestoreStatus struct {
	// SnapshotName and SnapshotUID identify the snapshot restored.
	SnapshotName string `json:"snapshotName" protobuf:"bytes,1,opt,name=snapshotName"`
	// +optional
	SnapshotUID string `json:"snapshotUID,omitempty" protobuf:"bytes,2,opt,name=snapshotUID"`
	// Revision is the snapshot's revision.
	// +optional
	Revision int64 `json:"revision,omitempty" protobuf:"varint,3,opt,name=revision"`
	// InPlace is true for a rollback of an existing cluster, false for a new cluster made from it.
	// +optional
	InPlace bool `json:"inPlace,omitempty" protobuf:"varint,4,opt,name=inPlace"`
	// Phase is Running, Succeeded or Failed.
	// +optional
	Phase string `json:"phase,omitempty" protobuf:"bytes,5,opt,name=phase"`
	// ObjectCount is the number of keys written; Dropped those left out because they carry the
	// source cluster's identity (a new cluster only).
	// +optional
	ObjectCount int64 `json:"objectCount,omitempty" protobuf:"varint,6,opt,name=objectCount"`
	// +optional
	Dropped int64 `json:"dropped,omitempty" protobuf:"varint,7,opt,name=dropped"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty" protobuf:"bytes,8,opt,name=completionTime"`
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,9,opt,name=message"`
}

// SnapshotStore is where TenantClusterSnapshots keep their data.
type SnapshotStore struct {
	// Directory keeps each snapshot as a file under path, on the machine of the control plane
	// provider that takes it. Without a snapshotStore, the provider's own directory is used.
	// +optional
	Directory *DirectorySnapshotStore `json:"directory,omitempty" protobuf:"bytes,1,opt,name=directory"`
	// S3 keeps each snapshot as an object in a bucket of S3-compatible object storage.
	// +optional
	S3 *S3SnapshotStore `json:"s3,omitempty" protobuf:"bytes,2,opt,name=s3"`
}

// S3SnapshotStore is a bucket of S3-compatible object storage.
type S3SnapshotStore struct {
	// Endpoint is the server's URL, https://host[:port] (http:// sends the data and the signed
	// requests unencrypted: for a server on the same machine only).
	Endpoint string `json:"endpoint" protobuf:"bytes,1,opt,name=endpoint"`
	// Bucket is an existing bucket.
	Bucket string `json:"bucket" protobuf:"bytes,2,opt,name=bucket"`
	// Prefix goes before every object's name, such as "butler/".
	// +optional
	Prefix string `json:"prefix,omitempty" protobuf:"bytes,3,opt,name=prefix"`
	// Region is the bucket's region; empty asks the server.
	// +optional
	Region string `json:"region,omitempty" protobuf:"bytes,4,opt,name=region"`
	// CredentialsSecretRef is a Secret in the management cluster with the keys accessKeyID and
	// secretAccessKey. The keys are read when a snapshot is taken, restored or deleted, and
	// never copied into any status.
	CredentialsSecretRef NamespacedObjectReference `json:"credentialsSecretRef" protobuf:"bytes,5,opt,name=credentialsSecretRef"`
}

// DirectorySnapshotStore is a directory snapshot store.
type DirectorySnapshotStore struct {
	// Path is an absolute directory path.
	Path string `json:"path" protobuf:"bytes,1,opt,name=path"`
}

// Labels, finalizers and restore phases of snapshots.
const (
	// SnapshotClusterLabel on a TenantClusterSnapshot names its TenantCluster (same namespace).
	SnapshotClusterLabel = "butler.butlerlabs.dev/tenant-cluster"
	// SnapshotDataFinalizer holds a deleted TenantClusterSnapshot until its data is deleted.
	SnapshotDataFinalizer = "butler.butlerlabs.dev/snapshot-data"
	// SnapshotScheduleLabel on a TenantClusterSnapshot names the schedule of its cluster's
	// spec.snapshots that took it; retention and onClusterDelete act on these only.
	SnapshotScheduleLabel = "butler.butlerlabs.dev/snapshot-schedule"
	// SnapshotSchedulesAnnotation on a TenantCluster records, per schedule, the last firing
	// handled (JSON: name to RFC 3339 time), so that a restarted controller takes none twice.
	SnapshotSchedulesAnnotation = "butler.butlerlabs.dev/snapshot-schedules"

	// RestoreFromAnnotation on a cluster's control plane object (StewardControlPlane, and from
	// it the TenantControlPlane) names the snapshot its spec.restoreFrom names: a provider that
	// restores tenants (the local one) looks at the cluster only when it is there.
	RestoreFromAnnotation = "butler.butlerlabs.dev/restore-from"
	// RestorePinAnnotation on a TenantCluster names the TenantClusterSnapshot admission admitted
	// for its spec.restoreFrom, as "<cluster>/<uid>" (RestorePin): a snapshot deleted and made
	// again under the same name since is another one, and the TenantCluster controller refuses it. Admission
	// writes it; the registry keeps it from clients.
	RestorePinAnnotation = "butler.butlerlabs.dev/restore-pin"

	RestoreRunning   = "Running"
	RestoreSucceeded = "Succeeded"
	RestoreFailed    = "Failed"
)
