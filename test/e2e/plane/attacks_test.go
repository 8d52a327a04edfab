package plane

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/datastore"
	"github.com/butlerdotdev/butler-apiserver/pkg/snapshot"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// TestTenancyRestoreIsTheTeamAdmins: a Team operator may read the Team's snapshots but not roll
// a cluster back with spec.restoreFrom (403 naming tenantclusters/restore, through kubectl as
// the operator), and the Team's admin may; the admitted restore is pinned to the snapshot's
// cluster and UID. The snapshot is made Ready by hand (its data written into the plane's
// snapshot store) and the cluster is paused: the attack is at admission, no tenant is needed.
func TestTenancyRestoreIsTheTeamAdmins(t *testing.T) {
	framework.LongestFirst(t, 10*time.Second)
	ctx := context.Background()
	const ns = "atk-restore"
	team(t, framework.TeamManifest(ns, "", framework.TeamMember("atk-restore-admin", "admin"), framework.TeamMember("atk-restore-op", "operator")))
	framework.MustApply(t, tenantCluster(ns, "src"))
	snap := readySnapshot(t, ns, "src", "before")

	patch := `{"spec":{"restoreFrom":{"name":"before","confirm":"src"}}}`
	out, err := framework.KubectlAs(t, userKubeconfig(t, "atk-restore-op"), "", "patch", "tc", "src", "-n", ns, "--type", "merge", "-p", patch)
	if err == nil || !strings.Contains(out, "Forbidden") || !strings.Contains(out, "needs create on tenantclusters/restore") {
		t.Errorf("the operator's restoreFrom: %v, want 403 naming tenantclusters/restore\n%s", err, out)
	} else {
		t.Logf("the operator's restoreFrom: %s", strings.TrimSpace(out))
	}
	if out, err := framework.KubectlAs(t, userKubeconfig(t, "atk-restore-op"), "", "get", "tcs", "before", "-n", ns); err != nil {
		t.Errorf("the operator reads the snapshot (the restore is what is refused): %v\n%s", err, out)
	}
	if out, err := framework.KubectlAs(t, userKubeconfig(t, "atk-restore-admin"), "", "patch", "tc", "src", "-n", ns, "--type", "merge", "-p", patch); err != nil {
		t.Fatalf("the Team admin's restoreFrom: %v\n%s", err, out)
	}
	tc, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, "src", metav1.GetOptions{})
	if err != nil || tc.Spec.RestoreFrom == nil || tc.Annotations[v1alpha1.RestorePinAnnotation] != v1alpha1.RestorePin("src", string(snap.UID)) {
		t.Errorf("after the admin's restore: %v, restoreFrom %+v, pin %q (want src/%s)", err, tc.Spec.RestoreFrom, tc.Annotations[v1alpha1.RestorePinAnnotation], snap.UID)
	}
}

// TestTenancyGitOpsRepositoryIsTheTeamAdmins: Flux applies a cluster's GitOps repository as the
// tenant's cluster-admin, so a Team operator may not set one (403 naming tenantclusters/gitops,
// through kubectl as the operator, with a public repository and no credential), while the Team's
// admin may, though not at an internal address (the cloud's metadata address: 422 naming the
// URL's field, the fetch policy), and the operator may then still scale the cluster. The cluster
// is paused: the attack is at admission.
func TestTenancyGitOpsRepositoryIsTheTeamAdmins(t *testing.T) {
	framework.LongestFirst(t, 7*time.Second)
	const ns = "atk-gitops"
	team(t, framework.TeamManifest(ns, "", framework.TeamMember("atk-gitops-admin", "admin"), framework.TeamMember("atk-gitops-op", "operator")))
	framework.MustApply(t, tenantCluster(ns, "fleet"))

	repo := func(url string) string {
		return fmt.Sprintf(`{"spec":{"addons":{"gitops":{"provider":"fluxcd","repository":{"url":%q,"branch":"main","path":"./"}}}}}`, url)
	}
	op, admin := userKubeconfig(t, "atk-gitops-op"), userKubeconfig(t, "atk-gitops-admin")
	out, err := framework.KubectlAs(t, op, "", "patch", "tc", "fleet", "-n", ns, "--type", "merge", "-p", repo("https://github.com/atk-gitops-op/takeover.git"))
	if err == nil || !strings.Contains(out, "Forbidden") || !strings.Contains(out, "needs create on tenantclusters/gitops") {
		t.Errorf("the operator's repository: %v, want 403 naming tenantclusters/gitops\n%s", err, out)
	} else {
		t.Logf("the operator's repository: %s", strings.TrimSpace(out))
	}
	if out, err := framework.KubectlAs(t, admin, "", "patch", "tc", "fleet", "-n", ns, "--type", "merge", "-p", repo("http://169.254.169.254/latest/meta-data")); err == nil ||
		!strings.Contains(out, "spec.addons.gitops.repository.url") || !strings.Contains(out, "link-local address") {
		t.Errorf("the Team admin's repository at the cloud's metadata address: %v, want 422 naming the URL's field\n%s", err, out)
	}
	if out, err := framework.KubectlAs(t, admin, "", "patch", "tc", "fleet", "-n", ns, "--type", "merge", "-p", repo("https://github.com/atk-gitops/fleet.git")); err != nil {
		t.Fatalf("the Team admin's repository: %v\n%s", err, out)
	}
	if out, err := framework.KubectlAs(t, op, "", "scale", "tc", "fleet", "-n", ns, "--replicas", "2"); err != nil {
		t.Errorf("the operator scales the cluster whose repository the admin chose: %v\n%s", err, out)
	}
}

