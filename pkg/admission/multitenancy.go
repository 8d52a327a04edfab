package admission

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

// MultiTenancy enforces ButlerConfig's multiTenancy.mode on TenantClusters. In every mode
// spec.teamRef, if set, must name the Team whose namespace the cluster is in (a Team's
// namespace has the Team's name): the teamRef selects the Team's ProviderConfig and limits, so
// naming another Team would use what is that Team's. In Enforced mode a TenantCluster must also
// be created in a Team's namespace.
type MultiTenancy struct{ base }

var _ admission.ValidationInterface = &MultiTenancy{}

// NewMultiTenancy returns the plugin.
func NewMultiTenancy() *MultiTenancy {
	return &MultiTenancy{base{Handler: admission.NewHandler(admission.Create, admission.Update)}}
}

// Validate implements admission.ValidationInterface.
func (p *MultiTenancy) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != tenantClusters || a.GetSubresource() != "" {
		return nil
	}
	tc, ok := a.GetObject().(*butler.TenantCluster)
	if !ok {
		return nil
	}
	if old, ok := a.GetOldObject().(*butler.TenantCluster); ok && a.GetOperation() == admission.Update &&
		teamRefName(old) == teamRefName(tc) {
		return nil // only a changed teamRef is checked again
	}
	ns := a.GetNamespace()
	if ref := teamRefName(tc); ref != "" && ref != ns {
		return apierrors.NewInvalid(schema.GroupKind{Group: butler.GroupName, Kind: "TenantCluster"}, a.GetName(), field.ErrorList{
			field.Invalid(field.NewPath("spec", "teamRef", "name"), ref,
				fmt.Sprintf("must be %q: a TenantCluster belongs to the Team whose namespace it is in (a Team's namespace has the Team's name)", ns)),
		})
	}
	config, err := p.store().Config(ctx)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if config == nil || config.Spec.MultiTenancy.Mode != butler.MultiTenancyEnforced {
		return nil
	}
	team, err := p.teamOf(ctx, ns)
	if err != nil {
		return err
	}
	if team == nil {
		return admission.NewForbidden(a, fmt.Errorf(
			"multiTenancy mode is Enforced: namespace %q is not a Team's namespace (a TenantCluster must live in the namespace of its Team)", ns))
	}
	return nil
}

func teamRefName(tc *butler.TenantCluster) string {
	if tc.Spec.TeamRef == nil {
		return ""
	}
	return tc.Spec.TeamRef.Name
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
