package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	"github.com/butlerdotdev/butler-apiserver/pkg/quota"
)

func createTeam(t *testing.T, name string, limits *v1alpha1.ResourceLimits) {
	t.Helper()
	team := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.TeamSpec{ResourceLimits: limits}}
	if _, err := shared.Client.ButlerV1alpha1().Teams().Create(context.Background(), team, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func expectForbidden(t *testing.T, err error, says ...string) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Fatalf("want 403 Forbidden, got %v", err)
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q does not say %q", err, s)
		}
	}
}

// Many concurrent creates against maxClusters 1 and 3: exactly that many succeed.
func TestTeamQuotaConcurrentCreates(t *testing.T) {
	for _, max := range []int{1, 3} {
		t.Run(fmt.Sprint("maxClusters=", max), func(t *testing.T) {
			team, clients := fmt.Sprint("iq-race-", max), 40
			createTeam(t, team, &v1alpha1.ResourceLimits{MaxClusters: ptr.To(int32(max))})
			// No client-side throttling: the requests must really be concurrent.
			cfg := rest.CopyConfig(shared.Config)
			cfg.QPS, cfg.Burst = -1, 0
			clusters := clientset.NewForConfigOrDie(cfg).ButlerV1alpha1().TenantClusters(team)
			var wg sync.WaitGroup
			var ok, forbidden atomic.Int32
			start := time.Now()
			for i := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := clusters.Create(context.Background(), exampleCluster(t, team, fmt.Sprint("c", i)), metav1.CreateOptions{})
					switch {
					case err == nil:
						ok.Add(1)
					case apierrors.IsForbidden(err) && strings.Contains(err.Error(), fmt.Sprintf("maxClusters is %d, in use %d, requested 1", max, max)):
						forbidden.Add(1)
					default:
						t.Errorf("create c%d: %v", i, err)
					}
				}()
			}
			wg.Wait()
			t.Logf("%d concurrent creates in %s: %d created, %d refused", clients, time.Since(start).Round(time.Millisecond), ok.Load(), forbidden.Load())
			list, err := clusters.List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if int(ok.Load()) != max || len(list.Items) != max {
				t.Fatalf("%d creates succeeded and %d clusters are stored; want exactly %d", ok.Load(), len(list.Items), max)
			}
		})
	}
}

