// Package tenantaddon holds the registry strategy and kubectl columns of tenantaddons.
package tenantaddon

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/validation"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Strategy is the create/update/delete strategy of tenantaddons.
type Strategy = resource.Strategy[*butler.TenantAddon, butler.TenantAddonSpec, butler.TenantAddonStatus]

// NewStrategy returns the strategy of tenantaddons.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{
		ObjectTyper:   typer,
		NameGenerator: names.SimpleNameGenerator,
		Namespaced:    true,
		HasStatus:     true,
		Parts: func(obj *butler.TenantAddon) (*butler.TenantAddonSpec, *butler.TenantAddonStatus) {
			return &obj.Spec, &obj.Status
		},
		ValidateNew:          validation.ValidateTenantAddon,
		ValidateChange:       validation.ValidateTenantAddonUpdate,
		ValidateStatusChange: validation.ValidateTenantAddonStatusUpdate,
		SelectableFields:     selectableFields,
	}
}

// selectableFields are the fields kubectl --field-selector accepts beyond metadata.name and
// metadata.namespace; v1alpha1 registers the same names as field label conversions.
func selectableFields(obj *butler.TenantAddon) fields.Set {
	return fields.Set{
		"status.phase":         string(obj.Status.Phase),
		"spec.clusterRef.name": obj.Spec.ClusterRef.Name,
	}
}
