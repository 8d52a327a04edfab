package admission

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/quota"
	"github.com/butlerdotdev/butler-apiserver/pkg/snapshot"
)

// A restore is decided at admission: the asker must may get the snapshot (403 otherwise, the
// same whether it exists), and it must exist, be Ready, be of a version not newer than the
// cluster and match its checksum (422 at spec.restoreFrom.name).
func TestSnapshotRestore(t *testing.T) {
	dir := t.TempDir()
	store := snapshot.Dir{Root: dir}
	snap := func(name, version string) *butler.TenantClusterSnapshot {
		s := &butler.TenantClusterSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, UID: types.UID("uid-" + name)},
			Status: butler.TenantClusterSnapshotStatus{Phase: butler.SnapshotReady, KubernetesVersion: version}}
		var buf bytes.Buffer
		w, _ := snapshot.NewWriter(&buf, snapshot.Header{Prefix: "/x/", Revision: 5})
		_ = w.Write(snapshot.Record{Key: "registry/namespaces/app", Value: []byte("ns")})
		stats, err := w.Close()
		if err != nil {
			t.Fatal(err)
		}
		s.Status.Checksum = stats.Checksum
		p, _ := store.Create(context.Background(), snapshot.Name(s.Namespace, s.Name, string(s.UID)))
		_, _ = p.Write(buf.Bytes())
		if err := p.Commit(); err != nil {
			t.Fatal(err)
		}
		return s
	}
	fake := newStore()
	fake.snapshots = map[string]*butler.TenantClusterSnapshot{}
	for _, s := range []*butler.TenantClusterSnapshot{snap("good", "v1.31.4"), snap("newer", "v1.32.0"), snap("corrupt", "v1.31.4"), snap("running", "v1.31.4"), snap("secret", "v1.31.4")} {
		fake.snapshots["team-a/"+s.Name] = s
	}
	fake.snapshots["team-a/running"].Status.Phase = butler.SnapshotRunning
	corrupt := filepath.Join(dir, "team-a", "corrupt-uid-corrupt.snap")
	data, _ := os.ReadFile(corrupt)
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(corrupt, data, 0o600); err != nil {
		t.Fatal(err)
	}
	p := NewSnapshotRestore()
	p.SetLedger(&quota.Ledger{Store: fake})
	p.SetSnapshotDir(dir)
	p.SetAuthorizer(authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetVerb() == "get" && a.GetResource() == "tenantclustersnapshots" && a.GetName() != "secret" && a.GetName() != "missing-secret" {
			return authorizer.DecisionAllow, "", nil
		}
		if a.GetVerb() == "create" && a.GetResource() == "tenantclusters" && a.GetSubresource() == "restore" {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	}))
	restore := func(from string, old *butler.TenantCluster) error {
		obj := tc("team-a", "clone", 1)
		obj.Spec.RestoreFrom = &butler.RestoreSource{Name: from}
		op := admission.Create
		if old != nil {
			op = admission.Update
		}
		return admitAndValidate(p, attrs(obj, old, "team-a", "clone", tcResource, "", op, false))
	}
	expect(t, restore("good", nil), nil, "")
	expect(t, restore("secret", nil), apierrors.IsForbidden, `restoring from TenantClusterSnapshot "secret" needs get on it`)
	expect(t, restore("missing-secret", nil), apierrors.IsForbidden, `restoring from TenantClusterSnapshot "missing-secret" needs get on it`)
	expect(t, restore("missing", nil), apierrors.IsInvalid, `spec.restoreFrom.name: Not found: "missing"`)
	expect(t, restore("running", nil), apierrors.IsInvalid, `the snapshot is "Running", not Ready`)
	expect(t, restore("newer", nil), apierrors.IsInvalid, "the snapshot is of Kubernetes v1.32.0, newer than the cluster's v1.31.4")
	expect(t, restore("corrupt", nil), apierrors.IsInvalid, "the snapshot's data does not match its checksum: recorded sha256:")
	// Decided once: an update that keeps restoreFrom is not checked again.
	old := tc("team-a", "clone", 1)
	old.Spec.RestoreFrom = &butler.RestoreSource{Name: "corrupt"}
	expect(t, restore("corrupt", old), nil, "")
	expect(t, restore("newer", old), apierrors.IsInvalid, "newer than the cluster's")
}

