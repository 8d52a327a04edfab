package admission

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/quota"
)

// TeamLimits enforces a Team's resourceLimits, with ButlerConfig's defaultTeamLimits for every
// limit the Team does not set, on the TenantClusters and TenantAddons in the Team's namespace:
// on create, on update, and on tenantclusters/scale. A refusal is a 403 naming the team, the
// limit, the usage and the request. Aggregate limits are admitted through the quota Ledger
// (a compare-and-swap on the Team), so two concurrent requests never pass a limit together.
// It also refuses new clusters and addons in the namespace of a Team being deleted, and on a
// cluster's delete drops what its create reserved (Ledger.ResolveCreate).
type TeamLimits struct{ base }

var _ admission.ValidationInterface = &TeamLimits{}

// NewTeamLimits returns the plugin.
func NewTeamLimits() *TeamLimits {
	return &TeamLimits{base{Handler: admission.NewHandler(admission.Create, admission.Update, admission.Delete)}}
}

// Validate implements admission.ValidationInterface.
func (p *TeamLimits) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	gr, sub := a.GetResource().GroupResource(), a.GetSubresource()
	if a.GetOperation() == admission.Delete {
		return p.resolveOnDelete(ctx, a)
	}
	switch {
	case gr == tenantClusters && (sub == "" || sub == "scale"), gr == tenantAddons && sub == "":
	default:
		return nil
	}
	team, err := p.teamOf(ctx, a.GetNamespace())
	if team == nil || err != nil {
		return err
	}
	if a.GetOperation() == admission.Create && team.DeletionTimestamp != nil {
		return admission.NewForbidden(a, fmt.Errorf("team %q is being deleted", team.Name))
	}
	config, err := p.store().Config(ctx)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	limits := quota.EffectiveLimits(team, config)

	if ta, ok := a.GetObject().(*butler.TenantAddon); ok {
		definitions, err := p.store().AddonDefinitions(ctx)
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		name, _ := quota.AddonIdentity(ta, definitions)
		oldName := ""
		if old, ok := a.GetOldObject().(*butler.TenantAddon); ok && a.GetOperation() == admission.Update {
			oldName, _ = quota.AddonIdentity(old, definitions)
		}
		if err := quota.CheckAddon(team.Name, limits, name, oldName); err != nil {
			return admission.NewForbidden(a, err)
		}
		return nil
	}
	tc, old, err := p.clusterChange(ctx, a)
	if tc == nil || err != nil {
		return err
	}
	return p.admitCluster(ctx, a, team.Name, limits, config, tc, old)
}

// resolveOnDelete frees at once the share a deleted cluster's create reserved.
func (p *TeamLimits) resolveOnDelete(ctx context.Context, a admission.Attributes) error {
	tc, ok := a.GetOldObject().(*butler.TenantCluster)
	if !ok || a.GetResource().GroupResource() != tenantClusters || a.GetSubresource() != "" || a.IsDryRun() {
		return nil
	}
	team, err := p.teamOf(ctx, a.GetNamespace())
	if team == nil || err != nil {
		return err
	}
	if err := p.ledger.ResolveCreate(ctx, team.Name, string(tc.UID)); err != nil && !apierrors.IsNotFound(err) {
		return apierrors.NewInternalError(err)
	}
	return nil
}

func (p *TeamLimits) admitCluster(ctx context.Context, a admission.Attributes, team string, limits *butler.ResourceLimits,
	config *butler.ButlerConfig, tc, old *butler.TenantCluster) error {
	provider := ""
	if len(limits.AllowedProviders) > 0 && tc.Spec.ProviderConfigRef != nil {
		ns := tc.Spec.ProviderConfigRef.Namespace
		if ns == "" {
			ns = a.GetNamespace()
		}
		pc, err := p.store().ProviderConfig(ctx, ns, tc.Spec.ProviderConfigRef.Name)
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		if pc != nil {
			provider = string(pc.Spec.Provider)
		}
	}
	if err := quota.CheckCluster(team, limits, tc, old, provider); err != nil {
		return admission.NewForbidden(a, err)
	}
	req := quota.Request{
		Team: team, Limits: limits, Config: config,
		Namespace: a.GetNamespace(), Name: a.GetName(),
		New:    quota.ClusterUsage(tc),
		DryRun: a.IsDryRun(),
	}
	if old == nil {
		req.UID = string(tc.UID)
	} else {
		req.Old = quota.ClusterUsage(old)
		req.BaseRV = old.ResourceVersion
	}
	return p.ledger.Admit(ctx, req)
}
