package admission

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/quota"
)

// ProviderConfigUse authorizes a TenantCluster's use of a ProviderConfig, whose credentials its
// infrastructure is made with. A spec.providerConfigRef may name a ProviderConfig in the
// cluster's own namespace, or one the platform shares (spec.scope platform, or team naming the
// cluster's Team); anything else is a 403 naming the rule (quota.ProviderUse). A ProviderConfig
// reached through the Team or the ButlerConfig default was chosen by the platform, so it is
// not checked for sharing. The ProviderConfig's limits (maxClustersPerTeam, maxNodesPerTeam)
// are admitted through the quota Ledger on the ProviderConfig, on create, update and
// tenantclusters/scale; a cluster's delete frees what its create reserved.
type ProviderConfigUse struct{ base }

var _ admission.ValidationInterface = &ProviderConfigUse{}

// NewProviderConfigUse returns the plugin.
func NewProviderConfigUse() *ProviderConfigUse {
	return &ProviderConfigUse{base{Handler: admission.NewHandler(admission.Create, admission.Update, admission.Delete)}}
}

// Validate implements admission.ValidationInterface.
func (p *ProviderConfigUse) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	sub := a.GetSubresource()
	if a.GetResource().GroupResource() != tenantClusters || (sub != "" && sub != "scale") {
		return nil
	}
	resolve, err := p.resolver(ctx, a.GetNamespace())
	if err != nil {
		return err
	}
	if a.GetOperation() == admission.Delete {
		old, ok := a.GetOldObject().(*butler.TenantCluster)
		if !ok || sub != "" || a.IsDryRun() {
			return nil
		}
		ns, name := resolve(old)
		if name == "" {
			return nil
		}
		if err := p.ledger.ResolveProviderCreate(ctx, ns, name, string(old.UID)); err != nil && !apierrors.IsNotFound(err) {
			return apierrors.NewInternalError(err)
		}
		return nil
	}
	tc, old, err := p.clusterChange(ctx, a)
	if tc == nil || err != nil {
		return err
	}
	ns, name := resolve(tc)
	if name == "" {
		return nil // no ProviderConfig: the controller says so
	}
	pc, err := p.store().ProviderConfig(ctx, ns, name)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if ref := tc.Spec.ProviderConfigRef; ref != nil && (old == nil || explicitRef(old, a.GetNamespace()) != explicitRef(tc, a.GetNamespace())) {
		var scopeType, scopeTeam string
		if pc != nil {
			scopeType, scopeTeam = string(pc.Spec.Scope.Type), scopeTeamName(pc)
		}
		if err := quota.ProviderUse(a.GetNamespace(), ns, name, pc != nil, scopeType, scopeTeam); err != nil {
			return admission.NewForbidden(a, err)
		}
	}
	if pc == nil || pc.Spec.Limits == nil {
		return nil
	}
	uses := func(c *butler.TenantCluster) bool {
		cns, cname := resolve(c)
		return cns == ns && cname == name
	}
	req := quota.ProviderRequest{
		ProviderNamespace: ns, Provider: name, Uses: uses,
		Namespace: a.GetNamespace(), Name: a.GetName(),
		New: quota.ClusterUsage(tc), DryRun: a.IsDryRun(),
	}
	if old == nil {
		req.UID = string(tc.UID)
	} else {
		req.BaseRV = old.ResourceVersion
		if uses(old) {
			req.Old = quota.ClusterUsage(old)
		}
	}
	return p.ledger.AdmitProvider(ctx, req)
}

// resolver returns what resolves a cluster of namespace to the ProviderConfig it uses, as the
// TenantCluster controller does: its own reference, its Team's, or the ButlerConfig's default.
func (p *ProviderConfigUse) resolver(ctx context.Context, namespace string) (func(*butler.TenantCluster) (string, string), error) {
	config, err := p.store().Config(ctx)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	team, err := p.teamOf(ctx, namespace)
	if err != nil {
		return nil, err
	}
	return func(tc *butler.TenantCluster) (string, string) {
		var ref *butler.NamespacedObjectReference
		switch {
		case tc.Spec.ProviderConfigRef != nil:
			ref = tc.Spec.ProviderConfigRef
		case tc.Spec.TeamRef != nil && team != nil && team.Name == tc.Spec.TeamRef.Name:
			ref = team.Spec.ProviderConfigRef
		}
		if ref == nil && config != nil {
			ref = config.Spec.DefaultProviderConfigRef
		}
		if ref == nil {
			return "", ""
		}
		if ref.Namespace == "" {
			return tc.Namespace, ref.Name
		}
		return ref.Namespace, ref.Name
	}, nil
}

// explicitRef is the cluster's own providerConfigRef as namespace/name, or "".
func explicitRef(tc *butler.TenantCluster, namespace string) string {
	ref := tc.Spec.ProviderConfigRef
	if ref == nil {
		return ""
	}
	if ref.Namespace != "" {
		namespace = ref.Namespace
	}
	return namespace + "/" + ref.Name
}

func scopeTeamName(pc *butler.ProviderConfig) string {
	if pc.Spec.Scope.TeamRef == nil {
		return ""
	}
	return pc.Spec.Scope.TeamRef.Name
}