// An operator may get a snapshot but not restore from it: restoring (in place or into a new
// cluster) is create on tenantclusters/restore, which only the Team's admin holds.
func TestSnapshotRestoreNeedsTheRestoreVerb(t *testing.T) {
	fake := newStore()
	fake.snapshots = map[string]*butler.TenantClusterSnapshot{"team-a/good": {ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "good"},
		Status: butler.TenantClusterSnapshotStatus{Phase: butler.SnapshotReady, KubernetesVersion: "v1.31.4"}}}
	p := NewSnapshotRestore()
	p.SetLedger(&quota.Ledger{Store: fake})
	p.SetAuthorizer(authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		switch {
		case a.GetVerb() == "get" && a.GetResource() == "tenantclustersnapshots":
			return authorizer.DecisionAllow, "", nil
		case a.GetVerb() == "create" && a.GetResource() == "tenantclusters" && a.GetSubresource() == "restore" && a.GetUser().GetName() == "admin":
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	}))
	restoreAs := func(name string, old *butler.TenantCluster) error {
		obj := tc("team-a", "src", 1)
		obj.Spec.RestoreFrom = &butler.RestoreSource{Name: "good", Confirm: "src"}
		op := admission.Create
		if old != nil {
			op = admission.Update
		}
		a := admission.NewAttributesRecord(obj, old, schema.GroupVersionKind{}, "team-a", "src", tcResource, "", op, nil, false, &user.DefaultInfo{Name: name})
		return admitAndValidate(p, a)
	}
	expect(t, restoreAs("operator", tc("team-a", "src", 1)), apierrors.IsForbidden, "needs create on tenantclusters/restore")
	expect(t, restoreAs("operator", nil), apierrors.IsForbidden, "needs create on tenantclusters/restore")
	expect(t, restoreAs("admin", tc("team-a", "src", 1)), nil, "")
}

// admitAndValidate runs the plugin as the server does: Admit, then Validate.
func admitAndValidate(p *SnapshotRestore, a admission.Attributes) error {
	if err := p.Admit(context.Background(), a, nil); err != nil {
		return err
	}
	return p.Validate(context.Background(), a, nil)
}

// The attack: an operator (who may delete and take snapshots, not restore) waits for the Team
// admin's restoreFrom "good" to be admitted, then deletes "good" and takes another snapshot of
// that name (of another cluster, or of now) before the controller restores. The restore is pinned to
// the snapshot admitted: Admit records its cluster and UID whatever the client sent, and a
// snapshot swapped between Admit and Validate is a 409. (The controller's refusal of a snapshot
// swapped after admission: TestRestoreRefusesASnapshotNotTheOneAdmitted in
// pkg/localprovider/snapshots; the registry keeps the pin from clients: TestRestorePinKeptFromClients.)
func TestRestorePinnedToTheSnapshotAdmitted(t *testing.T) {
	fake := newStore()
	good := &butler.TenantClusterSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "good", UID: "uid-1"},
		Spec:   butler.TenantClusterSnapshotSpec{ClusterRef: butler.LocalObjectReference{Name: "src"}},
		Status: butler.TenantClusterSnapshotStatus{Phase: butler.SnapshotReady, KubernetesVersion: "v1.31.4"}}
	fake.snapshots = map[string]*butler.TenantClusterSnapshot{"team-a/good": good}
	p := NewSnapshotRestore()
	p.SetLedger(&quota.Ledger{Store: fake})
	obj := tc("team-a", "clone", 1)
	obj.Spec.RestoreFrom = &butler.RestoreSource{Name: "good"}
	obj.Annotations = map[string]string{v1alpha1.RestorePinAnnotation: "src/uid-forged"}
	a := attrs(obj, nil, "team-a", "clone", tcResource, "", admission.Create, false)
	expect(t, admitAndValidate(p, a), nil, "")
	if got := obj.Annotations[v1alpha1.RestorePinAnnotation]; got != "src/uid-1" {
		t.Errorf("pin after admission %q, want src/uid-1 (the snapshot admitted, not the client's)", got)
	}
	// Swapped between the two phases: deleted and taken again, of another cluster.
	obj.Spec.RestoreFrom.Name = "good"
	if err := p.Admit(context.Background(), a, nil); err != nil {
		t.Fatal(err)
	}
	fake.snapshots["team-a/good"] = &butler.TenantClusterSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "good", UID: "uid-2"},
		Spec: butler.TenantClusterSnapshotSpec{ClusterRef: butler.LocalObjectReference{Name: "other"}}, Status: good.Status}
	expect(t, p.Validate(context.Background(), a, nil), apierrors.IsConflict, `TenantClusterSnapshot "good" was deleted and made again while this request was admitted`)
}
