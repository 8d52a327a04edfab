package validation

import (
	"fmt"
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

// helmReleaseNameMaxLength is Helm's own limit: release names end up in label values and
// Secret names with a suffix.
const helmReleaseNameMaxLength = 53

var (
	tenantAddonPhases = sets.New(
		butler.TenantAddonPending, butler.TenantAddonInstalling, butler.TenantAddonInstalled, butler.TenantAddonUpgrading,
		butler.TenantAddonDegraded, butler.TenantAddonFailed, butler.TenantAddonDeleting,
	)
	addonCategories = sets.New[butler.AddonCategory](
		"cni", "loadbalancer", "storage", "certmanager", "ingress", "observability", "backup",
		"gitops", "security", "dns", "database", "messaging", "service-mesh", "other",
	)
)

// ValidateTenantAddon validates a TenantAddon on create.
func ValidateTenantAddon(obj *butler.TenantAddon) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&obj.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, validateTenantAddonSpec(&obj.Spec, obj.Name, field.NewPath("spec"))...)
	return allErrs
}

// ValidateTenantAddonUpdate validates a TenantAddon on update; it stays bound to its cluster,
// and a Team's own chart (spec.helm) stays one.
func ValidateTenantAddonUpdate(obj, old *butler.TenantAddon) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	specPath := field.NewPath("spec")
	allErrs = append(allErrs, validateTenantAddonSpec(&obj.Spec, obj.Name, specPath)...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(obj.Spec.ClusterRef, old.Spec.ClusterRef, specPath.Child("clusterRef"))...)
	// The uninstall's allow-list is decided from the spec at delete time: a release of a Team's
	// chart recorded before releases were labelled restricted would lose it if spec.helm could
	// be swapped for a catalog addon, or a catalog addon for one that does not exist (whose
	// values, and so whether they were a Team's, cannot be worked out), before the delete.
	switch {
	case old.Spec.Helm != nil && obj.Spec.Helm == nil:
		allErrs = append(allErrs, field.Forbidden(specPath.Child("helm"),
			"a TenantAddon of a chart from a repository stays one (its uninstall is checked as a Team's chart): delete it and create the catalog addon"))
	case old.Spec.Addon != "" && obj.Spec.Addon != "":
		allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(obj.Spec.Addon, old.Spec.Addon, specPath.Child("addon"))...)
	}
	return allErrs
}

// ValidateTenantAddonStatusUpdate validates a write to TenantAddon's status subresource.
func ValidateTenantAddonStatusUpdate(obj, old *butler.TenantAddon) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, validateAddonStatus(&obj.Status, field.NewPath("status"))...)
}

// validateAddonStatus checks the status TenantAddons and ManagementAddons share.
func validateAddonStatus(status *butler.TenantAddonStatus, statusPath *field.Path) field.ErrorList {
	allErrs := validateOptionalEnum(status.Phase, tenantAddonPhases, statusPath.Child("phase"))
	allErrs = append(allErrs, validateMinimum(status.ObservedGeneration, 0, statusPath.Child("observedGeneration"))...)
	if rel := status.HelmRelease; rel != nil {
		allErrs = append(allErrs, validateMinimum(rel.Revision, 0, statusPath.Child("helmRelease", "revision"))...)
	}
	return allErrs
}

func validateTenantAddonSpec(spec *butler.TenantAddonSpec, name string, fldPath *field.Path) field.ErrorList {
	allErrs := validateDNSSubdomain(spec.ClusterRef.Name, fldPath.Child("clusterRef", "name"))

	switch {
	case spec.Addon != "" && spec.Helm != nil:
		allErrs = append(allErrs, field.Forbidden(fldPath, "exactly one of addon or helm may be set, not both"))
	case spec.Addon == "" && spec.Helm == nil:
		allErrs = append(allErrs, field.Required(fldPath, "exactly one of addon or helm must be set"))
	}
	if spec.Addon != "" {
		allErrs = append(allErrs, validateDNSSubdomain(spec.Addon, fldPath.Child("addon"))...)
	}
	if spec.Helm != nil {
		allErrs = append(allErrs, validateHelmChart(spec.Helm, fldPath.Child("helm"))...)
	}
	allErrs = append(allErrs, validateJSONObject(spec.Values, fldPath.Child("values"))...)

	depsPath := fldPath.Child("dependsOn")
	seen := sets.New[string]()
	for i, dep := range spec.DependsOn {
		namePath := depsPath.Index(i).Child("name")
		errs := validateDNSSubdomain(dep.Name, namePath)
		switch {
		case len(errs) > 0:
			allErrs = append(allErrs, errs...)
		case dep.Name == name:
			allErrs = append(allErrs, field.Invalid(namePath, dep.Name, "a TenantAddon may not depend on itself"))
		case seen.Has(dep.Name):
			allErrs = append(allErrs, field.Duplicate(namePath, dep.Name))
		}
		seen.Insert(dep.Name)
	}
	return allErrs
}

