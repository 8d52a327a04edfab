package plane

import (
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// TestSlowHibernationWakeFigures measures P10 of docs/performance.md (WAKE_BENCH=1; make
// bench-report ONLY=P10 runs it and turns its pairs into the figure). One local TenantCluster with
// wake on request and no workers, asleep; in WAKE_PAIRS (3) pairs whose order alternates:
//   - the wake: seconds from a user's kubectl (get ns default, the minted kubeconfig) on the
//     Hibernated cluster until it answers; the cluster is then put to sleep again;
//   - the cold start: the same kube-apiserver command line the provider ran, on the same
//     datastore, started by hand while the cluster sleeps, until /readyz answers.
//
// The wake does more (kube-controller-manager and kube-scheduler, the hold of the first
// connection, the lifecycle's steps): the ratio is what all of that costs over the one start a
// wake cannot avoid.
func TestSlowHibernationWakeFigures(t *testing.T) {
	pairs := figurePairs(t, "WAKE_BENCH", "WAKE_PAIRS", "P10")
	ns := framework.Namespace(t, "e2e-wakefig")
	const name = "wake"
	applyHibernatingCluster(t, ns, name, 0, "{wakeOnRequest: true}")
	tc := framework.WaitReady(t, ns, name, 0, 5*time.Minute)
	kubeconfig, _ := framework.MintKubeconfig(t, ns, name)
	tcp, err := framework.DynamicClient(t).Resource(framework.TenantCPGVR).Namespace(tc.Status.TenantNamespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tenantDir := filepath.Join(framework.Plane.Dir, "tenants", string(tcp.GetUID()))
	sleep := func() {
		framework.MustKubectl(t, "patch", "tc", name, "-n", ns, "--type=merge", "-p", `{"spec":{"hibernation":{"hibernated":true}}}`)
		framework.WaitCluster(t, ns, name, 3*time.Minute, "Hibernated", framework.Hibernated)
	}
	wake := func() time.Duration {
		start := time.Now()
		if out, err := framework.KubectlAs(t, kubeconfig, "", "get", "ns", "default"); err != nil {
			t.Fatalf("kubectl on the hibernated cluster: %v\n%s", err, out)
		}
		took := time.Since(start)
		framework.WaitReady(t, ns, name, 0, 3*time.Minute)
		return took
	}
	lines := alternatingPairs(t, pairs,
		figureSide{"wake -> answered", func(int) time.Duration { sleep(); return wake() }},
		figureSide{"cold kube-apiserver start -> /readyz", func(int) time.Duration { sleep(); return coldAPIServerStart(t, tenantDir) }})
	writePairs(t, "WAKE_PAIRS_OUT", lines)
}
