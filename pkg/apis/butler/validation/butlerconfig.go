package validation

import (
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

var (
	multiTenancyModes     = sets.New(butler.MultiTenancyEnforced, butler.MultiTenancyOptional, butler.MultiTenancyDisabled)
	exposureModes         = sets.New(butler.ExposureLoadBalancer, butler.ExposureIngress, butler.ExposureGateway)
	controlPlaneProviders = sets.New(butler.ControlPlaneProviderSteward, butler.ControlPlaneProviderKamaji)
)

// ValidateButlerConfig validates a ButlerConfig on create.
func ValidateButlerConfig(obj *butler.ButlerConfig) field.ErrorList {
	metaPath := field.NewPath("metadata")
	allErrs := apimachineryvalidation.ValidateObjectMeta(&obj.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, metaPath)
	// An empty name is already reported as Required by ValidateObjectMeta.
	if obj.Name != "" && obj.Name != butler.ButlerConfigName {
		allErrs = append(allErrs, field.Invalid(metaPath.Child("name"), obj.Name, `must be "butler": ButlerConfig is a singleton`))
	}
	allErrs = append(allErrs, validateButlerConfigSpec(&obj.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidateButlerConfigUpdate validates a ButlerConfig on update; the name cannot change, so the
// singleton rule needs no second check.
func ValidateButlerConfigUpdate(obj, old *butler.ButlerConfig) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateButlerConfigSpec(&obj.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidateButlerConfigStatusUpdate validates a write to ButlerConfig's status subresource.
func ValidateButlerConfigStatusUpdate(obj, old *butler.ButlerConfig) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	statusPath := field.NewPath("status")
	allErrs = append(allErrs, validateMinimum(obj.Status.TeamCount, 0, statusPath.Child("teamCount"))...)
	allErrs = append(allErrs, validateMinimum(obj.Status.ClusterCount, 0, statusPath.Child("clusterCount"))...)
	allErrs = append(allErrs, validateOptionalEnum(obj.Status.ControlPlaneExposureMode, exposureModes, statusPath.Child("controlPlaneExposureMode"))...)
	allErrs = append(allErrs, validateMinimum(obj.Status.ObservedGeneration, 0, statusPath.Child("observedGeneration"))...)
	return allErrs
}

func validateButlerConfigSpec(spec *butler.ButlerConfigSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateOptionalEnum(spec.MultiTenancy.Mode, multiTenancyModes, fldPath.Child("multiTenancy", "mode"))
	allErrs = append(allErrs, validateOptionalDNSLabel(spec.DefaultNamespace, fldPath.Child("defaultNamespace"))...)
	allErrs = append(allErrs, validateNamespacedRef(spec.DefaultProviderConfigRef, utilvalidation.IsDNS1123Subdomain, fldPath.Child("defaultProviderConfigRef"))...)
	if spec.DefaultTeamLimits != nil {
		allErrs = append(allErrs, validateResourceLimits(spec.DefaultTeamLimits, fldPath.Child("defaultTeamLimits"))...)
	}
	allErrs = append(allErrs, validateControlPlaneExposure(&spec.ControlPlaneExposure, fldPath.Child("controlPlaneExposure"))...)
	allErrs = append(allErrs, validateOptionalEnum(spec.ControlPlaneProvider, controlPlaneProviders, fldPath.Child("controlPlaneProvider"))...)
	allErrs = append(allErrs, validateSnapshotStore(spec.SnapshotStore, fldPath.Child("snapshotStore"))...)
	allErrs = append(allErrs, validateVersionCatalog(spec.KubernetesVersions, fldPath.Child("kubernetesVersions"))...)
	allErrs = append(allErrs, validateMaintenance(spec.Maintenance, fldPath.Child("maintenance"))...)
	nsPath := fldPath.Child("controlPlaneProviderNamespaces")
	for i, ns := range spec.ControlPlaneProviderNamespaces {
		allErrs = append(allErrs, validateDNSLabel(ns, nsPath.Index(i))...)
	}
	allErrs = append(allErrs, validateUniqueStrings(spec.ControlPlaneProviderNamespaces, nsPath)...)
	return allErrs
}

func validateControlPlaneExposure(exp *butler.ControlPlaneExposure, fldPath *field.Path) field.ErrorList {
	allErrs := validateOptionalEnum(exp.Mode, exposureModes, fldPath.Child("mode"))
	hostPath := fldPath.Child("hostname")
	switch {
	case exp.Hostname != "":
		// A wildcard is accepted too: tenant endpoints may be served under *.example.com.
		if len(utilvalidation.IsDNS1123Subdomain(exp.Hostname)) > 0 && len(utilvalidation.IsWildcardDNS1123Subdomain(exp.Hostname)) > 0 {
			allErrs = append(allErrs, field.Invalid(hostPath, exp.Hostname, "must be a DNS name such as k8s.example.com"))
		}
	case exp.Mode == butler.ExposureIngress || exp.Mode == butler.ExposureGateway:
		allErrs = append(allErrs, field.Required(hostPath, "required when mode is "+string(exp.Mode)))
	}
	if exp.IngressClassName != "" {
		allErrs = append(allErrs, validateDNSSubdomain(exp.IngressClassName, fldPath.Child("ingressClassName"))...)
	}
	allErrs = append(allErrs, validateNamespacedRef(exp.GatewayRef, utilvalidation.IsDNS1123Subdomain, fldPath.Child("gatewayRef"))...)
	return allErrs
}
