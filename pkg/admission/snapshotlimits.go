package admission

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

// SnapshotLimits admits a TenantClusterSnapshot's create: its cluster exists (a 422 at
// spec.clusterRef.name otherwise, as a restoreFrom of a missing snapshot is), rather than a
// snapshot accepted and then Failed.
type SnapshotLimits struct{ base }

var _ admission.ValidationInterface = &SnapshotLimits{}

// NewSnapshotLimits returns the plugin.
func NewSnapshotLimits() *SnapshotLimits {
	return &SnapshotLimits{base{Handler: admission.NewHandler(admission.Create)}}
}

// Validate implements admission.ValidationInterface.
func (p *SnapshotLimits) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	snap, ok := a.GetObject().(*butler.TenantClusterSnapshot)
	if !ok || a.GetResource().GroupResource() != tenantClusterSnapshots || a.GetSubresource() != "" {
		return nil
	}
	cluster := snap.Spec.ClusterRef.Name
	if _, err := p.store().Cluster(ctx, a.GetNamespace(), cluster); isNotFound(err) {
		return apierrors.NewInvalid(snapshotKind, snap.Name, field.ErrorList{field.NotFound(field.NewPath("spec", "clusterRef", "name"), cluster)})
	} else if err != nil {
		return apierrors.NewInternalError(err)
	}
	return nil
}

var (
	tenantClusterSnapshots = butler.Resource("tenantclustersnapshots")
	snapshotKind           = schema.GroupKind{Group: butler.GroupName, Kind: "TenantClusterSnapshot"}
)
