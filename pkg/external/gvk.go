package external

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// API groups of the external kinds.
const (
	CAPIGroup             = "cluster.x-k8s.io"
	ControlPlaneGroup     = "controlplane.cluster.x-k8s.io"
	KubeadmBootstrapGroup = "bootstrap.cluster.x-k8s.io"
	InfrastructureGroup   = "infrastructure.cluster.x-k8s.io"
	StewardGroup          = "steward.butlerlabs.dev"
	KamajiGroup           = "kamaji.clastix.io"
	// BootstrapGroup is butler's CAPI bootstrap provider.
	BootstrapGroup = "bootstrap.butlerlabs.dev"
	// LocalInfrastructureGroup is butler's local infrastructure provider.
	LocalInfrastructureGroup = "infrastructure.butlerlabs.dev"
)

// Cluster API core (v1beta2, CAPI v1.14).
var (
	ClusterGVK           = schema.GroupVersionKind{Group: CAPIGroup, Version: "v1beta2", Kind: "Cluster"}
	MachineDeploymentGVK = schema.GroupVersionKind{Group: CAPIGroup, Version: "v1beta2", Kind: "MachineDeployment"}
	// MachineHealthCheckGVK is Cluster API's health check of a cluster's machines (auto-repair).
	MachineHealthCheckGVK = schema.GroupVersionKind{Group: CAPIGroup, Version: "v1beta2", Kind: "MachineHealthCheck"}
	MachineSetGVK         = schema.GroupVersionKind{Group: CAPIGroup, Version: "v1beta2", Kind: "MachineSet"}
	MachineGVK            = schema.GroupVersionKind{Group: CAPIGroup, Version: "v1beta2", Kind: "Machine"}
)

// Control planes.
var (
	// StewardControlPlaneGVK is capi-steward's control plane; it creates a Steward TenantControlPlane.
	StewardControlPlaneGVK = schema.GroupVersionKind{Group: ControlPlaneGroup, Version: "v1alpha1", Kind: "StewardControlPlane"}
	// KamajiControlPlaneGVK is Kamaji's CAPI control plane; it creates a Kamaji TenantControlPlane.
	KamajiControlPlaneGVK = schema.GroupVersionKind{Group: ControlPlaneGroup, Version: "v1alpha2", Kind: "KamajiControlPlane"}
	// KubeadmControlPlaneGVK runs a standalone control plane on machines.
	KubeadmControlPlaneGVK = schema.GroupVersionKind{Group: ControlPlaneGroup, Version: "v1beta2", Kind: "KubeadmControlPlane"}
	// KubeadmConfigTemplateGVK is the kubeadm bootstrap provider's template.
	KubeadmConfigTemplateGVK = schema.GroupVersionKind{Group: KubeadmBootstrapGroup, Version: "v1beta2", Kind: "KubeadmConfigTemplate"}

	// TenantControlPlaneGVK is Steward's hosted control plane.
	TenantControlPlaneGVK = schema.GroupVersionKind{Group: StewardGroup, Version: "v1alpha1", Kind: "TenantControlPlane"}
	// DataStoreGVK is where Steward's control planes keep their data (cluster-scoped).
	DataStoreGVK = schema.GroupVersionKind{Group: StewardGroup, Version: "v1alpha1", Kind: "DataStore"}
	// KamajiTenantControlPlaneGVK is Kamaji's hosted control plane (same shape as Steward's).
	KamajiTenantControlPlaneGVK = schema.GroupVersionKind{Group: KamajiGroup, Version: "v1alpha1", Kind: "TenantControlPlane"}
)

// Butler's own CAPI providers.
var (
	BootstrapConfigGVK         = schema.GroupVersionKind{Group: BootstrapGroup, Version: "v1alpha1", Kind: "BootstrapConfig"}
	BootstrapConfigTemplateGVK = schema.GroupVersionKind{Group: BootstrapGroup, Version: "v1alpha1", Kind: "BootstrapConfigTemplate"}
	LocalClusterGVK            = schema.GroupVersionKind{Group: LocalInfrastructureGroup, Version: "v1alpha1", Kind: "LocalCluster"}
	LocalMachineGVK            = schema.GroupVersionKind{Group: LocalInfrastructureGroup, Version: "v1alpha1", Kind: "LocalMachine"}
	LocalMachineTemplateGVK    = schema.GroupVersionKind{Group: LocalInfrastructureGroup, Version: "v1alpha1", Kind: "LocalMachineTemplate"}
)

