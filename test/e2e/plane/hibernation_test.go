package plane

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/hibernation"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
	"github.com/butlerdotdev/butler-apiserver/test/localplane"
)

var machinesGVR = framework.GVR("cluster.x-k8s.io", "v1beta2", "machines")

// TestLocalHibernationWakeOnRequest is the "Done when" on the local provider: a cluster
// with a Deployment hibernates (its processes and Machines gone, the CAPI Cluster paused,
// kubectl get tc says Hibernated, the endpoint kept); nothing wakes it while nobody asks, an nc -z
// loop (plain TCP connect and close) included; kubectl get pods with the user's kubeconfig wakes
// it and succeeds on the first try; the Deployment's pods run again on the new nodes; it sleeps
// again after its idle time, but not while a watch is open, and the nc -z loop does not keep it
// from its idle sleep; and deleting it while it sleeps does not wake it.
//
// TestLocalWakeOnRequestTurnedOnWhileRunning tries the same with the listener put in front of a
// cluster that served (it runs beside this one: it waits on Cluster API's probe).
func TestLocalHibernationWakeOnRequest(t *testing.T) {
	framework.LongestFirst(t, 330*time.Second)
	ctx := context.Background()
	ns := framework.Namespace(t, "e2e-hibernate")
	const name = "sleepy"
	applyHibernatingCluster(t, ns, name, 2, "{wakeOnRequest: true}")
	tc := framework.WaitReady(t, ns, name, 2, 5*time.Minute)
	endpoint := tc.Status.ControlPlaneEndpoint
	kubeconfig, _ := framework.MintKubeconfig(t, ns, name)
	if out, err := framework.KubectlAs(t, kubeconfig, "", "create", "deployment", "hello", "--image=registry.k8s.io/pause:3.10", "--replicas=2"); err != nil {
		t.Fatalf("creating a Deployment in the tenant: %v\n%s", err, out)
	}
	if out, err := framework.KubectlAs(t, kubeconfig, "", "rollout", "status", "deployment/hello", "--timeout=90s"); err != nil {
		t.Fatalf("the Deployment did not roll out: %v\n%s", err, out)
	}
	oldNodes := map[string]bool{}
	for _, node := range podNodes(t, kubeconfig) {
		oldNodes[node] = true
	}
	dyn := framework.DynamicClient(t)
	uid := tenantControlPlaneUID(t, ns, name)
	pids := framework.TenantPids(t, filepath.Join(framework.Plane.Dir, "tenants", uid))
	if len(pids) != 3 {
		t.Fatalf("tenant processes: %v", pids)
	}
	// kwok keeps the cluster's Nodes; it holds its kubeconfig here while it runs.
	kwokDir := filepath.Join(framework.Plane.Dir, "kwok", tc.Status.TenantNamespace, name)
	if !exists(kwokDir) {
		t.Fatalf("no kwok runs for the awake cluster (%s is missing)", kwokDir)
	}

	// Hibernate: workers to zero, the control plane's processes stopped, the Cluster paused.
	start := time.Now()
	framework.MustKubectl(t, "patch", "tc", name, "-n", ns, "--type=merge", "-p", `{"spec":{"hibernation":{"hibernated":true}}}`)
	tc = framework.WaitCluster(t, ns, name, 3*time.Minute, "Hibernated", framework.Hibernated)
	t.Logf("hibernate -> Hibernated in %s", time.Since(start).Round(100*time.Millisecond))
	for c, pid := range pids {
		if localplane.Alive(pid) {
			t.Errorf("%s (pid %d) still runs while hibernated", c, pid)
		}
	}
	if procs := framework.TenantProcesses(t, uid); len(procs) != 0 {
		t.Errorf("tenant processes while hibernated: %v", procs)
	}
	if exists(kwokDir) {
		t.Errorf("kwok still runs for the hibernated cluster (%s)", kwokDir)
	}
	machines, err := dyn.Resource(machinesGVR).Namespace(tc.Status.TenantNamespace).List(ctx, metav1.ListOptions{})
	if err != nil || len(machines.Items) != 0 {
		t.Errorf("Machines while hibernated: %d (%v)", len(machines.Items), err)
	}
	cluster, err := dyn.Resource(framework.ClustersGVR).Namespace(tc.Status.TenantNamespace).Get(ctx, name, metav1.GetOptions{})
	if paused, _, _ := unstructured.NestedBool(cluster.Object, "spec", "paused"); err != nil || !paused {
		t.Errorf("the CAPI Cluster is not paused while hibernated (%v)", err)
	}
	if out := framework.MustKubectl(t, "get", "tc", name, "-n", ns); !strings.Contains(out, "Hibernated") {
		t.Errorf("kubectl get tc:\n%s", out)
	}
	if tc.Status.ControlPlaneEndpoint != endpoint || meta.IsStatusConditionTrue(tc.Status.Conditions, "Ready") {
		t.Errorf("hibernated: endpoint %s (was %s), %s", tc.Status.ControlPlaneEndpoint, endpoint, framework.StatusOf(tc))
	}

	// Nothing on the management side wakes it (Cluster API probes every 10 s), nor an nc -z loop.
	staysAsleep(t, ns, name, endpoint, uid)
	if exists(kwokDir) {
		t.Errorf("kwok runs while hibernated (%s)", kwokDir)
	}

	// A user's kubectl wakes it and is answered on the first try.
	logFrom := fileSize(providerLog())
	start = time.Now()
	out, err := framework.KubectlAs(t, kubeconfig, "", "get", "pods", "--no-headers")
	wake := time.Since(start)
	if err != nil || strings.Count(out, "hello-") != 2 {
		t.Fatalf("kubectl get pods on a hibernated cluster: %v after %s\n%s", err, wake.Round(100*time.Millisecond), wakeFailure(out, logFrom, uid, ns, name))
	}
	t.Logf("kubectl get pods on the hibernated cluster answered in %s", wake.Round(100*time.Millisecond))
	tc, _ = framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, name, metav1.GetOptions{})
	if note := tc.Annotations[hibernation.LastChangeAnnotation]; tc.Spec.Hibernation.Hibernated || !strings.HasPrefix(note, "woken by a request") {
		t.Errorf("the wake is not recorded in the TenantCluster: hibernated=%v, %q", tc.Spec.Hibernation.Hibernated, note)
	} else if strings.Contains(note, "127.0.0.1") {
		t.Errorf("the client's address is in an annotation every viewer reads: %q", note)
	}
	tc = framework.WaitReady(t, ns, name, 2, 4*time.Minute)
	if tc.Status.ControlPlaneEndpoint != endpoint {
		t.Errorf("endpoint after the wake %s, was %s", tc.Status.ControlPlaneEndpoint, endpoint)
	}
	if c := meta.FindStatusCondition(tc.Status.Conditions, "Hibernated"); c == nil || c.Reason != "Awake" {
		t.Errorf("Hibernated condition after the wake: %+v", c)
	}
	if !exists(kwokDir) {
		t.Errorf("kwok did not start again after the wake (%s is missing)", kwokDir)
	}
	if out, err := framework.KubectlAs(t, kubeconfig, "", "rollout", "status", "deployment/hello", "--timeout=120s"); err != nil {
		t.Fatalf("the Deployment did not come back: %v\n%s", err, out)
	}
	for pod, node := range podNodes(t, kubeconfig) {
		if node == "" || oldNodes[node] {
			t.Errorf("pod %s on node %q after the wake (old nodes %v)", pod, node, oldNodes)
		}
	}

	// Idle: not while a watch is open, then after the idle time.
	const idle = 20 * time.Second
	framework.MustKubectl(t, "patch", "tc", name, "-n", ns, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"hibernation":{"idleTimeout":%q}}}`, idle))
	watch := exec.Command("kubectl", "--kubeconfig", kubeconfig, "get", "pods", "-w")
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2*idle + 5*time.Second)
	tc, _ = framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, name, metav1.GetOptions{})
	if tc.Spec.Hibernation.Hibernated {
		t.Errorf("went to sleep with a watch open: %q", tc.Annotations[hibernation.LastChangeAnnotation])
	}
	_ = watch.Process.Kill()
	_ = watch.Wait()
	sleepsWhenIdle(t, ns, name, endpoint, idle)

	// A delete while Hibernated deletes without waking.
	framework.MustKubectl(t, "delete", "tc", name, "-n", ns, "--wait=false")
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if procs := framework.TenantProcesses(t, uid); len(procs) != 0 {
			return false, fmt.Errorf("the control plane started during the delete: %v", procs)
		}
		_, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		tc, _ := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, name, metav1.GetOptions{})
		t.Fatalf("delete while hibernated: %v; %s", err, framework.StatusOf(tc))
	}
}

// TestLocalWakeOnRequestTurnedOnWhileRunning is the attacker's check of a listener put in front
// of a cluster that served: Cluster API's client of the endpoint (it probes every 10 s and keeps
// its connection) must neither keep the cluster awake nor wake it. The endpoint refuses until
// Cluster API has dropped that client, then answers through the listener; the cluster sleeps
// after its idle time with an nc -z loop going, and stays asleep.
func TestLocalWakeOnRequestTurnedOnWhileRunning(t *testing.T) {
	framework.LongestFirst(t, 220*time.Second)
	ns := framework.Namespace(t, "e2e-wake-turned-on")
	const name = "served"
	applyHibernatingCluster(t, ns, name, 1, "{}")
	tc := framework.WaitReady(t, ns, name, 1, 5*time.Minute)
	endpoint := tc.Status.ControlPlaneEndpoint
	kubeconfig, _ := framework.MintKubeconfig(t, ns, name)
	start := time.Now()
	framework.MustKubectl(t, "patch", "tc", name, "-n", ns, "--type=merge", "-p", `{"spec":{"hibernation":{"wakeOnRequest":true}}}`)
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, 4*time.Minute, false, func(context.Context) (bool, error) {
		_, err := framework.KubectlAs(t, kubeconfig, "", "get", "ns", "default", "--request-timeout=5s")
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("the endpoint did not answer again after wakeOnRequest was turned on: %v", err)
	}
	t.Logf("wakeOnRequest turned on -> the endpoint answers through the listener after %s", time.Since(start).Round(time.Second))
	const idle = 20 * time.Second
	framework.MustKubectl(t, "patch", "tc", name, "-n", ns, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"hibernation":{"idleTimeout":%q}}}`, idle))
	sleepsWhenIdle(t, ns, name, endpoint, idle)
	staysAsleep(t, ns, name, endpoint, tenantControlPlaneUID(t, ns, name))
}

