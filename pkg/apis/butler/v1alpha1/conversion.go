package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

func init() {
	localSchemeBuilder.Register(addFieldLabelConversionFuncs)
}

// selectableFields are the field selectors each kind accepts beyond metadata.name and
// metadata.namespace. The registry strategies compute the same fields for each object.
var selectableFields = map[string][]string{
	"TenantCluster":         {"status.phase"},
	"TenantAddon":           {"status.phase", "spec.clusterRef.name"},
	"IPAllocation":          {"status.phase", "spec.poolRef.name"},
	"TenantClusterSnapshot": {"status.phase", "spec.clusterRef.name"},
	"UpdateRun":             {"status.phase", "spec.strategyRef.name"},
	"ManagementAddon":       {"status.phase"},
}

var allKinds = []string{"ButlerConfig", "Team", "TenantCluster", "TenantAddon", "AddonDefinition",
	"NetworkPool", "IPAllocation", "ProviderConfig", "TenantClusterSnapshot", "UpdateStrategy", "UpdateRun", "ManagementAddon"}

func addFieldLabelConversionFuncs(scheme *runtime.Scheme) error {
	for _, kind := range allKinds {
		allowed := map[string]bool{"metadata.name": true, "metadata.namespace": true}
		for _, f := range selectableFields[kind] {
			allowed[f] = true
		}
		err := scheme.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind(kind),
			func(label, value string) (string, string, error) {
				if !allowed[label] {
					return "", "", fmt.Errorf("field label not supported for %s: %s", kind, label)
				}
				return label, value, nil
			})
		if err != nil {
			return err
		}
	}
	return nil
}
