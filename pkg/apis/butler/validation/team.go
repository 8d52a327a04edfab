package validation

import (
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

var (
	teamRoles     = sets.New(butler.TeamRoleAdmin, butler.TeamRoleOperator, butler.TeamRoleViewer, butler.TeamRoleMember)
	teamPhases    = sets.New(butler.TeamPhasePending, butler.TeamPhaseReady, butler.TeamPhaseTerminating, butler.TeamPhaseFailed)
	quotaStatuses = sets.New("OK", "Warning", "Exceeded")
)

// ValidateTeam validates a Team on create. Its name must be a DNS label because the Team's
// namespace carries the same name.
func ValidateTeam(obj *butler.Team) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&obj.ObjectMeta, false, apimachineryvalidation.NameIsDNSLabel, field.NewPath("metadata"))
	allErrs = append(allErrs, validateTeamSpec(&obj.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidateTeamUpdate validates a Team on update.
func ValidateTeamUpdate(obj, old *butler.Team) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateTeamSpec(&obj.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidateTeamStatusUpdate validates a write to Team's status subresource.
func ValidateTeamStatusUpdate(obj, old *butler.Team) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	status := &obj.Status
	statusPath := field.NewPath("status")
	allErrs = append(allErrs, validateOptionalEnum(status.Phase, teamPhases, statusPath.Child("phase"))...)
	allErrs = append(allErrs, validateOptionalEnum(status.QuotaStatus, quotaStatuses, statusPath.Child("quotaStatus"))...)
	allErrs = append(allErrs, validateOptionalDNSLabel(status.Namespace, statusPath.Child("namespace"))...)
	allErrs = append(allErrs, validateMinimum(status.ClusterCount, 0, statusPath.Child("clusterCount"))...)
	allErrs = append(allErrs, validateMinimum(status.MemberCount, 0, statusPath.Child("memberCount"))...)
	allErrs = append(allErrs, validateMinimum(status.ObservedGeneration, 0, statusPath.Child("observedGeneration"))...)
	if usage := status.ResourceUsage; usage != nil {
		usagePath := statusPath.Child("resourceUsage")
		allErrs = append(allErrs, validateMinimum(usage.Clusters, 0, usagePath.Child("clusters"))...)
		allErrs = append(allErrs, validateMinimum(usage.Nodes, 0, usagePath.Child("nodes"))...)
		allErrs = append(allErrs, validateNonNegativeQuantity(usage.CPU, usagePath.Child("cpu"))...)
		allErrs = append(allErrs, validateNonNegativeQuantity(usage.Memory, usagePath.Child("memory"))...)
		allErrs = append(allErrs, validateNonNegativeQuantity(usage.Storage, usagePath.Child("storage"))...)
	}
	return allErrs
}

func validateTeamSpec(spec *butler.TeamSpec, fldPath *field.Path) field.ErrorList {
	accessPath := fldPath.Child("access")
	allErrs := validateTeamMembers(spec.Access.Users, accessPath.Child("users"))
	allErrs = append(allErrs, validateTeamMembers(spec.Access.Groups, accessPath.Child("groups"))...)
	if spec.ResourceLimits != nil {
		allErrs = append(allErrs, validateResourceLimits(spec.ResourceLimits, fldPath.Child("resourceLimits"))...)
	}
	allErrs = append(allErrs, validateNamespacedRef(spec.ProviderConfigRef, utilvalidation.IsDNS1123Subdomain, fldPath.Child("providerConfigRef"))...)
	if spec.ClusterDefaults != nil {
		allErrs = append(allErrs, validateClusterDefaults(spec.ClusterDefaults, fldPath.Child("clusterDefaults"))...)
	}
	return allErrs
}

// validateTeamMembers checks one list (users or groups); a name may appear once per list so
// that a member's role is never ambiguous.
func validateTeamMembers(members []butler.TeamMember, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, m := range members {
		idxPath := fldPath.Index(i)
		namePath := idxPath.Child("name")
		switch {
		case strings.TrimSpace(m.Name) == "":
			allErrs = append(allErrs, field.Required(namePath, ""))
		case seen.Has(m.Name):
			allErrs = append(allErrs, field.Duplicate(namePath, m.Name))
		}
		seen.Insert(m.Name)
		allErrs = append(allErrs, validateOptionalEnum(m.Role, teamRoles, idxPath.Child("role"))...)
	}
	return allErrs
}

// validateResourceLimits checks Team.spec.resourceLimits and ButlerConfig.spec.defaultTeamLimits.
func validateResourceLimits(limits *butler.ResourceLimits, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	allErrs = append(allErrs, validateOptionalMinimum(limits.MaxClusters, 0, fldPath.Child("maxClusters"))...)
	allErrs = append(allErrs, validateOptionalMinimum(limits.MaxWorkersPerCluster, 0, fldPath.Child("maxWorkersPerCluster"))...)
	allErrs = append(allErrs, validateOptionalMinimum(limits.MaxTotalWorkers, 0, fldPath.Child("maxTotalWorkers"))...)
	allErrs = append(allErrs, validateNonNegativeQuantity(limits.MaxTotalCPU, fldPath.Child("maxTotalCPU"))...)
	allErrs = append(allErrs, validateNonNegativeQuantity(limits.MaxTotalMemory, fldPath.Child("maxTotalMemory"))...)
	allErrs = append(allErrs, validateNonNegativeQuantity(limits.MaxTotalStorage, fldPath.Child("maxTotalStorage"))...)
	allErrs = append(allErrs, validateOptionalMinimum(limits.MaxSnapshots, 0, fldPath.Child("maxSnapshots"))...)
	allErrs = append(allErrs, validateNonNegativeQuantity(limits.MaxSnapshotBytes, fldPath.Child("maxSnapshotBytes"))...)

	versionsPath := fldPath.Child("allowedKubernetesVersions")
	for i, v := range limits.AllowedKubernetesVersions {
		if !isAllowedVersionPattern(v) {
			allErrs = append(allErrs, field.Invalid(versionsPath.Index(i), v, "must be vMAJOR.MINOR (a whole minor line, e.g. v1.30) or vMAJOR.MINOR.PATCH (e.g. v1.30.2)"))
		}
	}
	providersPath := fldPath.Child("allowedProviders")
	for i, p := range limits.AllowedProviders {
		allErrs = append(allErrs, validateEnum(butler.ProviderType(p), providerTypes, providersPath.Index(i))...)
	}

	allowedPath, deniedPath := fldPath.Child("allowedAddons"), fldPath.Child("deniedAddons")
	allErrs = append(allErrs, validateNonEmptyStrings(limits.AllowedAddons, allowedPath)...)
	allErrs = append(allErrs, validateNonEmptyStrings(limits.DeniedAddons, deniedPath)...)
	allowed := sets.New(limits.AllowedAddons...)
	for i, a := range limits.DeniedAddons {
		if a != "" && allowed.Has(a) {
			allErrs = append(allErrs, field.Invalid(deniedPath.Index(i), a, "must not also be listed in allowedAddons"))
		}
	}
	return allErrs
}

// isAllowedVersionPattern accepts vMAJOR.MINOR.PATCH (one release) and vMAJOR.MINOR (every
// patch of a minor line), so a Team need not be edited for each patch release.
func isAllowedVersionPattern(v string) bool {
	if _, ok := parseKubeVersion(v); ok {
		return true
	}
	if strings.Count(v, ".") != 1 {
		return false
	}
	_, ok := parseKubeVersion(v + ".0")
	return ok
}

func validateClusterDefaults(d *butler.ClusterDefaults, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if d.KubernetesVersion != "" {
		// The default becomes a TenantCluster's kubernetesVersion, so it needs the same full form.
		_, errs := validateKubeVersion(d.KubernetesVersion, fldPath.Child("kubernetesVersion"))
		allErrs = append(allErrs, errs...)
	}
	allErrs = append(allErrs, validateOptionalMinimum(d.WorkerCount, 0, fldPath.Child("workerCount"))...)
	allErrs = append(allErrs, validateOptionalMinimum(d.WorkerCPU, 1, fldPath.Child("workerCPU"))...)
	allErrs = append(allErrs, validatePositiveQuantity(d.WorkerMemory, fldPath.Child("workerMemory"))...)
	allErrs = append(allErrs, validatePositiveQuantity(d.WorkerDisk, fldPath.Child("workerDisk"))...)
	allErrs = append(allErrs, validateNonEmptyStrings(d.DefaultAddons, fldPath.Child("defaultAddons"))...)
	allErrs = append(allErrs, validateMaintenance(d.Maintenance, fldPath.Child("maintenance"))...)
	return allErrs
}
