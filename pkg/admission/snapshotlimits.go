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
// (a 403 naming the limit). The count is reserved through the quota Ledger (a compare-and-swap
// on the Team, as cluster counts are), so concurrent creates never pass it together; a delete
// drops its snapshot's reservation. A snapshot's size is known once taken, so the bytes limit
// refuses the next snapshot, not the one that crosses it.
type SnapshotLimits struct{ base }

var _ admission.ValidationInterface = &SnapshotLimits{}

// NewSnapshotLimits returns the plugin.
func NewSnapshotLimits() *SnapshotLimits {
	return &SnapshotLimits{base{Handler: admission.NewHandler(admission.Create, admission.Delete)}}
}

// Validate implements admission.ValidationInterface.
func (p *SnapshotLimits) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != tenantClusterSnapshots || a.GetSubresource() != "" {
		return nil
	}
	if a.GetOperation() == admission.Delete {
		return p.resolveOnDelete(ctx, a)
	}
	snap, ok := a.GetObject().(*butler.TenantClusterSnapshot)
	if !ok {
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
	if max := limits.MaxSnapshotBytes; max != nil {
		if err := p.checkBytes(ctx, a, team.Name, max); err != nil {
			return err
		}
	}
	if limits.MaxSnapshots == nil {
		return nil
	}
	return p.ledger.AdmitSnapshot(ctx, quota.SnapshotRequest{Team: team.Name, Namespace: a.GetNamespace(), Name: snap.Name,
		UID: string(snap.UID), Config: config, DryRun: a.IsDryRun()})
}

// checkBytes refuses a snapshot while the namespace's stored snapshots hold max or more.
func (p *SnapshotLimits) checkBytes(ctx context.Context, a admission.Attributes, team string, max *resource.Quantity) error {
	snaps, err := p.store().Snapshots(ctx, a.GetNamespace())
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	var stored int64
	for _, s := range snaps {
		stored += s.Status.Bytes
	}
	if stored >= max.Value() {
		return admission.NewForbidden(a, fmt.Errorf("team %q: its snapshots hold %s in the snapshot store, at its maxSnapshotBytes of %s: delete one first",
			team, resource.NewQuantity(stored, resource.BinarySI), max))
	}
	return nil
}

// resolveOnDelete frees at once the place a deleted snapshot's create reserved.
func (p *SnapshotLimits) resolveOnDelete(ctx context.Context, a admission.Attributes) error {
	snap, ok := a.GetOldObject().(*butler.TenantClusterSnapshot)
	if !ok || a.IsDryRun() {
		return nil
	}
	team, err := p.teamOf(ctx, a.GetNamespace())
	if team == nil || err != nil {
		return err
	}
	if err := p.ledger.ResolveSnapshot(ctx, team.Name, string(snap.UID)); err != nil && !apierrors.IsNotFound(err) {
		return apierrors.NewInternalError(err)
	}
	return nil
}

var (
	tenantClusterSnapshots = butler.Resource("tenantclustersnapshots")
	snapshotKind           = schema.GroupKind{Group: butler.GroupName, Kind: "TenantClusterSnapshot"}
)