// staysAsleep checks that a Hibernated cluster stays asleep, its tenant processes gone, for 30 s
// (three of Cluster API's probes) with an nc -z loop going.
func staysAsleep(t *testing.T, ns, name, endpoint, uid string) {
	t.Helper()
	stopScan := connectLoop(t, endpoint)
	time.Sleep(30 * time.Second)
	stopScan()
	tc, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil || !framework.Hibernated(tc) || !tc.Spec.Hibernation.Hibernated {
		t.Fatalf("woke without a request: %s, annotation %q", framework.StatusOf(tc), tc.Annotations[hibernation.LastChangeAnnotation])
	}
	if procs := framework.TenantProcesses(t, uid); len(procs) != 0 {
		t.Errorf("tenant processes 30 s into hibernation: %v", procs)
	}
}

// sleepsWhenIdle waits for an awake cluster with the given idle timeout to hibernate by
// idleness while an nc -z loop connects to its endpoint (a connection is not use).
func sleepsWhenIdle(t *testing.T, ns, name, endpoint string, idle time.Duration) {
	t.Helper()
	start := time.Now()
	stopScan := connectLoop(t, endpoint)
	tc := framework.WaitCluster(t, ns, name, 3*time.Minute, "Hibernated after the idle time, an nc -z loop going", framework.Hibernated)
	stopScan()
	t.Logf("Hibernated by idleness in %s (idle timeout %s)", time.Since(start).Round(100*time.Millisecond), idle)
	if note := tc.Annotations[hibernation.LastChangeAnnotation]; !strings.HasPrefix(note, "idle for") {
		t.Errorf("the idle sleep is not recorded: %q", note)
	}
}

