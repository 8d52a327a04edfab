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
		return p.Validate(context.Background(), attrs(obj, old, "team-a", "clone", tcResource, "", op, false), nil)
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
		return p.Validate(context.Background(), a, nil)
	}
	expect(t, restoreAs("operator", tc("team-a", "src", 1)), apierrors.IsForbidden, "needs create on tenantclusters/restore")
	expect(t, restoreAs("operator", nil), apierrors.IsForbidden, "needs create on tenantclusters/restore")
	expect(t, restoreAs("admin", tc("team-a", "src", 1)), nil, "")
}
