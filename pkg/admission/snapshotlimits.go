package admission

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/quota"
)

// SnapshotLimits admits a TenantClusterSnapshot's create: its cluster exists (a 422 at
// spec.clusterRef.name otherwise, as a restoreFrom of a missing snapshot is), and the Team of
// its namespace is within its snapshot limits (resourceLimits, else ButlerConfig's
// defaultTeamLimits): fewer than maxSnapshots snapshots, and less than maxSnapshotBytes stored
// (a 403 naming the limit). A snapshot's size is known once taken, so the bytes limit refuses
// the next snapshot, not the one that crosses it. Concurrent creates are counted each against
// what is stored, so as many as come at once may pass the count together.
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
	team, err := p.teamOf(ctx, a.GetNamespace())
	if team == nil || err != nil {
		return err
	}
	config, err := p.store().Config(ctx)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	limits := quota.EffectiveLimits(team, config)
	if limits.MaxSnapshots == nil && limits.MaxSnapshotBytes == nil {
		return nil
	}
	snaps, err := p.store().Snapshots(ctx, a.GetNamespace())
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if max := limits.MaxSnapshots; max != nil && int64(len(snaps)) >= int64(*max) {
		return admission.NewForbidden(a, fmt.Errorf("team %q has %d TenantClusterSnapshots, its maxSnapshots is %d: delete one first", team.Name, len(snaps), *max))
	}
	if max := limits.MaxSnapshotBytes; max != nil {
		var stored int64
		for _, s := range snaps {
			stored += s.Status.Bytes
		}
		if stored >= max.Value() {
			return admission.NewForbidden(a, fmt.Errorf("team %q: its snapshots hold %s in the snapshot store, at its maxSnapshotBytes of %s: delete one first",
				team.Name, resource.NewQuantity(stored, resource.BinarySI), max))
		}
	}
	return nil
}

var (
	tenantClusterSnapshots = butler.Resource("tenantclustersnapshots")
	snapshotKind           = schema.GroupKind{Group: butler.GroupName, Kind: "TenantClusterSnapshot"}
)
