package snapshots

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/etcdtest"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned/fake"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane"
)

// The attack after admission: the Team admin's restoreFrom "good" was admitted and pinned to
// snapshot src/uid-1; an operator (who may delete and take snapshots) deleted it and took
// another "good" (uid-2, of cluster evil) before the provider restored. The provider refuses it:
// the control plane stays stopped with a message naming the cause, nothing is stopped, written
// or recorded in status.restore. A restoreFrom without a pin (set before pins) is refused alike;
// the snapshot pinned passes this check.
func TestRestoreRefusesASnapshotNotTheOneAdmitted(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	snap := &v1alpha1.TenantClusterSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "good", UID: "uid-2"},
		Spec:   v1alpha1.TenantClusterSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "evil"}},
		Status: v1alpha1.TenantClusterSnapshotStatus{Phase: v1alpha1.SnapshotReady}}
	snap.Status.Location = filepath.Join(dir, DataName(snap)+".snap")
	for _, c := range []struct{ pin, says string }{
		{"src/uid-1", "restore from good refused: TenantClusterSnapshot good is not the one admitted (cluster/uid src/uid-1; it is evil/uid-2)"},
		{"", "restore from good refused: no snapshot was pinned when spec.restoreFrom was admitted"},
	} {
		tc := &v1alpha1.TenantCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "src", Annotations: map[string]string{}},
			Spec: v1alpha1.TenantClusterSpec{RestoreFrom: &v1alpha1.RestoreSource{Name: "good", Confirm: "src"}}}
		if c.pin != "" {
			tc.Annotations[v1alpha1.RestorePinAnnotation] = c.pin
		}
		client := fake.NewSimpleClientset(tc, snap)
		ctrl := &Controller{deps: &controllerkit.Deps{Butler: client}}
		tcp := &unstructured.Unstructured{}
		tcp.SetLabels(map[string]string{external.TenantClusterNamespaceLabel: "team-a", external.TenantClusterLabel: "src"})
		tcp.SetAnnotations(map[string]string{v1alpha1.RestoreFromAnnotation: "good"})
		stopped := false
		pending, msg, err := ctrl.Restore(ctx, tcp, controlplane.TenantStore{Prefix: "/t/", Client: etcdtest.Client(t)}, func() { stopped = true })
		if err != nil || !pending || !strings.Contains(msg, c.says) {
			t.Errorf("pin %q: Restore = %v, %q, %v; want pending, saying %q", c.pin, pending, msg, err, c.says)
		}
		got, _ := client.ButlerV1alpha1().TenantClusters("team-a").Get(ctx, "src", metav1.GetOptions{})
		if stopped || got.Status.Restore != nil {
			t.Errorf("pin %q: the control plane stopped (%v) or status.restore written (%+v) for a snapshot not admitted", c.pin, stopped, got.Status.Restore)
		}
	}
	tc := &v1alpha1.TenantCluster{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.RestorePinAnnotation: "evil/uid-2"}}}
	if msg := notAdmitted(tc, snap); msg != "" {
		t.Errorf("the snapshot pinned: %q", msg)
	}
}
