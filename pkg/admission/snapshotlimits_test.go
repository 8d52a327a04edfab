package admission

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

var snapResource = butler.Resource("tenantclustersnapshots").WithVersion("v1alpha1")

// A snapshot of a cluster that does not exist is a 422 at admission, not a snapshot that fails
// later.
func TestSnapshotLimits(t *testing.T) {
	s := newStore()
	s.snapshots = map[string]*butler.TenantClusterSnapshot{}
	take := func(cluster string) error {
		snap := &butler.TenantClusterSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "new"},
			Spec: butler.TenantClusterSnapshotSpec{ClusterRef: butler.LocalObjectReference{Name: cluster}}}
		return validate(t, s, attrs(snap, nil, "team-a", "new", snapResource, "", admission.Create, false))
	}
	expect(t, take("missing"), apierrors.IsInvalid, `spec.clusterRef.name: Not found: "missing"`)
	expect(t, take("one"), nil, "")
}