// readySnapshot makes a Ready TenantClusterSnapshot of cluster with its data (one record) in
// the plane's directory snapshot store, as the local provider would have taken it.
func readySnapshot(t *testing.T, ns, cluster, name string) *v1alpha1.TenantClusterSnapshot {
	t.Helper()
	ctx := context.Background()
	snaps := framework.Plane.Butler.ButlerV1alpha1().TenantClusterSnapshots(ns)
	created, err := snaps.Create(ctx, &v1alpha1.TenantClusterSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.TenantClusterSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: cluster}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var data bytes.Buffer
	w, err := snapshot.NewWriter(&data, snapshot.Header{Prefix: "/x/", Revision: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(snapshot.Record{Key: "namespaces/app", Value: []byte("ns")}); err != nil {
		t.Fatal(err)
	}
	stats, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	store := snapshot.Dir{Root: filepath.Join(framework.Plane.Dir, "snapshots")}
	p, err := store.Create(ctx, snapshot.Name(ns, name, string(created.UID)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Write(data.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	var ready *v1alpha1.TenantClusterSnapshot
	// The provider may write Pending first (the paused cluster has no control plane).
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := snaps.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Status = v1alpha1.TenantClusterSnapshotStatus{Phase: v1alpha1.SnapshotReady, Revision: 5, ObjectCount: 1, Bytes: int64(data.Len()),
			Checksum: stats.Checksum, KubernetesVersion: "v1.31.4",
			Location: filepath.Join(store.Root, snapshot.Name(ns, name, string(created.UID))+".snap")}
		ready, err = snaps.UpdateStatus(ctx, s, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return ready
}

// TestTenancyForeignDataStore: Team A names Team B's dedicated DataStore (offered to B alone by
// its butler.butlerlabs.dev/teams annotation) in spec.controlPlane.dataStoreRef: 403 naming the
// annotation. Team B's admin may, up to the DataStore's max-tenants (1): the second is a 403
// naming the limit. The clusters are paused: the attack is at admission.
func TestTenancyForeignDataStore(t *testing.T) {
	framework.LongestFirst(t, 2*time.Second)
	ctx := context.Background()
	team(t, framework.TeamManifest("atk-ds-a", "", framework.TeamMember("atk-ds-a-admin", "admin")))
	team(t, framework.TeamManifest("atk-ds-b", "", framework.TeamMember("atk-ds-b-admin", "admin")))
	ds := datastore.Object("atk-ds-b-only", []string{"127.0.0.1:1"}, "butler-system", "atk-ds-b-only")
	ds.SetAnnotations(map[string]string{external.DataStoreTeamsAnnotation: "atk-ds-b", external.DataStoreMaxTenantsAnnotation: "1"})
	dyn := framework.DynamicClient(t)
	if _, err := dyn.Resource(external.DataStoreGVR).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(external.DataStoreGVR).Delete(context.Background(), ds.GetName(), metav1.DeleteOptions{})
	})
	on := func(user, ns, name string) error {
		tc := newTenantCluster(name)
		tc.Namespace = ns
		tc.Spec.ControlPlane.DataStoreRef = &v1alpha1.LocalObjectReference{Name: ds.GetName()}
		_, err := clientset.NewForConfigOrDie(userConfig(t, user)).ButlerV1alpha1().TenantClusters(ns).Create(ctx, tc, metav1.CreateOptions{})
		return err
	}
	for _, c := range []struct {
		user, ns, name, refused string
	}{
		{"atk-ds-a-admin", "atk-ds-a", "steal", fmt.Sprintf(`DataStore "atk-ds-b-only" is not offered to team "atk-ds-a": its annotation %s`, external.DataStoreTeamsAnnotation)},
		{"atk-ds-b-admin", "atk-ds-b", "first", ""},
		{"atk-ds-b-admin", "atk-ds-b", "second", fmt.Sprintf(`DataStore "atk-ds-b-only" is full: it holds 1 tenants, its %s is 1`, external.DataStoreMaxTenantsAnnotation)},
	} {
		err := on(c.user, c.ns, c.name)
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%s creates %s on the DataStore offered to its Team: %v", c.user, c.name, err)
		case c.refused != "" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("%s creates %s: %v, want 403 saying %q", c.user, c.name, err, c.refused)
		case c.refused != "":
			t.Logf("%s: %v", c.name, err)
		}
	}
}