// wakeFailure tells why a request that should have woken a cluster failed: kubectl's output and
// the provider's log lines about the tenant (its listener's and its wake's) since offset from.
func wakeFailure(kubectlOut string, from int64, uid, ns, name string) string {
	return fmt.Sprintf("kubectl said:\n  %s\nthe provider's log of the tenant since the request:\n%s",
		strings.ReplaceAll(strings.TrimSpace(kubectlOut), "\n", "\n  "), providerLines(from, uid, ns+"/"+name))
}

// tenantControlPlaneUID is the UID of the cluster's TenantControlPlane: the local provider's
// directory and etcd prefix of the tenant.
func tenantControlPlaneUID(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	tc, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tcp, err := framework.DynamicClient(t).Resource(framework.TenantCPGVR).Namespace(tc.Status.TenantNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(tcp.GetUID())
}

// applyHibernatingCluster applies a local ProviderConfig and a local cluster with the given
// workers and spec.hibernation (flow-style YAML).
func applyHibernatingCluster(t *testing.T, ns, name string, workers int, hibernation string) {
	t.Helper()
	framework.MustApply(t, framework.LocalProviderConfigManifest(ns)+framework.LocalClusterManifest(ns, name, framework.PinnedVersion, bootstrap.OSTalos, workers)+"  hibernation: "+hibernation+"\n")
}

// podNodes maps the tenant's pods to their nodes ("" when unscheduled), through the user's
// kubeconfig.
func podNodes(t *testing.T, kubeconfig string) map[string]string {
	t.Helper()
	out, err := framework.KubectlAs(t, kubeconfig, "", "get", "pods", "-o", `jsonpath={range .items[*]}{.metadata.name}={.spec.nodeName}{"\n"}{end}`)
	if err != nil {
		t.Fatalf("kubectl get pods: %v\n%s", err, out)
	}
	pods := map[string]string{}
	for _, line := range strings.Fields(out) {
		pod, node, _ := strings.Cut(line, "=")
		pods[pod] = node
	}
	return pods
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestLocalCreatedAsleep: a cluster created Hibernated with wake on request never starts its
// control plane until a request comes: Hibernated with an endpoint held and kubeconfigs to mint,
// no tenant process and no kube-apiserver log; then kubectl with a minted kubeconfig starts it on
// the first try, and it comes up with its worker.
func TestLocalCreatedAsleep(t *testing.T) {
	framework.LongestFirst(t, 56*time.Second)
	ctx := context.Background()
	ns := framework.Namespace(t, "e2e-born-asleep")
	const name = "unstarted"
	applyHibernatingCluster(t, ns, name, 1, "{hibernated: true, wakeOnRequest: true}")
	start := time.Now()
	tc := framework.WaitCluster(t, ns, name, 2*time.Minute, "Hibernated", framework.Hibernated)
	t.Logf("create -> Hibernated (never started) in %s", time.Since(start).Round(100*time.Millisecond))
	if tc.Status.ControlPlaneEndpoint == "" || tc.Status.KubeconfigSecretRef == nil {
		t.Fatalf("created asleep without an endpoint or kubeconfig: %s", framework.StatusOf(tc))
	}
	if c := meta.FindStatusCondition(tc.Status.Conditions, "ControlPlaneReady"); c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "never started") {
		t.Errorf("ControlPlaneReady of a cluster never started: %+v", c)
	}
	tcp, err := framework.DynamicClient(t).Resource(framework.TenantCPGVR).Namespace(tc.Status.TenantNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(tcp.GetUID())
	if procs := framework.TenantProcesses(t, uid); len(procs) != 0 {
		t.Errorf("tenant processes of a cluster created asleep: %v", procs)
	}
	if apiLog := filepath.Join(framework.Plane.Dir, "tenants", uid, "kube-apiserver.log"); exists(apiLog) {
		t.Errorf("kube-apiserver ran for a cluster created asleep (%s exists)", apiLog)
	}
	if v, _, _ := unstructured.NestedString(tcp.Object, "status", "kubernetesResources", "version", "version"); v != "" {
		t.Errorf("the TenantControlPlane of a cluster never started reports version %q", v)
	}
	// What a cluster asleep since its creation costs the management cluster: no workers' objects
	// (the first start makes them), and one Event, Hibernated.
	if _, err := framework.DynamicClient(t).Resource(framework.MachineDeploymentsGVR).Namespace(tc.Status.TenantNamespace).Get(ctx, name+"-workers", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the MachineDeployment of a cluster never started: %v (want NotFound)", err)
	}
	var reasons []string
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		reasons = tenantClusterEventReasons(t, ns, name) // sent after the status it tells of
		return slices.Contains(reasons, "Hibernated"), nil
	})
	if !slices.Equal(reasons, []string{"Hibernated"}) {
		t.Errorf("Events of a cluster created asleep: %v, want [Hibernated]", reasons)
	}

	kubeconfig, _ := framework.MintKubeconfig(t, ns, name)
	logFrom := fileSize(providerLog())
	start = time.Now()
	out, err := framework.KubectlAs(t, kubeconfig, "", "get", "ns", "default", "--no-headers")
	if err != nil || !strings.Contains(out, "Active") {
		t.Fatalf("kubectl on a cluster created asleep: %v after %s\n%s", err, time.Since(start).Round(100*time.Millisecond), wakeFailure(out, logFrom, uid, ns, name))
	}
	t.Logf("first request to the never-started cluster answered in %s", time.Since(start).Round(100*time.Millisecond))
	tc = framework.WaitReady(t, ns, name, 1, 4*time.Minute)
	if c := meta.FindStatusCondition(tc.Status.Conditions, "Hibernated"); c == nil || c.Reason != "Awake" {
		t.Errorf("Hibernated condition after the first start: %+v", c)
	}
}

