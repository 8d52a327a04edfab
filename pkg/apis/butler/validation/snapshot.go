package validation

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/hibernation"
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
	switch {
	case s.Directory == nil && s.S3 == nil:
		return field.ErrorList{field.Required(fldPath, "the snapshot store's kind: directory or s3")}
	case s.Directory != nil && s.S3 != nil:
		return field.ErrorList{field.Forbidden(fldPath.Child("s3"), "a snapshot store is a directory or s3, not both")}
	case s.S3 != nil:
		return validateS3Store(s.S3, fldPath.Child("s3"))
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

var (
	s3Schemes    = sets.New("http", "https")
	bucketFormat = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
)

func validateS3Store(s *butler.S3SnapshotStore, fldPath *field.Path) field.ErrorList {
	allErrs := validateURL(s.Endpoint, s3Schemes, fldPath.Child("endpoint"))
	if u, err := url.Parse(s.Endpoint); len(allErrs) == 0 && err == nil {
		switch {
		case u.User != nil:
			// Credentials belong in the Secret: an endpoint is shown in status and logs.
			allErrs = append(allErrs, field.Invalid(fldPath.Child("endpoint"), "<redacted>", "must not hold credentials: name a Secret in credentialsSecretRef"))
		case strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "":
			allErrs = append(allErrs, field.Invalid(fldPath.Child("endpoint"), s.Endpoint, "must be scheme://host[:port] only: the bucket goes in bucket, a path in prefix"))
		}
	}
	if s.Bucket == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("bucket"), ""))
	} else if !bucketFormat.MatchString(s.Bucket) || strings.Contains(s.Bucket, "..") {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("bucket"), s.Bucket, "must be an S3 bucket name: 3-63 lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit"))
	}
	if p := s.Prefix; p != "" && (strings.HasPrefix(p, "/") || slices.Contains(strings.Split(p, "/"), "..") || len(p) > 512) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("prefix"), p, "must be a relative object key prefix of at most 512 characters, without .. segments"))
	}
	ref := fldPath.Child("credentialsSecretRef")
	allErrs = append(allErrs, validateDNSSubdomain(s.CredentialsSecretRef.Name, ref.Child("name"))...)
	allErrs = append(allErrs, validateDNSLabel(s.CredentialsSecretRef.Namespace, ref.Child("namespace"))...)
	return allErrs
}

var (
	snapshotDeletionPolicies = sets.New(butler.SnapshotsRetain, butler.SnapshotsDelete)
	// scheduledNameSuffix is what a scheduled snapshot's name adds to the cluster's and the
	// schedule's: "-" and the firing time as YYYYMMDDhhmm.
	scheduledNameSuffix = len("-202601021504")
)

// Bounds of a cluster's snapshot schedules: what one cluster may keep in the store shared by
// every tenant. Four schedules of up to 100 each cover the usual hourly/daily/weekly/monthly
// policies (100 hourly is four days); the Team's maxSnapshots and maxSnapshotBytes bound the sum
// over its clusters, and the provider's queue gives each Team its turn however often it fires.
const (
	maxSnapshotKeep      = 100
	maxSnapshotSchedules = 4
)

// validateSnapshotPolicy checks spec.snapshots of the cluster named cluster: every schedule's
// snapshots must be nameable (<cluster>-<schedule>-<time>, a DNS subdomain).
func validateSnapshotPolicy(cluster string, p *butler.SnapshotPolicy, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	allErrs := validateOptionalEnum(p.OnClusterDelete, snapshotDeletionPolicies, fldPath.Child("onClusterDelete"))
	if len(p.Schedules) > maxSnapshotSchedules {
		allErrs = append(allErrs, field.TooMany(fldPath.Child("schedules"), len(p.Schedules), maxSnapshotSchedules))
	}
	seen := sets.New[string]()
	for i, s := range p.Schedules {
		path := fldPath.Child("schedules").Index(i)
		if errs := validateDNSLabel(s.Name, path.Child("name")); len(errs) > 0 {
			allErrs = append(allErrs, errs...)
		} else if seen.Has(s.Name) {
			allErrs = append(allErrs, field.Duplicate(path.Child("name"), s.Name))
		} else if n := len(cluster) + 1 + len(s.Name) + scheduledNameSuffix; n > utilvalidation.DNS1123SubdomainMaxLength {
			allErrs = append(allErrs, field.TooLong(path.Child("name"), s.Name, utilvalidation.DNS1123SubdomainMaxLength-len(cluster)-1-scheduledNameSuffix))
		}
		seen.Insert(s.Name)
		if s.Schedule == "" {
			allErrs = append(allErrs, field.Required(path.Child("schedule"), "a cron expression such as \"0 2 * * *\" or @daily"))
		} else if _, err := hibernation.ParseCron(s.Schedule); err != nil {
			allErrs = append(allErrs, field.Invalid(path.Child("schedule"), s.Schedule, "not a cron expression: "+err.Error()))
		}
		if _, err := hibernation.ParseLocation(s.Location); err != nil {
			allErrs = append(allErrs, field.Invalid(path.Child("location"), s.Location, "not a time zone: "+err.Error()))
		}
		if s.Keep < 1 || s.Keep > maxSnapshotKeep {
			allErrs = append(allErrs, field.Invalid(path.Child("keep"), s.Keep, fmt.Sprintf("must be between 1 and %d", maxSnapshotKeep)))
		}
	}
	return allErrs
}
