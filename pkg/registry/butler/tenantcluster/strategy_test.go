package tenantcluster

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/install"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// A client cannot write the restore pin (v1alpha1.RestorePinAnnotation): an operator who could
// would pin the Team admin's admitted restore to a snapshot of their own. A create without
// restoreFrom drops a sent pin; an update that keeps restoreFrom keeps the stored pin whatever is
// sent (changed or removed); one that removes restoreFrom removes the pin. Only a new or changed
// restoreFrom carries the pin sent, which is admission's (SnapshotRestore replaces the client's
// and checks it against the snapshot).
func TestRestorePinKeptFromClients(t *testing.T) {
	s := NewStrategy(nil)
	ctx := context.Background()
	cluster := func(from, pin string) *butler.TenantCluster {
		tc := &butler.TenantCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "team-a", Annotations: map[string]string{}}}
		if from != "" {
			tc.Spec.RestoreFrom = &butler.RestoreSource{Name: from}
		}
		if pin != "" {
			tc.Annotations[v1alpha1.RestorePinAnnotation] = pin
		}
		return tc
	}
	pinOf := func(tc *butler.TenantCluster) string { return tc.Annotations[v1alpha1.RestorePinAnnotation] }

	forged := cluster("", "src/mine")
	s.PrepareForCreate(ctx, forged)
	if pinOf(forged) != "" {
		t.Errorf("create without restoreFrom kept the client's pin %q", pinOf(forged))
	}
	admitted := cluster("good", "src/uid-1")
	s.PrepareForCreate(ctx, admitted)
	if pinOf(admitted) != "src/uid-1" {
		t.Errorf("create with restoreFrom: pin %q, want admission's", pinOf(admitted))
	}
	for _, c := range []struct {
		name      string
		old, sent *butler.TenantCluster
		want      string
	}{
		{"restoreFrom kept, pin changed", cluster("good", "src/uid-1"), cluster("good", "src/uid-2"), "src/uid-1"},
		{"restoreFrom kept, pin removed", cluster("good", "src/uid-1"), cluster("good", ""), "src/uid-1"},
		{"restoreFrom kept, none stored, pin sent", cluster("good", ""), cluster("good", "src/uid-2"), ""},
		{"restoreFrom removed", cluster("good", "src/uid-1"), cluster("", "src/uid-1"), ""},
		{"restoreFrom changed: admission's pin", cluster("good", "src/uid-1"), cluster("other", "src/uid-3"), "src/uid-3"},
		{"restoreFrom set: admission's pin", cluster("", ""), cluster("good", "src/uid-1"), "src/uid-1"},
	} {
		s.PrepareForUpdate(ctx, c.sent, c.old)
		if got := pinOf(c.sent); got != c.want {
			t.Errorf("%s: pin %q, want %q", c.name, got, c.want)
		}
	}
}

// A new cluster reads InProgress to kstatus (Flux's health checks) from its create on, whatever
// status the client sent: with no status at all kstatus read it Current before butler's
// controller had seen it.
func TestNewClusterReadsInProgress(t *testing.T) {
	forged := &butler.TenantCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "team-a"},
		Status: butler.TenantClusterStatus{Phase: butler.TenantClusterReady,
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready"}}}}
	NewStrategy(nil).PrepareForCreate(context.Background(), forged)

	scheme := runtime.NewScheme()
	install.Install(scheme)
	versioned := &v1alpha1.TenantCluster{}
	if err := scheme.Convert(forged, versioned, nil); err != nil {
		t.Fatal(err)
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(versioned)
	if err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(&unstructured.Unstructured{Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != status.InProgressStatus {
		t.Errorf("a new cluster reads %s (%q) to kstatus, want InProgress; status %+v", res.Status, res.Message, forged.Status)
	}
}
