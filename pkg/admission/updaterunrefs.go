package admission

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/clock"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

// UpdateRunRefs refuses, with a 422 naming the field, an UpdateRun whose strategyRef names no
// UpdateStrategy of its namespace or whose target version the platform's catalog does not offer
// (or has expired): said at create, not found out by the UpdateRun controller later.
type UpdateRunRefs struct {
	base
	clock clock.PassiveClock
}

var _ admission.ValidationInterface = &UpdateRunRefs{}

var updateRuns = butler.Resource("updateruns")

// NewUpdateRunRefs returns the plugin.
func NewUpdateRunRefs() *UpdateRunRefs {
	return &UpdateRunRefs{base: base{Handler: admission.NewHandler(admission.Create)}, clock: clock.RealClock{}}
}

// Validate implements admission.ValidationInterface.
func (p *UpdateRunRefs) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != updateRuns || a.GetSubresource() != "" {
		return nil
	}
	run, ok := a.GetObject().(*butler.UpdateRun)
	if !ok {
		return nil
	}
	var errs field.ErrorList
	strategy, err := p.store().UpdateStrategy(ctx, a.GetNamespace(), run.Spec.StrategyRef.Name)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if strategy == nil {
		errs = append(errs, field.Invalid(field.NewPath("spec", "strategyRef", "name"), run.Spec.StrategyRef.Name,
			fmt.Sprintf("no UpdateStrategy %q in namespace %q", run.Spec.StrategyRef.Name, a.GetNamespace())))
	}
	config, err := p.store().Config(ctx)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	version := run.Spec.Target.KubernetesVersion
	if msg := catalogRefusal(CatalogOf(config), version, p.clock); msg != "" {
		errs = append(errs, field.Invalid(field.NewPath("spec", "target", "kubernetesVersion"), version, msg))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: butler.GroupName, Kind: "UpdateRun"}, a.GetName(), errs)
	}
	return nil
}
