package butler

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group served by butler-apiserver.
const GroupName = "butler.butlerlabs.dev"

// SchemeGroupVersion is the internal group version.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: runtime.APIVersionInternal}

var (
	// SchemeBuilder registers the hand-written functions; generated files add theirs via localSchemeBuilder.
	SchemeBuilder      runtime.SchemeBuilder
	localSchemeBuilder = &SchemeBuilder
	// AddToScheme adds this version's types, defaults and conversions to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	localSchemeBuilder.Register(addKnownTypes)
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&ButlerConfig{}, &ButlerConfigList{},
		&Team{}, &TeamList{},
		&TenantCluster{}, &TenantClusterList{},
		&KubeconfigRequest{},
		&TenantAddon{}, &TenantAddonList{},
		&TenantClusterSnapshot{}, &TenantClusterSnapshotList{},
		&AddonDefinition{}, &AddonDefinitionList{},
		&NetworkPool{}, &NetworkPoolList{},
		&IPAllocation{}, &IPAllocationList{},
		&ProviderConfig{}, &ProviderConfigList{},
		&UpdateStrategy{}, &UpdateStrategyList{},
		&UpdateRun{}, &UpdateRunList{}, &UpdateRunApproval{},
		&ManagementAddon{}, &ManagementAddonList{},
	)
	return nil
}

// Resource qualifies a resource name with this group.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}
