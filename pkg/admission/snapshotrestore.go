package admission

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/snapshot"
)

// SnapshotRestore decides, when a TenantCluster's spec.restoreFrom is set or changed, whether
// it may restore: the asker holds create on tenantclusters/restore (RestoreSubresource, a verb
// only the Team's admin role grants: a restore brings back the snapshot's objects, so an
// operator could otherwise roll the tenant back to a time of wider rights) and may get that
// TenantClusterSnapshot (SubjectAccessReviews through the server's authorizer: the controller that
// restores never knows who asked; 403 otherwise, the same words whether the snapshot exists or
// not), and the snapshot is Ready, not of a newer
// Kubernetes version than the cluster, and its stored data matches its checksum (read from the
// snapshot store when this server can reach it) — a 422 at spec.restoreFrom.name otherwise.
//
// It also pins the restore to the snapshot it admits: Admit records that snapshot's cluster and
// UID in v1alpha1.RestorePinAnnotation, Validate refuses (409) when the snapshot it checks is no
// longer that one, and the controller restores only the pinned snapshot. An operator may delete
// snapshots and take new ones, so without the pin they could put another snapshot under the
// admitted name before the controller reads it.
type SnapshotRestore struct {
	base
	authorizer authorizer.Authorizer
	// dir is the directory snapshot store this server reads when ButlerConfig names none ("":
	// the checksum is checked by the provider when it restores).
	dir string
}

var (
	_ admission.MutationInterface   = &SnapshotRestore{}
	_ admission.ValidationInterface = &SnapshotRestore{}
	_ initializer.WantsAuthorizer   = &SnapshotRestore{}
	_ WantsSnapshotDir              = &SnapshotRestore{}
)

// WantsSnapshotDir is a plugin that reads the directory snapshot store.
type WantsSnapshotDir interface{ SetSnapshotDir(string) }

// NewSnapshotRestore returns the plugin.
func NewSnapshotRestore() *SnapshotRestore {
	return &SnapshotRestore{base: base{Handler: admission.NewHandler(admission.Create, admission.Update)}}
}

// SetAuthorizer implements initializer.WantsAuthorizer.
func (p *SnapshotRestore) SetAuthorizer(a authorizer.Authorizer) { p.authorizer = a }

// SetSnapshotDir implements WantsSnapshotDir.
func (p *SnapshotRestore) SetSnapshotDir(dir string) { p.dir = dir }

// restoreToDecide is the TenantCluster of a request that sets or changes spec.restoreFrom; nil
// for any other request (an unchanged restoreFrom was decided, and pinned, when it was set).
func restoreToDecide(a admission.Attributes) *butler.TenantCluster {
	if a.GetResource().GroupResource() != tenantClusters || a.GetSubresource() != "" {
		return nil
	}
	tc, ok := a.GetObject().(*butler.TenantCluster)
	if !ok || tc.Spec.RestoreFrom == nil {
		return nil
	}
	if old, ok := a.GetOldObject().(*butler.TenantCluster); ok && old != nil && old.Spec.RestoreFrom != nil && old.Spec.RestoreFrom.Name == tc.Spec.RestoreFrom.Name {
		return nil
	}
	return tc
}

// Admit implements admission.MutationInterface: it pins the restore to the snapshot of that name
// now (none when it does not exist; Validate then refuses). Whatever a client sent there is
// replaced.
func (p *SnapshotRestore) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	tc := restoreToDecide(a)
	if tc == nil {
		return nil
	}
	snap, err := p.store().Snapshot(ctx, a.GetNamespace(), tc.Spec.RestoreFrom.Name)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	annotations := tc.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	delete(annotations, v1alpha1.RestorePinAnnotation)
	if snap != nil {
		annotations[v1alpha1.RestorePinAnnotation] = pinOf(snap)
	}
	tc.SetAnnotations(annotations)
	return nil
}

func pinOf(snap *butler.TenantClusterSnapshot) string {
	return v1alpha1.RestorePin(snap.Spec.ClusterRef.Name, string(snap.UID))
}

