package validation

import (
	"time"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

// Bounds of an update strategy's durations: a gate held or a wait longer than a day is a
// mistake, not a plan.
const (
	maxUpdateWait    = 24 * time.Hour
	maxGateHoldFor   = 24 * time.Hour
	maxGateTimeout   = 24 * time.Hour
	maxUpdateStages  = 20
	maxStageTasks    = 10
	maxGateCondition = 20
)

var (
	updateFailurePolicies = sets.New(butler.UpdateFailurePause, butler.UpdateFailureAbandon, butler.UpdateFailureContinue)
	updateRunStates       = sets.New(butler.UpdateRunStateRun, butler.UpdateRunStatePlan, butler.UpdateRunStatePause, butler.UpdateRunStateAbandon)
	updateRunPhases       = sets.New(butler.UpdateRunPlanned, butler.UpdateRunRunning, butler.UpdateRunWaiting, butler.UpdateRunWaitingForApproval,
		butler.UpdateRunPaused, butler.UpdateRunSucceeded, butler.UpdateRunFailed, butler.UpdateRunAbandoned)
)

// ValidateUpdateStrategy validates an UpdateStrategy on create.
func ValidateUpdateStrategy(obj *butler.UpdateStrategy) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&obj.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(allErrs, ValidateUpdateStrategySpec(&obj.Spec, field.NewPath("spec"))...)
}

// ValidateUpdateStrategyUpdate validates an UpdateStrategy on update: runs already started keep
// their own copy, so any valid spec may replace it.
func ValidateUpdateStrategyUpdate(obj, old *butler.UpdateStrategy) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, ValidateUpdateStrategySpec(&obj.Spec, field.NewPath("spec"))...)
}

// ValidateUpdateStrategySpec checks a strategy's stages (also the frozen copy in a run's status).
func ValidateUpdateStrategySpec(spec *butler.UpdateStrategySpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	stagesPath := fldPath.Child("stages")
	switch {
	case len(spec.Stages) == 0:
		return field.ErrorList{field.Required(stagesPath, "at least one stage")}
	case len(spec.Stages) > maxUpdateStages:
		allErrs = append(allErrs, field.TooMany(stagesPath, len(spec.Stages), maxUpdateStages))
	}
	names := sets.New[string]()
	for i := range spec.Stages {
		s, p := &spec.Stages[i], stagesPath.Index(i)
		allErrs = append(allErrs, validateDNSLabel(s.Name, p.Child("name"))...)
		if names.Has(s.Name) {
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), s.Name))
		}
		names.Insert(s.Name)
		allErrs = append(allErrs, validateUpdateStage(s, p)...)
	}
	return allErrs
}

func validateUpdateStage(s *butler.UpdateStage, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if s.Selector != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(s.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
	}
	if m := s.MaxConcurrency; m != nil {
		if n, err := intstr.GetScaledValueFromIntOrPercent(m, 100, false); err != nil || n < 1 || (m.Type == intstr.String && n > 100) {
			allErrs = append(allErrs, field.Invalid(p.Child("maxConcurrency"), m.String(), "must be a number of clusters (>= 1) or a percentage from 1% to 100%"))
		}
	}
	if g := s.HealthGate; g != nil {
		gp := p.Child("healthGate")
		if len(g.Conditions) > maxGateCondition {
			allErrs = append(allErrs, field.TooMany(gp.Child("conditions"), len(g.Conditions), maxGateCondition))
		}
		allErrs = append(allErrs, validateNonEmptyStrings(g.Conditions, gp.Child("conditions"))...)
		allErrs = append(allErrs, validateDurationAtMost(g.HoldFor.Duration, maxGateHoldFor, gp.Child("holdFor"))...)
		allErrs = append(allErrs, validateDurationAtMost(g.Timeout.Duration, maxGateTimeout, gp.Child("timeout"))...)
		allErrs = append(allErrs, validateMinimum(g.MaxFailed, 0, gp.Child("maxFailed"))...)
	}
	if len(s.AfterStage) > maxStageTasks {
		allErrs = append(allErrs, field.TooMany(p.Child("afterStage"), len(s.AfterStage), maxStageTasks))
	}
	for j, t := range s.AfterStage {
		tp := p.Child("afterStage").Index(j)
		switch {
		case (t.Wait == nil) == (t.Approval == nil):
			allErrs = append(allErrs, field.Invalid(tp, "", "exactly one of wait and approval"))
		case t.Wait != nil && t.Wait.Duration.Duration <= 0:
			allErrs = append(allErrs, field.Invalid(tp.Child("wait", "duration"), t.Wait.Duration.Duration.String(), "must be positive"))
		case t.Wait != nil:
			allErrs = append(allErrs, validateDurationAtMost(t.Wait.Duration.Duration, maxUpdateWait, tp.Child("wait", "duration"))...)
		}
	}
	return allErrs
}

func validateDurationAtMost(d, limit time.Duration, fldPath *field.Path) field.ErrorList {
	if d < 0 || d > limit {
		return field.ErrorList{field.Invalid(fldPath, d.String(), "must be from 0 to "+limit.String())}
	}
	return nil
}

// ValidateUpdateRun validates an UpdateRun on create. That the strategy exists and the catalog
// offers the target is admission's (butler.butlerlabs.dev/UpdateRunRefs): both read other objects.
func ValidateUpdateRun(obj *butler.UpdateRun) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&obj.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec, p := &obj.Spec, field.NewPath("spec")
	allErrs = append(allErrs, validateLocalRef(&spec.StrategyRef, utilvalidation.IsDNS1123Subdomain, p.Child("strategyRef"))...)
	_, errs := validateKubeVersion(spec.Target.KubernetesVersion, p.Child("target", "kubernetesVersion"))
	allErrs = append(allErrs, errs...)
	allErrs = append(allErrs, validateRequiredEnum(spec.OnFailure, updateFailurePolicies, p.Child("onFailure"))...)
	allErrs = append(allErrs, validateRequiredEnum(spec.State, updateRunStates, p.Child("state"))...)
	return allErrs
}

// ValidateUpdateRunUpdate validates an UpdateRun on update: only spec.state may change (a run is
// one upgrade; another target is another run), and an abandoned run stays abandoned.
func ValidateUpdateRunUpdate(obj, old *butler.UpdateRun) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	p := field.NewPath("spec")
	allErrs = append(allErrs, validateRequiredEnum(obj.Spec.State, updateRunStates, p.Child("state"))...)
	rest, oldRest := obj.Spec, old.Spec
	rest.State, oldRest.State = "", ""
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(rest, oldRest, p)...)
	if old.Spec.State == butler.UpdateRunStateAbandon && obj.Spec.State != butler.UpdateRunStateAbandon {
		allErrs = append(allErrs, field.Invalid(p.Child("state"), obj.Spec.State, "an abandoned run cannot be resumed; start a new run"))
	}
	return allErrs
}

// ValidateUpdateRunStatusUpdate validates a write to the status subresource.
func ValidateUpdateRunStatusUpdate(obj, old *butler.UpdateRun) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	st, p := &obj.Status, field.NewPath("status")
	allErrs = append(allErrs, validateOptionalEnum(st.Phase, updateRunPhases, p.Child("phase"))...)
	if old.Status.Strategy != nil {
		allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(st.Strategy, old.Status.Strategy, p.Child("strategy"))...)
	}
	return allErrs
}

// ValidateUpdateRunApproval validates the body of updateruns/approve.
func ValidateUpdateRunApproval(obj *butler.UpdateRunApproval) field.ErrorList {
	return validateDNSLabel(obj.Spec.Stage, field.NewPath("spec", "stage"))
}
