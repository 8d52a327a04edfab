package validation

import (
	"fmt"
	"path/filepath"
	"regexp"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

var (
	snapshotPhases = sets.New(butler.SnapshotPending, butler.SnapshotRunning, butler.SnapshotReady, butler.SnapshotFailed)
	restorePhases  = sets.New(butler.RestoreRunning, butler.RestoreSucceeded, butler.RestoreFailed)
	checksumFormat = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// ValidateTenantClusterSnapshot validates a TenantClusterSnapshot on create.
func ValidateTenantClusterSnapshot(obj *butler.TenantClusterSnapshot) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&obj.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, validateDNSSubdomain(obj.Spec.ClusterRef.Name, field.NewPath("spec", "clusterRef", "name"))...)
	allErrs = append(allErrs, validateSnapshotLabel(obj)...)
	return allErrs
}

// ValidateTenantClusterSnapshotUpdate validates a TenantClusterSnapshot on update: its spec is
// fixed, and it stays labelled with its cluster.
func ValidateTenantClusterSnapshotUpdate(obj, old *butler.TenantClusterSnapshot) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(obj.Spec, old.Spec, field.NewPath("spec"))...)
	allErrs = append(allErrs, validateSnapshotLabel(obj)...)
	return allErrs
}

func validateSnapshotLabel(obj *butler.TenantClusterSnapshot) field.ErrorList {
	if v := obj.Labels[butler.ClusterLabel]; v != obj.Spec.ClusterRef.Name {
		return field.ErrorList{field.Invalid(field.NewPath("metadata", "labels").Key(butler.ClusterLabel), v,
			fmt.Sprintf("must name the snapshot's cluster, %q", obj.Spec.ClusterRef.Name))}
	}
	return nil
}

// ValidateTenantClusterSnapshotStatusUpdate validates a write to the status subresource.
func ValidateTenantClusterSnapshotStatusUpdate(obj, old *butler.TenantClusterSnapshot) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	st, path := &obj.Status, field.NewPath("status")
	allErrs = append(allErrs, validateOptionalEnum(st.Phase, snapshotPhases, path.Child("phase"))...)
	allErrs = append(allErrs, validateMinimum(st.Revision, 0, path.Child("revision"))...)
	allErrs = append(allErrs, validateMinimum(st.ObjectCount, 0, path.Child("objectCount"))...)
	allErrs = append(allErrs, validateMinimum(st.Bytes, 0, path.Child("bytes"))...)
	if st.Checksum != "" && !checksumFormat.MatchString(st.Checksum) {
		allErrs = append(allErrs, field.Invalid(path.Child("checksum"), st.Checksum, "must be sha256:<64 lowercase hex digits>"))
	}
	if st.Phase == butler.SnapshotReady {
		if st.Checksum == "" {
			allErrs = append(allErrs, field.Required(path.Child("checksum"), "a Ready snapshot has a checksum"))
		}
		if st.Location == "" {
			allErrs = append(allErrs, field.Required(path.Child("location"), "a Ready snapshot has a location"))
		}
	}
	if st.KubernetesVersion != "" {
		_, errs := validateKubeVersion(st.KubernetesVersion, path.Child("kubernetesVersion"))
		allErrs = append(allErrs, errs...)
	}
	// A Ready snapshot's data is fixed: a restore checks the data against these.
	if old.Status.Phase == butler.SnapshotReady {
		for _, f := range []struct {
			name     string
			new, old any
		}{
			{"phase", st.Phase, old.Status.Phase}, {"revision", st.Revision, old.Status.Revision},
			{"checksum", st.Checksum, old.Status.Checksum}, {"location", st.Location, old.Status.Location},
			{"kubernetesVersion", st.KubernetesVersion, old.Status.KubernetesVersion},
		} {
			allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(f.new, f.old, path.Child(f.name))...)
		}
	}
	return allErrs
}

// validateRestoreFrom checks spec.restoreFrom; whether the snapshot exists, is Ready, matches
// its checksum and may be read by the asker is admission's (pkg/admission).
func validateRestoreFrom(r *butler.RestoreSource, fldPath *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	return validateDNSSubdomain(r.Name, fldPath.Child("name"))
}

// validateRestoreChange: restoring an existing cluster in place replaces all of its data, so a
// new or changed restoreFrom on update needs confirm set to the cluster's name.
func validateRestoreChange(obj, old *butler.TenantCluster, fldPath *field.Path) field.ErrorList {
	r, o := obj.Spec.RestoreFrom, old.Spec.RestoreFrom
	if r == nil || (o != nil && o.Name == r.Name) {
		return nil
	}
	if r.Confirm != obj.Name {
		return field.ErrorList{field.Invalid(fldPath.Child("confirm"), r.Confirm, fmt.Sprintf(
			"restoring an existing cluster replaces every object it holds now (and stops its control plane while it runs) with snapshot %q's: set confirm to the cluster's name, %q", r.Name, obj.Name))}
	}
	return nil
}

func validateRestoreStatus(st *butler.RestoreStatus, fldPath *field.Path) field.ErrorList {
	if st == nil {
		return nil
	}
	allErrs := validateDNSSubdomain(st.SnapshotName, fldPath.Child("snapshotName"))
	allErrs = append(allErrs, validateOptionalEnum(st.Phase, restorePhases, fldPath.Child("phase"))...)
	allErrs = append(allErrs, validateMinimum(st.ObjectCount, 0, fldPath.Child("objectCount"))...)
	allErrs = append(allErrs, validateMinimum(st.Dropped, 0, fldPath.Child("dropped"))...)
	return allErrs
}

func validateSnapshotStore(s *butler.SnapshotStore, fldPath *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	if s.Directory == nil {
		return field.ErrorList{field.Required(fldPath.Child("directory"), "the snapshot store's kind: directory")}
	}
	p := fldPath.Child("directory", "path")
	switch {
	case s.Directory.Path == "":
		return field.ErrorList{field.Required(p, "")}
	case !filepath.IsAbs(s.Directory.Path) || filepath.Clean(s.Directory.Path) != s.Directory.Path:
		return field.ErrorList{field.Invalid(p, s.Directory.Path, "must be an absolute, clean path")}
	}
	return nil
}