func validateHelmChart(h *butler.HelmChartSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateURL(h.Repository, chartSchemes, fldPath.Child("repository"))
	allErrs = append(allErrs, requireString(h.Chart, fldPath.Child("chart"))...)
	if h.ReleaseName != "" {
		allErrs = append(allErrs, validateReleaseName(h.ReleaseName, fldPath.Child("releaseName"))...)
	}
	allErrs = append(allErrs, validateOptionalDNSLabel(h.Namespace, fldPath.Child("namespace"))...)
	return allErrs
}

// validateReleaseName requires a DNS label within Helm's 53 character limit.
func validateReleaseName(name string, fldPath *field.Path) field.ErrorList {
	allErrs := validateDNSLabel(name, fldPath)
	if len(allErrs) == 0 && len(name) > helmReleaseNameMaxLength {
		allErrs = append(allErrs, field.TooLong(fldPath, name, helmReleaseNameMaxLength))
	}
	return allErrs
}

// ValidateAddonDefinition validates an AddonDefinition on create.
func ValidateAddonDefinition(obj *butler.AddonDefinition) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&obj.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, validateAddonDefinitionSpec(&obj.Spec, obj.Name, field.NewPath("spec"))...)
	return allErrs
}

// ValidateAddonDefinitionUpdate validates an AddonDefinition on update. The catalog entry may
// change freely: installed TenantAddons keep the version they resolved.
func ValidateAddonDefinitionUpdate(obj, old *butler.AddonDefinition) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateAddonDefinitionSpec(&obj.Spec, obj.Name, field.NewPath("spec"))...)
	return allErrs
}

func validateAddonDefinitionSpec(spec *butler.AddonDefinitionSpec, name string, fldPath *field.Path) field.ErrorList {
	allErrs := validateRequiredEnum(spec.Category, addonCategories, fldPath.Child("category"))

	chartPath := fldPath.Child("chart")
	allErrs = append(allErrs, validateChartRepository(spec.Chart.Repository, chartPath.Child("repository"))...)
	allErrs = append(allErrs, requireString(spec.Chart.Name, chartPath.Child("name"))...)
	versionsPath := chartPath.Child("availableVersions")
	allErrs = append(allErrs, validateNonEmptyStrings(spec.Chart.AvailableVersions, versionsPath)...)
	allErrs = append(allErrs, validateUniqueStrings(spec.Chart.AvailableVersions, versionsPath)...)
	if def := spec.Chart.DefaultVersion; def != "" && len(spec.Chart.AvailableVersions) > 0 {
		if !sets.New(spec.Chart.AvailableVersions...).Has(def) {
			allErrs = append(allErrs, field.NotSupported(chartPath.Child("defaultVersion"), def, spec.Chart.AvailableVersions))
		}
	}

	if d := spec.Defaults; d != nil {
		defaultsPath := fldPath.Child("defaults")
		allErrs = append(allErrs, validateOptionalDNSLabel(d.Namespace, defaultsPath.Child("namespace"))...)
		if d.ReleaseName != "" {
			allErrs = append(allErrs, validateReleaseName(d.ReleaseName, defaultsPath.Child("releaseName"))...)
		}
		allErrs = append(allErrs, validateJSONObject(d.Values, defaultsPath.Child("values"))...)
		if d.Timeout != nil && d.Timeout.Duration <= 0 {
			allErrs = append(allErrs, field.Invalid(defaultsPath.Child("timeout"), d.Timeout.Duration.String(), "must be greater than 0"))
		}
	}

	depsPath := fldPath.Child("dependsOn")
	for i, dep := range spec.DependsOn {
		errs := validateName(dep, utilvalidation.IsDNS1123Subdomain, depsPath.Index(i))
		if len(errs) == 0 && dep == name {
			errs = append(errs, field.Invalid(depsPath.Index(i), dep, "an AddonDefinition may not depend on itself"))
		}
		allErrs = append(allErrs, errs...)
	}
	allErrs = append(allErrs, validateUniqueStrings(spec.DependsOn, depsPath)...)
	return allErrs
}

// validateChartRepository accepts what Helm can pull from (http(s):// and oci:// URLs) and,
// for charts bundled with the platform, a local path: anything without a scheme.
func validateChartRepository(repo string, fldPath *field.Path) field.ErrorList {
	if strings.TrimSpace(repo) == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if !strings.Contains(repo, "://") {
		return nil
	}
	if errs := validateURL(repo, chartSchemes, fldPath); len(errs) > 0 {
		return field.ErrorList{field.Invalid(fldPath, repo, fmt.Sprintf("must be a %s URL or a local chart path", schemeList(chartSchemes)))}
	}
	return nil
}
