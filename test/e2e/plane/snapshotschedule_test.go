package plane

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// TestSnapshotSchedule: a schedule of every minute with keep 1 takes one snapshot per firing,
// named for the firing, and once the second is Ready the first is deleted with its data; a bad
// schedule is a 422 naming its field; deleting the cluster with onClusterDelete: Delete deletes
// the scheduled snapshots and keeps one created by hand. About two minutes (two firings).
func TestSnapshotSchedule(t *testing.T) {
	framework.LongestFirst(t, 155*time.Second)
	ctx := context.Background()
	ns := framework.Namespace(t, "e2e-snapsched")
	bad := framework.LocalClusterManifest(ns, "bad", framework.PinnedVersion, bootstrap.OSTalos, 0) +
		"  snapshots: {schedules: [{name: m, schedule: \"61 * * * *\", keep: 0}]}\n"
	out, err := framework.KubectlAs(t, framework.Plane.Kubeconfig, bad, "apply", "-f", "-")
	if err == nil || !strings.Contains(out, "spec.snapshots.schedules[0].schedule") || !strings.Contains(out, "spec.snapshots.schedules[0].keep") {
		t.Fatalf("a bad schedule: want a 422 naming spec.snapshots.schedules[0].schedule and .keep, got %v\n%s", err, out)
	}

	localCluster(t, ns, "sched", framework.PinnedVersion, bootstrap.OSTalos, 0)
	framework.MustKubectl(t, "patch", "tc", "sched", "-n", ns, "--type=merge", "-p",
		`{"spec":{"snapshots":{"schedules":[{"name":"m","schedule":"* * * * *","keep":1}],"onClusterDelete":"Delete"}}}`)
	tc := framework.WaitReady(t, ns, "sched", 0, 4*time.Minute)
	framework.MustApply(t, fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantClusterSnapshot
metadata: {name: by-hand, namespace: %s}
spec: {clusterRef: {name: sched}}
`, ns))
	waitSnapshot(t, ns, "by-hand", 2*time.Minute)

	// Two firings: every snapshot seen is named for its minute; at the end one is left, Ready,
	// the newest, and the older one and its data are gone.
	named := regexp.MustCompile(`^sched-m-\d{12}$`)
	seen := map[string]string{} // name -> location
	var left []v1alpha1.TenantClusterSnapshot
	start := time.Now()
	err = wait.PollUntilContextTimeout(ctx, time.Second, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusterSnapshots(ns).List(ctx, metav1.ListOptions{
			LabelSelector: v1alpha1.SnapshotScheduleLabel + "=m"})
		if err != nil {
			return false, nil
		}
		left = left[:0]
		for _, s := range list.Items {
			if !named.MatchString(s.Name) || s.Labels[v1alpha1.SnapshotClusterLabel] != "sched" {
				return false, fmt.Errorf("scheduled snapshot %s: name or labels wrong (%v)", s.Name, s.Labels)
			}
			if s.Status.Phase == v1alpha1.SnapshotFailed {
				return false, fmt.Errorf("scheduled snapshot %s failed: %s", s.Name, s.Status.Message)
			}
			if s.Status.Location != "" || seen[s.Name] == "" {
				seen[s.Name] = s.Status.Location
			}
			if s.DeletionTimestamp == nil {
				left = append(left, s)
			}
		}
		// All but the kept one gone from the list, not only terminating: the provider deletes the
		// data before it lets the finalizer go, so only then must the data be gone.
		return len(seen) >= 2 && len(list.Items) == 1 && len(left) == 1 && left[0].Status.Phase == v1alpha1.SnapshotReady, nil
	})
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	if err != nil {
		t.Fatalf("after %s: snapshots seen %v, left %d: %v", time.Since(start).Round(time.Second), names, len(left), err)
	}
	if left[0].Name != names[len(names)-1] {
		t.Fatalf("retention kept %s, not the newest of %v", left[0].Name, names)
	}
	t.Logf("schedule of every minute, keep 1: %v taken, %s kept, %s after the cluster was Ready", names, left[0].Name, time.Since(start).Round(time.Second))
	for _, n := range names[:len(names)-1] {
		if loc := seen[n]; loc != "" {
			if _, err := os.Stat(loc); !os.IsNotExist(err) {
				t.Errorf("snapshot %s was deleted by retention but its data %s is still there", n, loc)
			}
		}
	}
	ann := map[string]string{}
	if got, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, "sched", metav1.GetOptions{}); err == nil {
		ann = got.Annotations
	}
	if !strings.Contains(ann[v1alpha1.SnapshotSchedulesAnnotation], `"m":`) {
		t.Errorf("the last firing is not recorded: %q", ann[v1alpha1.SnapshotSchedulesAnnotation])
	}

	// onClusterDelete: Delete takes the scheduled snapshots with the cluster, not the one by hand.
	tcp, err := framework.DynamicClient(t).Resource(framework.TenantCPGVR).Namespace(tc.Status.TenantNamespace).Get(ctx, "sched", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	framework.DeleteCluster(t, ns, "sched", string(tcp.GetUID()))
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusterSnapshots(ns).List(ctx, metav1.ListOptions{
			LabelSelector: v1alpha1.SnapshotScheduleLabel + "=m"})
		return err == nil && len(list.Items) == 0, nil
	})
	if err != nil {
		t.Fatal("the scheduled snapshots outlived their cluster under onClusterDelete: Delete")
	}
	if _, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusterSnapshots(ns).Get(ctx, "by-hand", metav1.GetOptions{}); err != nil {
		t.Fatalf("the snapshot made by hand went with the cluster: %v", err)
	}
}
