// Package managementaddon holds the registry strategy and kubectl columns of managementaddons,
// the platform's addons of the management cluster (cluster-scoped).
package managementaddon

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/validation"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Strategy is the create/update/delete strategy of managementaddons.
type Strategy = resource.Strategy[*butler.ManagementAddon, butler.ManagementAddonSpec, butler.TenantAddonStatus]

// NewStrategy returns the strategy of managementaddons.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{
		ObjectTyper:   typer,
		NameGenerator: names.SimpleNameGenerator,
		Namespaced:    false,
		HasStatus:     true,
		Parts: func(obj *butler.ManagementAddon) (*butler.ManagementAddonSpec, *butler.TenantAddonStatus) {
			return &obj.Spec, &obj.Status
		},
		ValidateNew:          validation.ValidateManagementAddon,
		ValidateChange:       validation.ValidateManagementAddonUpdate,
		ValidateStatusChange: validation.ValidateManagementAddonStatusUpdate,
		SelectableFields:     selectableFields,
	}
}

// selectableFields are the fields kubectl --field-selector accepts beyond metadata.name; v1alpha1
// registers the same names as field label conversions.
func selectableFields(obj *butler.ManagementAddon) fields.Set {
	return fields.Set{"status.phase": string(obj.Status.Phase)}
}
