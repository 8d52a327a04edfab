// Package tenantclustersnapshot holds the registry strategy and kubectl columns of
// tenantclustersnapshots.
package tenantclustersnapshot

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/validation"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Strategy is the create/update/delete strategy of tenantclustersnapshots.
type Strategy = resource.Strategy[*butler.TenantClusterSnapshot, butler.TenantClusterSnapshotSpec, butler.TenantClusterSnapshotStatus]

// NewStrategy returns the strategy of tenantclustersnapshots.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{
		ObjectTyper:   typer,
		NameGenerator: names.SimpleNameGenerator,
		Namespaced:    true,
		HasStatus:     true,
		Parts: func(obj *butler.TenantClusterSnapshot) (*butler.TenantClusterSnapshotSpec, *butler.TenantClusterSnapshotStatus) {
			return &obj.Spec, &obj.Status
		},
		PrepareNew:           prepareNew,
		ValidateNew:          validation.ValidateTenantClusterSnapshot,
		ValidateChange:       validation.ValidateTenantClusterSnapshotUpdate,
		ValidateStatusChange: validation.ValidateTenantClusterSnapshotStatusUpdate,
		SelectableFields:     selectableFields,
	}
}

// prepareNew labels a new snapshot with its cluster (a label, not an owner reference: the
// snapshot outlives the cluster) and holds its deletion until its data is deleted.
func prepareNew(obj *butler.TenantClusterSnapshot) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[butler.ClusterLabel] = obj.Spec.ClusterRef.Name
	obj.SetLabels(labels)
	if !sets.New(obj.Finalizers...).Has(butler.SnapshotDataFinalizer) {
		obj.Finalizers = append(obj.Finalizers, butler.SnapshotDataFinalizer)
	}
}

// selectableFields are the fields kubectl --field-selector accepts beyond metadata.name and
// metadata.namespace; v1alpha1 registers the same names as field label conversions.
func selectableFields(obj *butler.TenantClusterSnapshot) fields.Set {
	return fields.Set{
		"status.phase":         string(obj.Status.Phase),
		"spec.clusterRef.name": obj.Spec.ClusterRef.Name,
	}
}
