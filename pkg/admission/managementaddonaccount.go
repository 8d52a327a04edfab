package admission

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

// ManagementAddonAccount decides who may choose what a ManagementAddon installs. The controller
// installs it as the ServiceAccount spec.serviceAccountRef names, by impersonation, so whoever
// creates one, or changes its spec (the chart, the values, the account), must be allowed to
// impersonate that account themselves (a SubjectAccessReview through the server's authorizer;
// 403 otherwise): else writing ManagementAddons would be acting as any account the platform
// listed for butler-apiserver, cluster-admin ones included. The same holds for a create or a
// spec change of an AddonDefinition a ManagementAddon is made from: the addon follows it. An
// update that leaves the spec as it is (labels, the controller's finalizer) and a delete (it
// uninstalls what the release holds; a deleted definition leaves its addons as they are) are not
// checked.
type ManagementAddonAccount struct {
	base
	authorizer authorizer.Authorizer
}

var (
	_ admission.ValidationInterface = &ManagementAddonAccount{}
	_ initializer.WantsAuthorizer   = &ManagementAddonAccount{}
)

// NewManagementAddonAccount returns the plugin.
func NewManagementAddonAccount() *ManagementAddonAccount {
	return &ManagementAddonAccount{base: base{Handler: admission.NewHandler(admission.Create, admission.Update)}}
}

// SetAuthorizer implements initializer.WantsAuthorizer.
func (p *ManagementAddonAccount) SetAuthorizer(a authorizer.Authorizer) { p.authorizer = a }

// Validate implements admission.ValidationInterface.
func (p *ManagementAddonAccount) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" || p.authorizer == nil {
		return nil
	}
	switch obj := a.GetObject().(type) {
	case *butler.ManagementAddon:
		if old, ok := a.GetOldObject().(*butler.ManagementAddon); ok && old != nil && apiequality.Semantic.DeepEqual(obj.Spec, old.Spec) {
			return nil
		}
		account := obj.Spec.ServiceAccountRef
		if !p.mayImpersonate(ctx, a, account) {
			return admission.NewForbidden(a, fmt.Errorf(
				"spec.serviceAccountRef: installing as ServiceAccount %s/%s needs impersonate on it (butler-apiserver installs the addon with that account's rights), which you do not have",
				account.Namespace, account.Name))
		}
	case *butler.AddonDefinition:
		if old, ok := a.GetOldObject().(*butler.AddonDefinition); ok && old != nil && apiequality.Semantic.DeepEqual(obj.Spec, old.Spec) {
			return nil
		}
		return p.validateDefinition(ctx, a, obj.Name)
	}
	return nil
}

// validateDefinition checks a change of the AddonDefinition name: a ManagementAddon of it
// follows the definition's chart, as its account, so the change is as much a choice of what that
// account installs as a change of the addon itself.
func (p *ManagementAddonAccount) validateDefinition(ctx context.Context, a admission.Attributes, name string) error {
	all, err := p.store().ManagementAddons(ctx)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	for _, ma := range all {
		account := ma.Spec.ServiceAccountRef
		if ma.Spec.Addon != name || p.mayImpersonate(ctx, a, account) {
			continue
		}
		return admission.NewForbidden(a, fmt.Errorf(
			"AddonDefinition %s is installed by ManagementAddon %s as ServiceAccount %s/%s: changing it needs impersonate on that account, which you do not have",
			name, ma.Name, account.Namespace, account.Name))
	}
	return nil
}

func (p *ManagementAddonAccount) mayImpersonate(ctx context.Context, a admission.Attributes, account butler.NamespacedObjectReference) bool {
	return authorize(ctx, p.authorizer, a, authorizer.AttributesRecord{
		Verb: "impersonate", Namespace: account.Namespace, APIGroup: "", Resource: "serviceaccounts", Name: account.Name})
}
