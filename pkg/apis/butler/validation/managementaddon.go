package validation

import (
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

// ValidateManagementAddon validates a ManagementAddon on create.
func ValidateManagementAddon(obj *butler.ManagementAddon) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&obj.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(allErrs, validateManagementAddonSpec(&obj.Spec, field.NewPath("spec"))...)
}

// ValidateManagementAddonUpdate validates a ManagementAddon on update. What names the release
// stays: the uninstall removes the release the spec names at delete time, so moving it would
// leave the old one installed and unowned. The account may change.
func ValidateManagementAddonUpdate(obj, old *butler.ManagementAddon) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	specPath := field.NewPath("spec")
	allErrs = append(allErrs, validateManagementAddonSpec(&obj.Spec, specPath)...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(obj.Spec.Addon, old.Spec.Addon, specPath.Child("addon"))...)
	switch newHelm, oldHelm := obj.Spec.Helm, old.Spec.Helm; {
	case (newHelm == nil) != (oldHelm == nil):
		allErrs = append(allErrs, field.Forbidden(specPath.Child("helm"),
			"a ManagementAddon of a catalog addon stays one, and one of a chart stays one: delete it and create another"))
	case newHelm != nil:
		helmPath := specPath.Child("helm")
		allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(newHelm.Chart, oldHelm.Chart, helmPath.Child("chart"))...)
		allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(newHelm.ReleaseName, oldHelm.ReleaseName, helmPath.Child("releaseName"))...)
		allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(newHelm.Namespace, oldHelm.Namespace, helmPath.Child("namespace"))...)
	}
	return allErrs
}

// ValidateManagementAddonStatusUpdate validates a write to ManagementAddon's status subresource.
func ValidateManagementAddonStatusUpdate(obj, old *butler.ManagementAddon) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, validateAddonStatus(&obj.Status, field.NewPath("status"))...)
}

func validateManagementAddonSpec(spec *butler.ManagementAddonSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case spec.Addon != "" && spec.Helm != nil:
		allErrs = append(allErrs, field.Forbidden(fldPath, "exactly one of addon or helm may be set, not both"))
	case spec.Addon == "" && spec.Helm == nil:
		allErrs = append(allErrs, field.Required(fldPath, "exactly one of addon or helm must be set"))
	}
	if spec.Addon != "" {
		allErrs = append(allErrs, validateDNSSubdomain(spec.Addon, fldPath.Child("addon"))...)
	}
	if h := spec.Helm; h != nil {
		allErrs = append(allErrs, validateHelmChart(h, fldPath.Child("helm"))...)
		// A management release never lands in the default namespace by omission.
		if h.Namespace == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("helm", "namespace"),
				"the namespace of the management cluster the chart is installed into"))
		}
	}
	allErrs = append(allErrs, validateJSONObject(spec.Values, fldPath.Child("values"))...)
	account := fldPath.Child("serviceAccountRef")
	if spec.ServiceAccountRef.Namespace == "" {
		allErrs = append(allErrs, field.Required(account.Child("namespace"), "the namespace of the ServiceAccount the addon is installed as"))
	} else {
		allErrs = append(allErrs, validateDNSLabel(spec.ServiceAccountRef.Namespace, account.Child("namespace"))...)
	}
	if spec.ServiceAccountRef.Name == "" {
		allErrs = append(allErrs, field.Required(account.Child("name"), "the ServiceAccount the addon is installed as"))
	} else {
		allErrs = append(allErrs, validateDNSSubdomain(spec.ServiceAccountRef.Name, account.Child("name"))...)
	}
	return allErrs
}
