package admission

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/quota"
)

// AddonSources makes addon sources a platform policy: a TenantAddon's spec.helm must name a
// repository and chart that an AddonDefinition lists (the platform's catalog), unless the
// requester is a platform admin (may create AddonDefinitions). A Team installs by catalog
// name or by a listed repository and chart; anything else is a 403 naming the rule. The
// chart's name alone never matches: "cilium" from another repository is not the catalog's.
type AddonSources struct {
	base
	authorizer authorizer.Authorizer
}

var (
	_ admission.ValidationInterface = &AddonSources{}
	_ initializer.WantsAuthorizer   = &AddonSources{}
)

// NewAddonSources returns the plugin.
func NewAddonSources() *AddonSources {
	return &AddonSources{base: base{Handler: admission.NewHandler(admission.Create, admission.Update)}}
}

// SetAuthorizer implements initializer.WantsAuthorizer. Without one (standalone), nobody is
// taken for a platform admin.
func (p *AddonSources) SetAuthorizer(a authorizer.Authorizer) { p.authorizer = a }

// Validate implements admission.ValidationInterface.
func (p *AddonSources) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != tenantAddons || a.GetSubresource() != "" {
		return nil
	}
	ta, ok := a.GetObject().(*butler.TenantAddon)
	if !ok || ta.Spec.Helm == nil {
		return nil
	}
	if old, ok := a.GetOldObject().(*butler.TenantAddon); ok && a.GetOperation() == admission.Update && old.Spec.Helm != nil &&
		old.Spec.Helm.Repository == ta.Spec.Helm.Repository && old.Spec.Helm.Chart == ta.Spec.Helm.Chart {
		return nil // the source did not change
	}
	definitions, err := p.store().AddonDefinitions(ctx)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if _, listed := quota.AddonIdentity(ta, definitions); listed {
		return nil
	}
	if p.platformAdmin(ctx, a) {
		return nil
	}
	return admission.NewForbidden(a, fmt.Errorf(
		"spec.helm: chart %q from repository %q is not in the platform's catalog: a TenantAddon may install an AddonDefinition, "+
			"or a repository and chart that an AddonDefinition lists (only a platform admin, who may create AddonDefinitions, may install others)",
		ta.Spec.Helm.Chart, ta.Spec.Helm.Repository))
}

// platformAdmin says whether the requester may create AddonDefinitions.
func (p *AddonSources) platformAdmin(ctx context.Context, a admission.Attributes) bool {
	if p.authorizer == nil || a.GetUserInfo() == nil {
		return false
	}
	decision, _, err := p.authorizer.Authorize(ctx, authorizer.AttributesRecord{
		User: a.GetUserInfo(), Verb: "create", APIGroup: butler.GroupName, APIVersion: "*",
		Resource: "addondefinitions", ResourceRequest: true,
	})
	return err == nil && decision == authorizer.DecisionAllow
}
