// Package tenantcluster holds the registry strategy and kubectl columns of tenantclusters.
package tenantcluster

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
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
		PrepareNew:       prepareNew,
		PrepareChange:    keepRestorePin,
	}
}

// prepareNew starts a new cluster Reconciling (kstatus): with no status.observedGeneration yet,
// kstatus would otherwise read it Current, and Flux would call it healthy before butler's
// controller has seen it.
func prepareNew(tc *butler.TenantCluster) {
	keepRestorePin(tc, nil)
	tc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReconciling, Status: metav1.ConditionTrue,
		Reason: string(v1alpha1.TenantClusterPending), Message: "not yet seen by butler's controller",
		ObservedGeneration: tc.Generation, LastTransitionTime: metav1.Now()}}
}

// keepRestorePin keeps v1alpha1.RestorePinAnnotation what admission (SnapshotRestore, which runs
// before the strategy) made it: it goes with spec.restoreFrom, and an update that keeps
// restoreFrom keeps the stored pin, whatever the client sent. Only a new or changed restoreFrom
// carries admission's pin (which SnapshotRestore's Validate checks against the snapshot).
func keepRestorePin(tc, old *butler.TenantCluster) {
	switch r := tc.Spec.RestoreFrom; {
	case r == nil:
		a := tc.GetAnnotations()
		delete(a, v1alpha1.RestorePinAnnotation)
		tc.SetAnnotations(a)
	case old != nil && old.Spec.RestoreFrom != nil && old.Spec.RestoreFrom.Name == r.Name:
		resource.KeepStoredAnnotation(tc, old, v1alpha1.RestorePinAnnotation)
	}
}

// selectableFields are the fields kubectl --field-selector accepts beyond metadata.name and
// metadata.namespace; v1alpha1 registers the same names as field label conversions.
func selectableFields(obj *butler.TenantCluster) fields.Set {
	return fields.Set{"status.phase": string(obj.Status.Phase)}
}
