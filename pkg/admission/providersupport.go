package admission

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/validation"
)

// ProviderSupport refuses, with a 422 naming the field and the reason, a TenantCluster whose
// machines could not boot on the provider of the ProviderConfig it resolves to (its own, its
// Team's, or the ButlerConfig's default): an OS no image of which reads what that provider's
// Cluster API provider delivers. A ProviderConfig that does not exist yet is not checked here;
// the TenantCluster controller checks again when it builds the machines.
type ProviderSupport struct{ base }

var _ admission.ValidationInterface = &ProviderSupport{}

// NewProviderSupport returns the plugin.
func NewProviderSupport() *ProviderSupport {
	return &ProviderSupport{base{Handler: admission.NewHandler(admission.Create, admission.Update)}}
}

// Validate implements admission.ValidationInterface.
func (p *ProviderSupport) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != tenantClusters || a.GetSubresource() != "" {
		return nil
	}
	tc, ok := a.GetObject().(*butler.TenantCluster)
	if !ok {
		return nil
	}
	pc, err := p.providerConfig(ctx, tc)
	if err != nil || pc == nil {
		return err
	}
	if errs := validation.ValidateOSOnProvider(&tc.Spec, pc.Spec.Provider, field.NewPath("spec")); len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: butler.GroupName, Kind: "TenantCluster"}, a.GetName(), errs)
	}
	return nil
}

// providerConfig is the ProviderConfig the cluster resolves to, as the TenantCluster controller
// resolves it, or nil.
func (p *ProviderSupport) providerConfig(ctx context.Context, tc *butler.TenantCluster) (*butler.ProviderConfig, error) {
	ref := tc.Spec.ProviderConfigRef
	if ref == nil && tc.Spec.TeamRef != nil {
		team, err := p.teamOf(ctx, tc.Spec.TeamRef.Name)
		if err != nil {
			return nil, err
		}
		if team != nil {
			ref = team.Spec.ProviderConfigRef
		}
	}
	if ref == nil {
		config, err := p.store().Config(ctx)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if config != nil {
			ref = config.Spec.DefaultProviderConfigRef
		}
	}
	if ref == nil {
		return nil, nil
	}
	ns := ref.Namespace
	if ns == "" {
		ns = tc.Namespace
	}
	pc, err := p.store().ProviderConfig(ctx, ns, ref.Name)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return pc, nil
}