// Validate implements admission.ValidationInterface.
func (p *SnapshotRestore) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	tc := restoreToDecide(a)
	if tc == nil {
		return nil
	}
	name := tc.Spec.RestoreFrom.Name
	if !p.allowed(ctx, a, authorizer.AttributesRecord{Verb: "create", Resource: "tenantclusters", Subresource: RestoreSubresource, Name: tc.Name}) {
		return admission.NewForbidden(a, fmt.Errorf("spec.restoreFrom: restoring TenantCluster %q from a snapshot needs create on tenantclusters/%s in namespace %s (the Team admin's right), which you do not have",
			tc.Name, RestoreSubresource, a.GetNamespace()))
	}
	if !p.allowed(ctx, a, authorizer.AttributesRecord{Verb: "get", Resource: "tenantclustersnapshots", Name: name}) {
		return admission.NewForbidden(a, fmt.Errorf("spec.restoreFrom.name: restoring from TenantClusterSnapshot %q needs get on it in namespace %s, which you do not have", name, a.GetNamespace()))
	}
	snap, err := p.store().Snapshot(ctx, a.GetNamespace(), name)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	path := field.NewPath("spec", "restoreFrom", "name")
	invalid := func(msg string) error {
		return apierrors.NewInvalid(tenantClusterKind, tc.Name, field.ErrorList{field.Invalid(path, name, msg)})
	}
	switch {
	case snap == nil:
		return apierrors.NewInvalid(tenantClusterKind, tc.Name, field.ErrorList{field.NotFound(path, name)})
	case snap.Status.Phase != butler.SnapshotReady:
		return invalid(fmt.Sprintf("the snapshot is %q, not Ready: only a Ready snapshot can be restored", snap.Status.Phase))
	case tc.Annotations[v1alpha1.RestorePinAnnotation] != pinOf(snap):
		return apierrors.NewConflict(tenantClusters, tc.Name, fmt.Errorf(
			"spec.restoreFrom.name: TenantClusterSnapshot %q was deleted and made again while this request was admitted: send it again to restore the one there now", name))
	}
	if from, errF := version.ParseSemantic(snap.Status.KubernetesVersion); errF == nil {
		if to, errT := version.ParseSemantic(tc.Spec.KubernetesVersion); errT == nil && from.GreaterThan(to) {
			return invalid(fmt.Sprintf("the snapshot is of Kubernetes %s, newer than the cluster's %s: its objects may not read in an older version",
				snap.Status.KubernetesVersion, tc.Spec.KubernetesVersion))
		}
	}
	return p.verify(ctx, snap, invalid)
}

// verify reads the snapshot's data from the directory store and checks its checksum. Data in
// object storage is checked by the provider before it restores (this server holds no keys to
// the bucket); the restore then fails with the checksums in status.restore.
func (p *SnapshotRestore) verify(ctx context.Context, snap *butler.TenantClusterSnapshot, invalid func(string) error) error {
	dir := p.dir
	if cfg, err := p.store().Config(ctx); err == nil && cfg != nil && cfg.Spec.SnapshotStore != nil {
		switch {
		case cfg.Spec.SnapshotStore.Directory != nil:
			dir = cfg.Spec.SnapshotStore.Directory.Path
		case cfg.Spec.SnapshotStore.S3 != nil:
			dir = ""
		}
	}
	if dir == "" || strings.HasPrefix(snap.Status.Location, "s3://") {
		return nil
	}
	data, err := snapshot.Dir{Root: dir}.Open(ctx, snapshot.Name(snap.Namespace, snap.Name, string(snap.UID)))
	if errors.Is(err, fs.ErrNotExist) {
		return invalid("the snapshot's data is not in the snapshot store")
	}
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	defer data.Close()
	var mismatch *snapshot.ChecksumMismatchError
	if _, err := snapshot.Verify(data, snap.Status.Checksum); errors.As(err, &mismatch) {
		return invalid(err.Error())
	} else if err != nil {
		return apierrors.NewInternalError(err)
	}
	return nil
}

// RestoreSubresource names the verb create on tenantclusters/restore, checked whenever
// spec.restoreFrom is set or changed. It is an RBAC rule only: nothing serves it.
const RestoreSubresource = "restore"

// allowed says whether the asker may do what (verb, resource, subresource, name) in the
// request's namespace. Without an authorizer (no management cluster, where every request is the
// admin's) everyone may.
func (p *SnapshotRestore) allowed(ctx context.Context, a admission.Attributes, what authorizer.AttributesRecord) bool {
	if p.authorizer == nil {
		return true
	}
	what.Namespace, what.APIGroup = a.GetNamespace(), butler.GroupName
	return authorize(ctx, p.authorizer, a, what)
}

// authorize says whether the asker of a may do what (a resource request; its user is a's): a
// SubjectAccessReview through the server's authorizer.
func authorize(ctx context.Context, authz authorizer.Authorizer, a admission.Attributes, what authorizer.AttributesRecord) bool {
	if a.GetUserInfo() == nil {
		return false
	}
	what.User, what.APIVersion, what.ResourceRequest = a.GetUserInfo(), "*", true
	decision, _, err := authz.Authorize(ctx, what)
	return err == nil && decision == authorizer.DecisionAllow
}

var tenantClusterKind = schema.GroupKind{Group: butler.GroupName, Kind: "TenantCluster"}