// tenantClusterEventReasons are the reasons of the Events about a TenantCluster, oldest first.
func tenantClusterEventReasons(t *testing.T, ns, name string) []string {
	t.Helper()
	out := framework.MustKubectl(t, "get", "events.events.k8s.io", "-n", ns, "--sort-by=.metadata.creationTimestamp", "-o", "json")
	var list struct {
		Items []struct {
			Reason    string
			Regarding struct{ Kind, Name string }
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "TenantCluster" && e.Regarding.Name == name {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

// connectLoop is the attacker's nc -z: it connects to addr and closes at once, five times a
// second, until the returned func is called.
func connectLoop(t *testing.T, addr string) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
			}
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return func() { close(done); <-finished }
}

// TestLocalWakeFlood: 100 TLS connections at once to the endpoints of clusters asleep since
// their creation wake at most the provider's bound on clusters waking at once (its default,
// 4), not all of them.
func TestLocalWakeFlood(t *testing.T) { wakeFlood(t, 6) }

// wakeFlood creates n clusters asleep with wake on request, sends 100 ClientHellos at once
// round-robin to their endpoints (an attacker without credentials: the TLS handshake is all it
// can do), and counts the clusters woken.
func wakeFlood(t *testing.T, n int) {
	const maxWaking, conns = 4, 100
	ctx := context.Background()
	ns := framework.Namespace(t, "e2e-wake-flood")
	manifest := framework.LocalProviderConfigManifest(ns)
	for i := range n {
		manifest += "---\n" + framework.LocalClusterManifest(ns, fmt.Sprint("flood-", i), framework.PinnedVersion, bootstrap.OSTalos, 0) +
			"  hibernation: {hibernated: true, wakeOnRequest: true}\n"
	}
	start := time.Now()
	framework.MustApply(t, manifest)
	endpoints := make([]string, n)
	for i := range n {
		endpoints[i] = framework.WaitCluster(t, ns, fmt.Sprint("flood-", i), 3*time.Minute, "Hibernated", framework.Hibernated).Status.ControlPlaneEndpoint
	}
	t.Logf("%d clusters created asleep in %s", n, time.Since(start).Round(100*time.Millisecond))

	start = time.Now()
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := &net.Dialer{Timeout: 5 * time.Second}
			c, err := tls.DialWithDialer(d, "tcp", endpoints[i%n], &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the attacker's client
			if err == nil {
				c.Close()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d connections to %d endpoints done in %s", conns, n, time.Since(start).Round(100*time.Millisecond))
	time.Sleep(10 * time.Second) // a wake refused now would not be written later
	woken := 0
	for i := range n {
		tc, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, fmt.Sprint("flood-", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !tc.Spec.Hibernation.Hibernated {
			woken++
		}
	}
	t.Logf("a flood of %d connections woke %d of %d clusters", conns, woken, n)
	if woken > maxWaking {
		t.Errorf("%d of %d clusters woken by a flood, want at most %d (the bound on clusters waking at once)", woken, n, maxWaking)
	}
	if woken == 0 {
		t.Errorf("no cluster woke: the flood's ClientHellos should wake up to %d", maxWaking)
	}
	start = time.Now()
	framework.MustKubectl(t, "delete", "tc", "--all", "-n", ns, "--wait=true", "--timeout=5m")
	t.Logf("%d clusters (%d awake) deleted in %s", n, woken, time.Since(start).Round(100*time.Millisecond))
}
