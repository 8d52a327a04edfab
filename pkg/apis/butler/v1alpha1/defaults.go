package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Defaults written into stored objects, as API.md lists them.
const (
	DefaultTenantNamespace = "butler-tenants"
	DefaultPodCIDR         = "10.244.0.0/16"
	DefaultServiceCIDR     = "10.96.0.0/12"
	DefaultWorkerCPU       = 4
	DefaultWorkerMemory    = "16Gi"
	DefaultWorkerDiskSize  = "100Gi"
	DefaultNodesPerTenant  = 5
	DefaultLBPoolPerTenant = 8
)

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

func SetDefaults_ButlerConfigSpec(obj *ButlerConfigSpec) {
	if obj.MultiTenancy.Mode == "" {
		obj.MultiTenancy.Mode = MultiTenancyDisabled
	}
	if obj.DefaultNamespace == "" {
		obj.DefaultNamespace = DefaultTenantNamespace
	}
	if obj.ControlPlaneExposure.Mode == "" {
		obj.ControlPlaneExposure.Mode = ExposureLoadBalancer
	}
}

func SetDefaults_TeamMember(obj *TeamMember) {
	if obj.Role == "" {
		obj.Role = TeamRoleViewer
	}
}

func SetDefaults_ControlPlaneSpec(obj *ControlPlaneSpec) {
	if obj.Type == "" {
		obj.Type = ControlPlaneHosted
	}
	if obj.Replicas == nil {
		obj.Replicas = ptr.To[int32](1)
	}
}

func SetDefaults_NetworkingSpec(obj *NetworkingSpec) {
	if obj.PodCIDR == "" {
		obj.PodCIDR = DefaultPodCIDR
	}
	if obj.ServiceCIDR == "" {
		obj.ServiceCIDR = DefaultServiceCIDR
	}
}

func SetDefaults_MachineTemplate(obj *MachineTemplate) {
	if obj.CPU == nil {
		obj.CPU = ptr.To[int32](DefaultWorkerCPU)
	}
	if obj.Memory == nil {
		obj.Memory = ptr.To(resource.MustParse(DefaultWorkerMemory))
	}
	if obj.DiskSize == nil {
		obj.DiskSize = ptr.To(resource.MustParse(DefaultWorkerDiskSize))
	}
	if obj.OS.Type == "" {
		obj.OS.Type = OSTalos
	}
}

func SetDefaults_NetworkPoolSpec(obj *NetworkPoolSpec) {
	if obj.Defaults.NodesPerTenant == nil {
		obj.Defaults.NodesPerTenant = ptr.To[int32](DefaultNodesPerTenant)
	}
	if obj.Defaults.LBPoolPerTenant == nil {
		obj.Defaults.LBPoolPerTenant = ptr.To[int32](DefaultLBPoolPerTenant)
	}
}

func SetDefaults_ProviderNetwork(obj *ProviderNetwork) {
	if obj.Mode == "" {
		obj.Mode = NetworkModeCloud
	}
}

func SetDefaults_LoadBalancerAllocation(obj *LoadBalancerAllocation) {
	if obj.DefaultPoolSize == nil {
		obj.DefaultPoolSize = ptr.To[int32](8)
	}
	if obj.AllocationMode == "" {
		obj.AllocationMode = LBAllocationStatic
	}
	if obj.InitialPoolSize == nil {
		obj.InitialPoolSize = ptr.To[int32](2)
	}
	if obj.GrowthIncrement == nil {
		obj.GrowthIncrement = ptr.To[int32](2)
	}
}

func SetDefaults_ProviderScope(obj *ProviderScope) {
	if obj.Type == "" {
		obj.Type = ScopePlatform
	}
}

func SetDefaults_HelmChartSpec(obj *HelmChartSpec) {
	if obj.CreateNamespace == nil {
		obj.CreateNamespace = ptr.To(true)
	}
}

func SetDefaults_UpdateRunSpec(obj *UpdateRunSpec) {
	if obj.OnFailure == "" {
		obj.OnFailure = UpdateFailurePause
	}
	if obj.State == "" {
		obj.State = UpdateRunStateRun
	}
}

func SetDefaults_UpdateStage(obj *UpdateStage) {
	if obj.MaxConcurrency == nil {
		obj.MaxConcurrency = ptr.To(intstr.FromInt32(1))
	}
}
