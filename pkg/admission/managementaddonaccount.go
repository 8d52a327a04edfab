package admission

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
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
// listed for butler-apiserver, cluster-admin ones included. An update that leaves the spec as it
// is (labels, the controller's finalizer) and a delete (it uninstalls what the release holds)
// are not checked.
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
	if a.GetResource().GroupResource() != managementAddons || a.GetSubresource() != "" || p.authorizer == nil {
		return nil
	}
	obj, ok := a.GetObject().(*butler.ManagementAddon)
	if !ok {
		return nil
	}
	if old, ok := a.GetOldObject().(*butler.ManagementAddon); ok && old != nil && apiequality.Semantic.DeepEqual(obj.Spec, old.Spec) {
		return nil
	}
	account := obj.Spec.ServiceAccountRef
	if !authorize(ctx, p.authorizer, a, authorizer.AttributesRecord{
		Verb: "impersonate", Namespace: account.Namespace, APIGroup: "", Resource: "serviceaccounts", Name: account.Name}) {
		return admission.NewForbidden(a, fmt.Errorf(
			"spec.serviceAccountRef: installing as ServiceAccount %s/%s needs impersonate on it (butler-apiserver installs the addon with that account's rights), which you do not have",
			account.Namespace, account.Name))
	}
	return nil
}