// Infrastructure providers: the infrastructure cluster and machine template of each, at the
// version whose CRD is in artifacts/crds.
var (
	KubevirtClusterGVK         = schema.GroupVersionKind{Group: InfrastructureGroup, Version: "v1alpha1", Kind: "KubevirtCluster"}
	KubevirtMachineTemplateGVK = schema.GroupVersionKind{Group: InfrastructureGroup, Version: "v1alpha1", Kind: "KubevirtMachineTemplate"}
	NutanixClusterGVK          = schema.GroupVersionKind{Group: InfrastructureGroup, Version: "v1beta1", Kind: "NutanixCluster"}
	NutanixMachineTemplateGVK  = schema.GroupVersionKind{Group: InfrastructureGroup, Version: "v1beta1", Kind: "NutanixMachineTemplate"}
	ProxmoxClusterGVK          = schema.GroupVersionKind{Group: InfrastructureGroup, Version: "v1alpha1", Kind: "ProxmoxCluster"}
	ProxmoxMachineTemplateGVK  = schema.GroupVersionKind{Group: InfrastructureGroup, Version: "v1alpha1", Kind: "ProxmoxMachineTemplate"}
	AWSClusterGVK              = schema.GroupVersionKind{Group: InfrastructureGroup, Version: "v1beta2", Kind: "AWSCluster"}
	AWSMachineTemplateGVK      = schema.GroupVersionKind{Group: InfrastructureGroup, Version: "v1beta2", Kind: "AWSMachineTemplate"}
	AzureClusterGVK            = schema.GroupVersionKind{Group: InfrastructureGroup, Version: "v1beta1", Kind: "AzureCluster"}
	AzureMachineTemplateGVK    = schema.GroupVersionKind{Group: InfrastructureGroup, Version: "v1beta1", Kind: "AzureMachineTemplate"}
	GCPClusterGVK              = schema.GroupVersionKind{Group: InfrastructureGroup, Version: "v1beta1", Kind: "GCPCluster"}
	GCPMachineTemplateGVK      = schema.GroupVersionKind{Group: InfrastructureGroup, Version: "v1beta1", Kind: "GCPMachineTemplate"}

	// The identities AWS and Azure clusters name for their credentials.
	AWSClusterStaticIdentityGVK = schema.GroupVersionKind{Group: InfrastructureGroup, Version: "v1beta2", Kind: "AWSClusterStaticIdentity"}
	AzureClusterIdentityGVK     = schema.GroupVersionKind{Group: InfrastructureGroup, Version: "v1beta1", Kind: "AzureClusterIdentity"}
)

// Kind is an external kind and what we know of it.
type Kind struct {
	GVK schema.GroupVersionKind
	// Resource is the plural resource name.
	Resource string
	// CAPIReferenced says CAPI follows references to this kind, so its CRD must carry a contract
	// label (cluster.x-k8s.io/<contract>: <versions>).
	CAPIReferenced bool
}

// GVR is the kind's GroupVersionResource.
func (k Kind) GVR() schema.GroupVersionResource { return k.GVK.GroupVersion().WithResource(k.Resource) }

// Kinds lists every external kind the lifecycle controllers write or read.
var Kinds = []Kind{
	{GVK: ClusterGVK, Resource: "clusters"},
	{GVK: MachineDeploymentGVK, Resource: "machinedeployments"},
	{GVK: MachineHealthCheckGVK, Resource: "machinehealthchecks"},
	{GVK: MachineSetGVK, Resource: "machinesets"},
	{GVK: MachineGVK, Resource: "machines"},
	{GVK: StewardControlPlaneGVK, Resource: "stewardcontrolplanes", CAPIReferenced: true},
	{GVK: KamajiControlPlaneGVK, Resource: "kamajicontrolplanes", CAPIReferenced: true},
	{GVK: KubeadmControlPlaneGVK, Resource: "kubeadmcontrolplanes", CAPIReferenced: true},
	{GVK: KubeadmConfigTemplateGVK, Resource: "kubeadmconfigtemplates", CAPIReferenced: true},
	{GVK: TenantControlPlaneGVK, Resource: "tenantcontrolplanes"},
	{GVK: KamajiTenantControlPlaneGVK, Resource: "tenantcontrolplanes"},
	{GVK: DataStoreGVK, Resource: "datastores"},
	{GVK: BootstrapConfigGVK, Resource: "bootstrapconfigs", CAPIReferenced: true},
	{GVK: BootstrapConfigTemplateGVK, Resource: "bootstrapconfigtemplates", CAPIReferenced: true},
	{GVK: LocalClusterGVK, Resource: "localclusters", CAPIReferenced: true},
	{GVK: LocalMachineGVK, Resource: "localmachines", CAPIReferenced: true},
	{GVK: LocalMachineTemplateGVK, Resource: "localmachinetemplates", CAPIReferenced: true},
	{GVK: KubevirtClusterGVK, Resource: "kubevirtclusters", CAPIReferenced: true},
	{GVK: KubevirtMachineTemplateGVK, Resource: "kubevirtmachinetemplates", CAPIReferenced: true},
	{GVK: NutanixClusterGVK, Resource: "nutanixclusters", CAPIReferenced: true},
	{GVK: NutanixMachineTemplateGVK, Resource: "nutanixmachinetemplates", CAPIReferenced: true},
	{GVK: ProxmoxClusterGVK, Resource: "proxmoxclusters", CAPIReferenced: true},
	{GVK: ProxmoxMachineTemplateGVK, Resource: "proxmoxmachinetemplates", CAPIReferenced: true},
	{GVK: AWSClusterGVK, Resource: "awsclusters", CAPIReferenced: true},
	{GVK: AWSMachineTemplateGVK, Resource: "awsmachinetemplates", CAPIReferenced: true},
	{GVK: AzureClusterGVK, Resource: "azureclusters", CAPIReferenced: true},
	{GVK: AzureMachineTemplateGVK, Resource: "azuremachinetemplates", CAPIReferenced: true},
	{GVK: GCPClusterGVK, Resource: "gcpclusters", CAPIReferenced: true},
	{GVK: GCPMachineTemplateGVK, Resource: "gcpmachinetemplates", CAPIReferenced: true},
	{GVK: AWSClusterStaticIdentityGVK, Resource: "awsclusterstaticidentities"},
	{GVK: AzureClusterIdentityGVK, Resource: "azureclusteridentities"},
}

