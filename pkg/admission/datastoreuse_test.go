package admission

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/quota"
)

// Team a names team b's dedicated DataStore: 403 naming the annotation; a DataStore offered to
// every Team but at its max-tenants (counting the clusters that name it and those placed on
// it): 403 on create and on an update that moves a cluster there; a platform admin (who may
// update the DataStore) names any; a cluster keeps the DataStore it was admitted on.
func TestDataStoreUse(t *testing.T) {
	s := newStore()
	s.teams["team-b"] = &butler.Team{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}}
	placed := tc("team-b", "placed", 1)
	placed.Status.DataStoreName = "shared"
	named := tc("team-b", "named", 1)
	named.Spec.ControlPlane.DataStoreRef = &butler.LocalObjectReference{Name: "shared"}
	s.clusters = append(s.clusters, *placed, *named)
	stores := map[string]map[string]string{
		"team-b-only": {DataStoreTeamsAnnotation: "team-b"},
		"shared":      {DataStoreTeamsAnnotation: "*", DataStoreMaxTenantsAnnotation: "2"},
		"roomy":       {DataStoreTeamsAnnotation: " team-a , team-b", DataStoreMaxTenantsAnnotation: "3"},
		"unlisted":    nil,
	}
	p := NewDataStoreUse()
	p.SetLedger(&quota.Ledger{Store: s})
	p.SetAuthorizer(adminAuthorizer)
	p.SetDataStores(func(_ context.Context, name string) (*unstructured.Unstructured, error) {
		ann, ok := stores[name]
		if !ok {
			return nil, nil
		}
		u := &unstructured.Unstructured{}
		u.SetName(name)
		u.SetAnnotations(ann)
		return u, nil
	})
	use := func(who, ns, ds string, old *butler.TenantCluster) error {
		obj := tc(ns, "new", 1)
		obj.Spec.ControlPlane.DataStoreRef = &butler.LocalObjectReference{Name: ds}
		op := admission.Create
		if old != nil {
			op = admission.Update
		}
		return p.Validate(context.Background(), admission.NewAttributesRecord(obj, old, schema.GroupVersionKind{}, ns, "new", tcResource, "",
			op, nil, false, &user.DefaultInfo{Name: who}), nil)
	}
	expect(t, use("alice", "team-a", "team-b-only", nil), apierrors.IsForbidden, `DataStore "team-b-only" is not offered to team "team-a": its annotation butler.butlerlabs.dev/teams`)
	expect(t, use("alice", "team-a", "unlisted", nil), apierrors.IsForbidden, `is not offered to team "team-a"`)
	expect(t, use("alice", "team-a", "missing", nil), apierrors.IsForbidden, `DataStore "missing" does not exist`)
	expect(t, use("alice", "team-a", "shared", nil), apierrors.IsForbidden, `DataStore "shared" is full: it holds 2 tenants, its localprovider.butlerlabs.dev/max-tenants is 2`)
	expect(t, use("alice", "team-a", "shared", tc("team-a", "new", 1)), apierrors.IsForbidden, `DataStore "shared" is full`)
	expect(t, use("platform", "team-a", "shared", nil), apierrors.IsForbidden, `DataStore "shared" is full`)
	expect(t, use("alice", "team-a", "roomy", nil), nil, "")
	expect(t, use("platform", "team-a", "unlisted", nil), nil, "")
	expect(t, use("platform", "team-a", "missing", nil), nil, "")
	kept := tc("team-a", "new", 1)
	kept.Spec.ControlPlane.DataStoreRef = &butler.LocalObjectReference{Name: "team-b-only"}
	expect(t, use("alice", "team-a", "team-b-only", kept), nil, "")
}
