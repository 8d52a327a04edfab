package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group served by butler-apiserver.
const GroupName = "butler.butlerlabs.dev"

// SchemeGroupVersion is the group version of this package.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

var (
	// SchemeBuilder registers the hand-written functions; generated files add theirs via localSchemeBuilder.
	SchemeBuilder      runtime.SchemeBuilder
	localSchemeBuilder = &SchemeBuilder
	// AddToScheme adds this version's types, defaults and conversions to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	localSchemeBuilder.Register(addKnownTypes, addDefaultingFuncs)
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
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}

// Resource qualifies a resource name with this group.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}
