package validation

import (
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/hibernation"
	"github.com/butlerdotdev/butler-apiserver/pkg/maintenance"
)

// validateMaintenance checks a maintenance spec: a cluster's, a Team's default or ButlerConfig's.
func validateMaintenance(m *butler.MaintenanceSpec, fldPath *field.Path) field.ErrorList {
	if m == nil || m.Window == nil {
		return nil
	}
	w, p := m.Window, fldPath.Child("window")
	var allErrs field.ErrorList
	if _, err := maintenance.ParseStart(w.Start); err != nil {
		allErrs = append(allErrs, field.Invalid(p.Child("start"), w.Start, err.Error()))
	}
	if err := maintenance.CheckDuration(w.Duration.Duration); err != nil {
		allErrs = append(allErrs, field.Invalid(p.Child("duration"), w.Duration.Duration.String(), err.Error()))
	}
	if _, err := hibernation.ParseLocation(w.Location); err != nil {
		allErrs = append(allErrs, field.Invalid(p.Child("location"), w.Location, "not a time zone: "+err.Error()))
	}
	seen := sets.New[time.Weekday]()
	for i, d := range w.Days {
		day, err := maintenance.ParseDay(d)
		switch {
		case err != nil:
			allErrs = append(allErrs, field.NotSupported(p.Child("days").Index(i), d, maintenance.Weekdays))
		case seen.Has(day):
			allErrs = append(allErrs, field.Duplicate(p.Child("days").Index(i), d))
		}
		seen.Insert(day)
	}
	return allErrs
}

// validateVersionCatalog checks ButlerConfig's kubernetesVersions: full versions, each once.
func validateVersionCatalog(versions []butler.OfferedVersion, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, v := range versions {
		p := fldPath.Index(i).Child("version")
		_, errs := validateKubeVersion(v.Version, p)
		allErrs = append(allErrs, errs...)
		if seen.Has(v.Version) {
			allErrs = append(allErrs, field.Duplicate(p, v.Version))
		}
		seen.Insert(v.Version)
	}
	return allErrs
}

// minRepairTimeout keeps a node's brief hiccup (a kubelet restart) from replacing its machine;
// Cluster API refuses a node startup timeout below it too.
const minRepairTimeout = 30 * time.Second

var nodeConditionStatuses = sets.New("True", "False", "Unknown")

// validateAutoRepair checks workers.autoRepair: what a MachineHealthCheck would refuse, said here.
func validateAutoRepair(a *butler.AutoRepair, fldPath *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var allErrs field.ErrorList
	for i, c := range a.UnhealthyConditions {
		p := fldPath.Child("unhealthyConditions").Index(i)
		if c.Type == "" {
			allErrs = append(allErrs, field.Required(p.Child("type"), "a node condition type such as Ready"))
		}
		allErrs = append(allErrs, validateEnum(c.Status, nodeConditionStatuses, p.Child("status"))...)
		if c.Timeout.Duration < minRepairTimeout {
			allErrs = append(allErrs, field.Invalid(p.Child("timeout"), c.Timeout.Duration.String(), "must be at least "+minRepairTimeout.String()))
		}
	}
	if t := a.NodeStartupTimeout; t != nil && t.Duration < minRepairTimeout {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("nodeStartupTimeout"), t.Duration.String(), "must be at least "+minRepairTimeout.String()))
	}
	if m := a.MaxUnhealthy; m != nil {
		p := fldPath.Child("maxUnhealthy")
		if n, err := intstr.GetScaledValueFromIntOrPercent(m, 100, false); err != nil || n < 0 || (m.Type == intstr.String && n > 100) {
			allErrs = append(allErrs, field.Invalid(p, m.String(), "must be a number of workers (>= 0) or a percentage from 0% to 100%"))
		}
	}
	return allErrs
}