// GVR is the resource of a kind listed in Kinds.
func GVR(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	for _, k := range Kinds {
		if k.GVK == gvk {
			return k.GVR(), nil
		}
	}
	return schema.GroupVersionResource{}, fmt.Errorf("external: unknown kind %s", gvk)
}

// MustGVR is GVR for kinds known at compile time.
func MustGVR(gvk schema.GroupVersionKind) schema.GroupVersionResource {
	gvr, err := GVR(gvk)
	if err != nil {
		panic(err)
	}
	return gvr
}

// Well-known GroupVersionResources.
var (
	ClusterGVR                  = MustGVR(ClusterGVK)
	MachineDeploymentGVR        = MustGVR(MachineDeploymentGVK)
	MachineGVR                  = MustGVR(MachineGVK)
	TenantControlPlaneGVR       = MustGVR(TenantControlPlaneGVK)
	DataStoreGVR                = MustGVR(DataStoreGVK)
	StewardControlPlaneGVR      = MustGVR(StewardControlPlaneGVK)
	KamajiControlPlaneGVR       = MustGVR(KamajiControlPlaneGVK)
	KubeadmControlPlaneGVR      = MustGVR(KubeadmControlPlaneGVK)
	BootstrapConfigGVR          = MustGVR(BootstrapConfigGVK)
	BootstrapConfigTemplateGVR  = MustGVR(BootstrapConfigTemplateGVK)
	LocalClusterGVR             = MustGVR(LocalClusterGVK)
	LocalMachineGVR             = MustGVR(LocalMachineGVK)
	LocalMachineTemplateGVR     = MustGVR(LocalMachineTemplateGVK)
	AWSClusterStaticIdentityGVR = MustGVR(AWSClusterStaticIdentityGVK)
	AzureClusterIdentityGVR     = MustGVR(AzureClusterIdentityGVK)
)

// Annotations on a DataStore that butler reads (Steward's CRD has no fields for them).
const (
	// DataStoreTeamsAnnotation lists the Teams whose clusters may name the DataStore in
	// spec.controlPlane.dataStoreRef (comma-separated; "*": every Team).
	DataStoreTeamsAnnotation = "butler.butlerlabs.dev/teams"
	// DataStoreMaxTenantsAnnotation bounds the tenants on the DataStore.
	DataStoreMaxTenantsAnnotation = "localprovider.butlerlabs.dev/max-tenants"
)

// Flux's kinds, in a tenant cluster (never in the management cluster, so not in Kinds): the
// GitOps step writes a GitRepository and a Kustomization and reads their status
// (docs/concepts/gitops.md). Versions of source-controller and kustomize-controller v1.9.
var (
	FluxGitRepositoryGVK = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}
	FluxKustomizationGVK = schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}
	FluxGitRepositoryGVR = FluxGitRepositoryGVK.GroupVersion().WithResource("gitrepositories")
	FluxKustomizationGVR = FluxKustomizationGVK.GroupVersion().WithResource("kustomizations")
)
