// Package tenantcluster holds the registry strategy and kubectl columns of tenantclusters.
package tenantcluster

import (
	"context"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/validation"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Strategy is the create/update/delete strategy of tenantclusters.
type Strategy = resource.Strategy[*butler.TenantCluster, butler.TenantClusterSpec, butler.TenantClusterStatus]

// NewStrategy returns the strategy of tenantclusters.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{
		ObjectTyper:   typer,
		NameGenerator: names.SimpleNameGenerator,
		Namespaced:    true,
		HasStatus:     true,
		Parts: func(obj *butler.TenantCluster) (*butler.TenantClusterSpec, *butler.TenantClusterStatus) {
			return &obj.Spec, &obj.Status
		},
		ValidateNew:          validation.ValidateTenantCluster,
		ValidateChange:       validation.ValidateTenantClusterUpdate,
		ValidateStatusChange: validation.ValidateTenantClusterStatusUpdate,
		WarningsFor: func(_ context.Context, tc *butler.TenantCluster) []string {
			return validation.TenantClusterWarnings(tc)
		},
		SelectableFields: selectableFields,
	}
}

// selectableFields are the fields kubectl --field-selector accepts beyond metadata.name and
// metadata.namespace; v1alpha1 registers the same names as field label conversions.
func selectableFields(obj *butler.TenantCluster) fields.Set {
	return fields.Set{"status.phase": string(obj.Status.Phase)}
}
