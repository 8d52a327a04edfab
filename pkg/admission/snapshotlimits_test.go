package admission

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

var snapResource = butler.Resource("tenantclustersnapshots").WithVersion("v1alpha1")

// A snapshot of a cluster that does not exist is a 422 at admission, not a snapshot that fails
// later; a Team takes snapshots up to its maxSnapshots and while they hold less than its
// maxSnapshotBytes (403 naming the limit), each from the Team's resourceLimits or ButlerConfig's
// defaultTeamLimits.
func TestSnapshotLimits(t *testing.T) {
	s := newStore()
	s.config.Spec.DefaultTeamLimits.MaxSnapshots = ptr.To[int32](3)
	s.teams["team-a"].Spec.ResourceLimits.MaxSnapshotBytes = ptr.To(resource.MustParse("1Mi"))
	s.snapshots = map[string]*butler.TenantClusterSnapshot{}
	take := func(cluster string) error {
		snap := &butler.TenantClusterSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "new"},
			Spec: butler.TenantClusterSnapshotSpec{ClusterRef: butler.LocalObjectReference{Name: cluster}}}
		return validate(t, s, attrs(snap, nil, "team-a", "new", snapResource, "", admission.Create, false))
	}
	add := func(name string, bytes int64) {
		s.snapshots["team-a/"+name] = &butler.TenantClusterSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name},
			Status: butler.TenantClusterSnapshotStatus{Phase: butler.SnapshotReady, Bytes: bytes}}
	}
	expect(t, take("missing"), apierrors.IsInvalid, `spec.clusterRef.name: Not found: "missing"`)
	expect(t, take("one"), nil, "")
	add("a", 600<<10)
	expect(t, take("one"), nil, "")
	add("b", 600<<10)
	expect(t, take("one"), apierrors.IsForbidden, `team "team-a": its snapshots hold 1200Ki in the snapshot store, at its maxSnapshotBytes of 1Mi`)
	s.teams["team-a"].Spec.ResourceLimits.MaxSnapshotBytes = nil
	expect(t, take("one"), nil, "")
	add("c", 0)
	expect(t, take("one"), apierrors.IsForbidden, `team "team-a" has 3 TenantClusterSnapshots, its maxSnapshots is 3`)
	// Another namespace's snapshots do not count.
	delete(s.snapshots, "team-a/c")
	s.snapshots["team-b/x"] = &butler.TenantClusterSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "x"}}
	expect(t, take("one"), nil, "")
}
