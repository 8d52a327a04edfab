package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/hibernation"
)

// The slow hibernation checks run in make bench-hibernation, not in make test.

// TestSlowHibernationSchedule: a schedule takes a cluster down at its start time and up at its
// end time; the lag after each time is reported (the goal: within a minute).
func TestSlowHibernationSchedule(t *testing.T) {
	ns := namespace(t, "e2e-schedule")
	const name = "nightly"
	localCluster(t, ns, name, pinnedVersion, bootstrap.OSTalos, 0)
	waitReady(t, ns, name, 0, 5*time.Minute)

	now := time.Now().UTC()
	start := now.Add(90 * time.Second).Truncate(time.Minute)
	end := start.Add(2 * time.Minute)
	cron := func(t time.Time) string { return fmt.Sprintf("%d %d * * *", t.Minute(), t.Hour()) }
	mustKubectl(t, "patch", "tc", name, "-n", ns, "--type=merge", "-p",
		fmt.Sprintf(`{"spec":{"hibernation":{"schedules":[{"start":%q,"end":%q,"location":"UTC"}]}}}`, cron(start), cron(end)))

	waitCluster(t, ns, name, time.Until(start)+3*time.Minute, "Hibernated by the schedule", hibernated)
	asleep := time.Since(start)
	waitCluster(t, ns, name, time.Until(end)+3*time.Minute, "Ready by the schedule", func(tc *v1alpha1.TenantCluster) bool {
		return !tc.Spec.Hibernation.Hibernated && tc.Status.Phase == v1alpha1.TenantClusterReady
	})
	awake := time.Since(end)
	t.Logf("schedule start %s -> Hibernated %.1f s after; end %s -> Ready %.1f s after", start.Format("15:04"), asleep.Seconds(), end.Format("15:04"), awake.Seconds())
	if asleep > time.Minute || awake > time.Minute {
		t.Errorf("not within a minute of the schedule's times: asleep %s after the start, Ready %s after the end", asleep, awake)
	}
}

// TestSlowHibernationQuietAndWakeLatency: a cold create's first served request against a
// wake's, in one run; then five minutes asleep with nothing waking the cluster.
func TestSlowHibernationQuietAndWakeLatency(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-wake")
	const name = "latency"
	created := time.Now()
	mustApply(t, fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: ProviderConfig
metadata: {name: local, namespace: %s}
spec: {provider: local}
---
`, ns)+localClusterManifest(ns, name, pinnedVersion, bootstrap.OSTalos, 0)+`  hibernation: {wakeOnRequest: true}
`)
	waitReady(t, ns, name, 0, 5*time.Minute)
	kubeconfig, _ := mintKubeconfig(t, ns, name)
	if out, err := kubectlAs(t, kubeconfig, "", "get", "ns", "default"); err != nil {
		t.Fatalf("kubectl on the new cluster: %v\n%s", err, out)
	}
	cold := time.Since(created)

	var wakes []time.Duration
	for i := range 3 {
		mustKubectl(t, "patch", "tc", name, "-n", ns, "--type=merge", "-p", `{"spec":{"hibernation":{"hibernated":true}}}`)
		waitCluster(t, ns, name, 3*time.Minute, "Hibernated", hibernated)
		if i == 2 {
			// Five minutes asleep: nothing but a user may wake it.
			tc, _ := plane.butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, name, metav1.GetOptions{})
			note := tc.Annotations[hibernation.LastChangeAnnotation]
			spurious := 0
			for end := time.Now().Add(5 * time.Minute); time.Now().Before(end); time.Sleep(5 * time.Second) {
				tc, err := plane.butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, name, metav1.GetOptions{})
				if err == nil && (!tc.Spec.Hibernation.Hibernated || tc.Annotations[hibernation.LastChangeAnnotation] != note) {
					spurious++
					t.Errorf("woken without a request: %q", tc.Annotations[hibernation.LastChangeAnnotation])
					break
				}
			}
			t.Logf("5 minutes asleep: %d wakes without a user request", spurious)
		}
		start := time.Now()
		if out, err := kubectlAs(t, kubeconfig, "", "get", "ns", "default"); err != nil {
			t.Fatalf("kubectl on the hibernated cluster: %v\n%s", err, out)
		}
		wakes = append(wakes, time.Since(start))
		waitReady(t, ns, name, 0, 3*time.Minute)
	}
	sorted := append([]time.Duration(nil), wakes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	var parts []string
	for _, w := range wakes {
		parts = append(parts, fmt.Sprintf("%.2f s", w.Seconds()))
	}
	t.Logf("cold create -> first request served %.2f s; wake -> first request served %s (median %.2f s, %.2f of the cold create)",
		cold.Seconds(), strings.Join(parts, ", "), sorted[1].Seconds(), sorted[1].Seconds()/cold.Seconds())
}
