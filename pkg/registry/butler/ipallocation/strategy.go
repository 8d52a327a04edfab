// Package ipallocation holds the registry strategy and kubectl columns of ipallocations.
package ipallocation

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/validation"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Strategy is the create/update/delete strategy of ipallocations.
type Strategy = resource.Strategy[*butler.IPAllocation, butler.IPAllocationSpec, butler.IPAllocationStatus]

// NewStrategy returns the strategy of ipallocations.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{
		ObjectTyper:   typer,
		NameGenerator: names.SimpleNameGenerator,
		Namespaced:    true,
		HasStatus:     true,
		Parts: func(obj *butler.IPAllocation) (*butler.IPAllocationSpec, *butler.IPAllocationStatus) {
			return &obj.Spec, &obj.Status
		},
		ValidateNew:          validation.ValidateIPAllocation,
		ValidateChange:       validation.ValidateIPAllocationUpdate,
		ValidateStatusChange: validation.ValidateIPAllocationStatusUpdate,
		SelectableFields:     selectableFields,
	}
}

// selectableFields are the fields kubectl --field-selector accepts beyond metadata.name and
// metadata.namespace; v1alpha1 registers the same names as field label conversions.
func selectableFields(obj *butler.IPAllocation) fields.Set {
	return fields.Set{
		"status.phase":      string(obj.Status.Phase),
		"spec.poolRef.name": obj.Spec.PoolRef.Name,
	}
}