func TestTeamLimitsOnUpdateAndScale(t *testing.T) {
	ctx := context.Background()
	const team = "iq-limits"
	createTeam(t, team, &v1alpha1.ResourceLimits{MaxWorkersPerCluster: ptr.To[int32](5), MaxTotalWorkers: ptr.To[int32](8),
		AllowedKubernetesVersions: []string{"v1.31", "v1.32"}, DeniedAddons: []string{"cert-manager"}})
	clusters := shared.Client.ButlerV1alpha1().TenantClusters(team)

	denied := exampleCluster(t, team, "c0") // the example enables cert-manager
	_, err := clusters.Create(ctx, denied, metav1.CreateOptions{})
	expectForbidden(t, err, `team "iq-limits"`, "addon cert-manager is in deniedAddons [cert-manager]")

	mk := func(name string, workers int32) *v1alpha1.TenantCluster {
		tc := exampleCluster(t, team, name)
		tc.Spec.Addons.CertManager = nil
		tc.Spec.Workers.Replicas = workers
		return tc
	}
	old := mk("c0", 3)
	old.Spec.KubernetesVersion = "v1.30.4"
	_, err = clusters.Create(ctx, old, metav1.CreateOptions{})
	expectForbidden(t, err, "allowedKubernetesVersions are [v1.31, v1.32], requested v1.30.4")

	if _, err := clusters.Create(ctx, mk("c1", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = clusters.Create(ctx, mk("c2", 6), metav1.CreateOptions{})
	expectForbidden(t, err, "maxWorkersPerCluster is 5, requested 6")
	if _, err := clusters.Create(ctx, mk("c2", 5), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// 8 of 8 workers in use: scaling up is refused, through /scale and through an update.
	scale, err := clusters.GetScale(ctx, "c1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 4
	_, err = clusters.UpdateScale(ctx, "c1", scale, metav1.UpdateOptions{})
	expectForbidden(t, err, "maxTotalWorkers is 8, in use 8, requested 1 (would be 9)")
	c1, err := clusters.Get(ctx, "c1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c1.Spec.Workers.Replicas = 4
	_, err = clusters.Update(ctx, c1, metav1.UpdateOptions{})
	expectForbidden(t, err, "maxTotalWorkers is 8, in use 8")

	// Scaling down always works, and frees room for another scale up.
	scale.Spec.Replicas = 1
	if _, err := clusters.UpdateScale(ctx, "c1", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c1, _ = clusters.Get(ctx, "c1", metav1.GetOptions{})
	c1.Spec.Workers.Replicas = 3
	if _, err := clusters.Update(ctx, c1, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("scale back up within the limit: %v", err)
	}
	// Label edits of a cluster need no room.
	c1, _ = clusters.Get(ctx, "c1", metav1.GetOptions{})
	c1.Labels = map[string]string{"edited": "yes"}
	if _, err := clusters.Update(ctx, c1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Concurrent scale-ups of both clusters: 8 in use of 8 after c1 went to 3; drop both to 2
	// (4 free), then each asks for +3: only one fits.
	for _, n := range []string{"c1", "c2"} {
		s, _ := clusters.GetScale(ctx, n, metav1.GetOptions{})
		s.Spec.Replicas = 2
		if _, err := clusters.UpdateScale(ctx, n, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var ok atomic.Int32
	for _, n := range []string{"c1", "c2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := clusters.GetScale(ctx, n, metav1.GetOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			s.Spec.Replicas = 5
			if _, err := clusters.UpdateScale(ctx, n, s, metav1.UpdateOptions{}); err == nil {
				ok.Add(1)
			} else if !apierrors.IsForbidden(err) {
				t.Errorf("scale %s: %v", n, err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 {
		t.Errorf("%d of two concurrent scale-ups that only fit alone succeeded", ok.Load())
	}
}

func TestTeamWithClustersCannotBeDeleted(t *testing.T) {
	ctx := context.Background()
	const team = "iq-delete"
	createTeam(t, team, nil)
	clusters := shared.Client.ButlerV1alpha1().TenantClusters(team)
	for _, n := range []string{"prod", "dev"} {
		if _, err := clusters.Create(ctx, exampleCluster(t, team, n), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	err := shared.Client.ButlerV1alpha1().Teams().Delete(ctx, team, metav1.DeleteOptions{})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "2 tenant cluster(s): iq-delete/dev, iq-delete/prod") {
		t.Fatalf("delete of a team with clusters: want 409 naming them, got %v", err)
	}
	for _, n := range []string{"prod", "dev"} {
		if err := clusters.Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := shared.Client.ButlerV1alpha1().Teams().Delete(ctx, team, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete of an empty team: %v", err)
	}
}

func TestQuotaReservationsAreNotWritableByClients(t *testing.T) {
	ctx := context.Background()
	teams := shared.Client.ButlerV1alpha1().Teams()
	keys := []string{quota.ReservationsAnnotation, quota.SnapshotReservationsAnnotation}
	team := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: "iq-annotation",
		Annotations: map[string]string{quota.ReservationsAnnotation: `[{"key":"x/y","usage":{"c":99},"exp":99999999999}]`,
			quota.SnapshotReservationsAnnotation: `[{"uid":"x","exp":99999999999}]`}}}
	created, err := teams.Create(ctx, team, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if _, ok := created.Annotations[k]; ok {
			t.Errorf("create kept a client-written %s", k)
		}
	}
	created.Annotations = map[string]string{quota.ReservationsAnnotation: `[]`, quota.SnapshotReservationsAnnotation: `[]`}
	updated, err := teams.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if _, ok := updated.Annotations[k]; ok {
			t.Errorf("update wrote %s", k)
		}
	}
}

func TestMultiTenancyEnforced(t *testing.T) {
	ctx := context.Background()
	configs := shared.Client.ButlerV1alpha1().ButlerConfigs()
	cfg, err := configs.Get(ctx, "butler", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = configs.Create(ctx, &v1alpha1.ButlerConfig{ObjectMeta: metav1.ObjectMeta{Name: "butler"}}, metav1.CreateOptions{})
		t.Cleanup(func() { _ = configs.Delete(ctx, "butler", metav1.DeleteOptions{}) })
	} else if err == nil {
		saved := cfg.Spec.MultiTenancy.Mode
		t.Cleanup(func() {
			_ = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				c, err := configs.Get(ctx, "butler", metav1.GetOptions{})
				if err != nil {
					return err
				}
				c.Spec.MultiTenancy.Mode = saved
				_, err = configs.Update(ctx, c, metav1.UpdateOptions{})
				return err
			})
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	// The ButlerConfig controller writes the ButlerConfig's status too: read, modify and write until no conflict.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cfg, err := configs.Get(ctx, "butler", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cfg.Spec.MultiTenancy.Mode = v1alpha1.MultiTenancyEnforced
		_, err = configs.Update(ctx, cfg, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	createTeam(t, "iq-tenancy", nil)

	_, err = shared.Client.ButlerV1alpha1().TenantClusters("no-team").Create(ctx, exampleCluster(t, "no-team", "prod"), metav1.CreateOptions{})
	expectForbidden(t, err, `multiTenancy mode is Enforced: namespace "no-team" is not a Team's namespace`)

	wrong := exampleCluster(t, "iq-tenancy", "prod")
	wrong.Spec.TeamRef = &v1alpha1.LocalObjectReference{Name: "team-a"}
	_, err = shared.Client.ButlerV1alpha1().TenantClusters("iq-tenancy").Create(ctx, wrong, metav1.CreateOptions{})
	expectInvalidFields(t, err, "spec.teamRef.name")

	right := exampleCluster(t, "iq-tenancy", "prod")
	right.Spec.TeamRef = &v1alpha1.LocalObjectReference{Name: "iq-tenancy"}
	if _, err := shared.Client.ButlerV1alpha1().TenantClusters("iq-tenancy").Create(ctx, right, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Admission reads Teams from the watch cache and remembers, for a while, that a namespace has
// none. A Team written through this server applies to the very next request all the same: a
// namespace used before its Team existed, then a limit set and lowered in quick succession.
func TestTeamLimitsApplyRightAfterTheTeamIsWritten(t *testing.T) {
	ctx := context.Background()
	const team = "iq-late"
	clusters := shared.Client.ButlerV1alpha1().TenantClusters(team)
	if _, err := clusters.Create(ctx, exampleCluster(t, team, "before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createTeam(t, team, &v1alpha1.ResourceLimits{MaxClusters: ptr.To[int32](1)})
	_, err := clusters.Create(ctx, exampleCluster(t, team, "after"), metav1.CreateOptions{})
	expectForbidden(t, err, "maxClusters")

	teams := shared.Client.ButlerV1alpha1().Teams()
	for _, max := range []int32{3, 2} {
		got, err := teams.Get(ctx, team, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got.Spec.ResourceLimits.MaxClusters = ptr.To(max)
		if _, err := teams.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := clusters.Create(ctx, exampleCluster(t, team, "second"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("second cluster under maxClusters 2: %v", err)
	}
	_, err = clusters.Create(ctx, exampleCluster(t, team, "third"), metav1.CreateOptions{})
	expectForbidden(t, err, "maxClusters")
}

// Standalone too, the ButlerConfig's status counts the Teams and TenantClusters.
func TestButlerConfigStatusCounts(t *testing.T) {
	ctx := context.Background()
	configs := shared.Client.ButlerV1alpha1().ButlerConfigs()
	if _, err := configs.Get(ctx, "butler", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		if _, err := configs.Create(ctx, &v1alpha1.ButlerConfig{ObjectMeta: metav1.ObjectMeta{Name: "butler"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = configs.Delete(ctx, "butler", metav1.DeleteOptions{}) })
	}
	createTeam(t, "iq-counted", nil)
	if _, err := shared.Client.ButlerV1alpha1().TenantClusters("iq-counted").Create(ctx, exampleCluster(t, "iq-counted", "one"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got, want string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		teams, err := shared.Client.ButlerV1alpha1().Teams().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		clusters, err := shared.Client.ButlerV1alpha1().TenantClusters("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		config, err := configs.Get(ctx, "butler", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		want = fmt.Sprintf("teams %d clusters %d exposure LoadBalancer", len(teams.Items), len(clusters.Items))
		got = fmt.Sprintf("teams %d clusters %d exposure %s", config.Status.TeamCount, config.Status.ClusterCount, config.Status.ControlPlaneExposureMode)
		return got == want, nil
	})
	if err != nil {
		t.Fatalf("ButlerConfig status: %s, want %s: %v", got, want, err)
	}
}

// The Ledger lists a Team's clusters from the watch cache, at least as new as this server's last
// write of one: a delete frees its share for the very next create.
func TestTeamQuotaFreedByADeleteAtOnce(t *testing.T) {
	ctx := context.Background()
	const team = "iq-churn"
	createTeam(t, team, &v1alpha1.ResourceLimits{MaxClusters: ptr.To[int32](1)})
	cfg := rest.CopyConfig(shared.Config)
	cfg.QPS, cfg.Burst = -1, 0 // back to back, as fast as the server answers
	clusters := clientset.NewForConfigOrDie(cfg).ButlerV1alpha1().TenantClusters(team)
	for i := range 20 {
		name := fmt.Sprint("c", i)
		if _, err := clusters.Create(ctx, exampleCluster(t, team, name), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %d right after the delete of the one before: %v", i, err)
		}
		if err := clusters.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// Many concurrent snapshot creates against maxSnapshots 2, through the server: exactly 2 are
// stored (each create was counted against what was stored, so all passed together before the
// count was reserved on the Team); a delete frees a place at once.
func TestSnapshotQuotaConcurrentCreates(t *testing.T) {
	ctx := context.Background()
	const team, clients = "iq-snap-race", 24
	createTeam(t, team, &v1alpha1.ResourceLimits{MaxSnapshots: ptr.To[int32](2)})
	if _, err := shared.Client.ButlerV1alpha1().TenantClusters(team).Create(ctx, exampleCluster(t, team, "src"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(shared.Config)
	cfg.QPS, cfg.Burst = -1, 0
	snaps := clientset.NewForConfigOrDie(cfg).ButlerV1alpha1().TenantClusterSnapshots(team)
	take := func(name string) error {
		_, err := snaps.Create(ctx, &v1alpha1.TenantClusterSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.TenantClusterSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "src"}}}, metav1.CreateOptions{})
		return err
	}
	var wg sync.WaitGroup
	var ok, forbidden atomic.Int32
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch err := take(fmt.Sprint("s", i)); {
			case err == nil:
				ok.Add(1)
			case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "its maxSnapshots is 2"):
				forbidden.Add(1)
			default:
				t.Errorf("create s%d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	list, err := snaps.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ok.Load() != 2 || len(list.Items) != 2 {
		t.Fatalf("%d concurrent snapshot creates at maxSnapshots 2: %d admitted, %d refused, %d stored; want 2", clients, ok.Load(), forbidden.Load(), len(list.Items))
	}
	// A delete frees its place at once (the finalizer is the provider's; none runs here).
	gone := list.Items[0].Name
	if err := snaps.Delete(ctx, gone, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := snaps.Patch(ctx, gone, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := take("after-delete"); err != nil {
		t.Errorf("a create after a delete: %v", err)
	}
}
