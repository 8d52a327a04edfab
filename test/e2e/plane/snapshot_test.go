package plane

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

var widgetGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// fastClients are clients of a minted kubeconfig that are not held to client-go's 5 requests a
// second, for filling a tenant with objects.
func fastClients(t *testing.T, kubeconfig string) (kubernetes.Interface, dynamic.Interface, *rest.Config) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	return kubernetes.NewForConfigOrDie(cfg), dynamic.NewForConfigOrDie(cfg), cfg
}

// createAll runs f(i) for i in [0, n) on 16 goroutines and returns the first error.
func createAll(n int, f func(i int) error) error {
	var (
		next  atomic.Int64
		first error
		once  sync.Once
		wg    sync.WaitGroup
	)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := f(i); err != nil && !apierrors.IsAlreadyExists(err) {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// deleteTenantNamespace deletes a namespace in a tenant and waits until it is gone.
func deleteTenantNamespace(t *testing.T, kube kubernetes.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	if err := kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("namespace %s not deleted in the tenant", name)
	}
}

// fillConfigMaps creates ConfigMaps cm-000 … in namespace ns of a tenant, n of them.
func fillConfigMaps(t *testing.T, kube kubernetes.Interface, ns string, n int) {
	t.Helper()
	if err := createAll(n, func(i int) error {
		_, err := kube.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i)},
			Data: map[string]string{"i": strconv.Itoa(i)}}, metav1.CreateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// restoreInPlace rolls the cluster back to the snapshot (spec.restoreFrom with its confirm),
// waits for status.restore to finish, Succeeded and in place, and for the tenant's namespace app
// to hold configMaps ConfigMaps again, and returns the cluster and the time from the patch
// until app was back. It logs when the control plane served again and the provider's steps
// (stop, write, switch, kube-apiserver's start to /readyz: the cold start inside it).
func restoreInPlace(t *testing.T, kube kubernetes.Interface, ns, cluster, snapshot string, configMaps int) (*v1alpha1.TenantCluster, time.Duration) {
	t.Helper()
	ctx := context.Background()
	logFrom := fileSize(providerLog())
	start := time.Now()
	framework.MustKubectl(t, "patch", "tc", cluster, "-n", ns, "--type", "merge", "-p",
		fmt.Sprintf(`{"spec":{"restoreFrom":{"name":%q,"confirm":%q}}}`, snapshot, cluster))
	restored := framework.WaitCluster(t, ns, cluster, 4*time.Minute, "restored in place", func(tc *v1alpha1.TenantCluster) bool {
		return tc.Status.Restore != nil && tc.Status.Restore.SnapshotName == snapshot && tc.Status.Restore.Phase != v1alpha1.RestoreRunning && tc.Status.Restore.Phase != ""
	})
	if r := restored.Status.Restore; r.Phase != v1alpha1.RestoreSucceeded || !r.InPlace || r.Dropped != 0 {
		t.Fatalf("in-place status.restore %+v", r)
	}
	statusAt := time.Since(start)
	// The control plane, stopped before status.restore said Succeeded, serves again.
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the control plane not ready after the in-place restore: %v", err)
	}
	readyAt := time.Since(start)
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		back, err := kube.CoreV1().ConfigMaps("app").List(ctx, metav1.ListOptions{})
		return err == nil && len(back.Items) >= configMaps, nil
	}); err != nil {
		t.Fatalf("namespace app not back after the in-place restore: %v", err)
	}
	took := time.Since(start)
	steps := providerLines(logFrom, "Restor", "Switched", "Killing", "answers /readyz", "Tenant control plane Ready")
	t.Logf("in-place restore from %s: status.restore Succeeded %s, the control plane's /readyz 200 %s, app back %s after the patch; the provider's steps:\n%s",
		snapshot, statusAt.Round(100*time.Millisecond), readyAt.Round(100*time.Millisecond), took.Round(100*time.Millisecond), steps)
	// The baseline: the cold start of the same kube-apiserver inside the restore (exec to /readyz).
	if _, after, ok := strings.Cut(steps, `answers /readyz"`); ok {
		if _, v, ok := strings.Cut(after, `sinceStart="`); ok {
			v, _, _ = strings.Cut(v, `"`)
			if cold, err := time.ParseDuration(v); err == nil && cold > 0 {
				t.Logf("in-place restore to the control plane's /readyz: %s, %.2fx the cold start of its kube-apiserver inside it (%s)",
					readyAt.Round(100*time.Millisecond), float64(readyAt)/float64(cold), cold)
			}
		}
	}
	return restored, took
}

// nodeNames lists a tenant's Nodes, sorted.
func nodeNames(t *testing.T, kube kubernetes.Interface) []string {
	t.Helper()
	nodes, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	return names
}

func waitSnapshot(t *testing.T, ns, name string, timeout time.Duration) *v1alpha1.TenantClusterSnapshot {
	t.Helper()
	var s *v1alpha1.TenantClusterSnapshot
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		s, err = framework.Plane.Butler.ButlerV1alpha1().TenantClusterSnapshots(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if s.Status.Phase == v1alpha1.SnapshotFailed {
			return false, fmt.Errorf("snapshot failed: %s", s.Status.Message)
		}
		return s.Status.Phase == v1alpha1.SnapshotReady, nil
	})
	if err != nil {
		t.Fatalf("snapshot %s/%s not Ready: %v (status %+v)", ns, name, err, s.Status)
	}
	return s
}

// TestSnapshotCloneAndRestore: a local tenant holding a Deployment, ConfigMaps and a CRD with
// many objects is snapshotted while a bounded load writes to it; every object written up to the
// snapshot's revision is in it and none after (their resourceVersions are the datastore's
// revisions), as the clone made from it shows; the clone becomes Ready with its own CA (the
// source's kubeconfig is refused there) and its own Nodes; the source, its namespace deleted, is
// restored in place from the snapshot and has it back; its snapshot is deleted with its data.
// SNAPSHOT_E2E_OBJECTS sets the CRD's object count (default 2000; the 10,000 with 10000).
func TestSnapshotCloneAndRestore(t *testing.T) {
	ctx := context.Background()
	objects := 2000
	if v, err := strconv.Atoi(os.Getenv("SNAPSHOT_E2E_OBJECTS")); err == nil && v > 0 {
		objects = v
	}
	const configMaps = 50
	ns := framework.Namespace(t, "e2e-snap")
	localCluster(t, ns, "src", framework.PinnedVersion, bootstrap.OSTalos, 1)
	framework.WaitReady(t, ns, "src", 1, 4*time.Minute)
	srcKubeconfig, _ := framework.MintKubeconfig(t, ns, "src")
	kube, dyn, _ := fastClients(t, srcKubeconfig)

	// The tenant's objects: a namespace with ConfigMaps, a Deployment and CRD objects.
	if out, err := framework.KubectlAs(t, srcKubeconfig, widgetCRD, "apply", "-f", "-"); err != nil {
		t.Fatalf("CRD: %v\n%s", err, out)
	}
	if out, err := framework.KubectlAs(t, srcKubeconfig, "", "wait", "--for", "condition=established", "crd/widgets.example.com", "--timeout=60s"); err != nil {
		t.Fatalf("CRD not established: %v\n%s", err, out)
	}
	for _, n := range []string{"app", "load"} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := framework.KubectlAs(t, srcKubeconfig, "", "create", "deployment", "hello", "-n", "app", "--image=registry.k8s.io/pause:3.10"); err != nil {
		t.Fatalf("Deployment: %v\n%s", err, out)
	}
	// Rights a tenant admin grants before the snapshot and takes back after it (mallory's
	// binding, the ServiceAccount ci): an in-place restore must not give them back.
	for _, args := range [][]string{{"create", "clusterrolebinding", "mallory", "--clusterrole=cluster-admin", "--user=mallory"},
		{"create", "rolebinding", "mallory", "-n", "load", "--clusterrole=admin", "--user=mallory"},
		{"create", "serviceaccount", "ci", "-n", "load"}} {
		if out, err := framework.KubectlAs(t, srcKubeconfig, "", args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	fill := time.Now()
	fillConfigMaps(t, kube, "app", configMaps)
	if err := createAll(objects, func(i int) error {
		w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprintf("w-%05d", i)}, "spec": map[string]any{"i": int64(i), "pad": strings.Repeat("x", 200)}}}
		_, err := dyn.Resource(widgetGVR).Namespace("app").Create(ctx, w, metav1.CreateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d widgets and %d ConfigMaps written in %s", objects, configMaps, time.Since(fill).Round(100*time.Millisecond))

	// A bounded write load while the snapshot is taken: ConfigMaps in "load", each create's
	// resourceVersion (the datastore revision of its write) recorded.
	var (
		mu      sync.Mutex
		written = map[string]int64{}
		stop    atomic.Bool
		wg      sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load() && i < 5000; i++ {
			cm, err := kube.CoreV1().ConfigMaps("load").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("load-%04d", i)}}, metav1.CreateOptions{})
			if err != nil {
				continue
			}
			rv, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
			mu.Lock()
			written[cm.Name] = rv
			mu.Unlock()
			time.Sleep(10 * time.Millisecond)
		}
	}()
	time.Sleep(time.Second)
	taken := time.Now()
	framework.MustApply(t, fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantClusterSnapshot
metadata: {name: src-1, namespace: %s}
spec: {clusterRef: {name: src}}
`, ns))
	snap := waitSnapshot(t, ns, "src-1", 2*time.Minute)
	time.Sleep(time.Second)
	stop.Store(true)
	wg.Wait()
	t.Logf("snapshot Ready %s after create: revision %d, %d keys, %d bytes, %s", time.Since(taken).Round(100*time.Millisecond),
		snap.Status.Revision, snap.Status.ObjectCount, snap.Status.Bytes, snap.Status.Location)
	if snap.Labels[v1alpha1.SnapshotClusterLabel] != "src" || snap.Status.KubernetesVersion != framework.PinnedVersion ||
		!strings.HasPrefix(snap.Status.Checksum, "sha256:") || snap.Status.ObjectCount < int64(objects+configMaps) {
		t.Fatalf("snapshot: labels %v status %+v", snap.Labels, snap.Status)
	}
	if out := framework.MustKubectl(t, "get", "tcs", "-n", ns); !strings.Contains(out, "Ready") || !strings.Contains(out, strconv.FormatInt(snap.Status.Revision, 10)) {
		t.Errorf("kubectl get tcs:\n%s", out)
	}
	var before, after int
	for _, rv := range written {
		if rv <= snap.Status.Revision {
			before++
		} else {
			after++
		}
	}
	if before == 0 || after == 0 {
		t.Fatalf("the load wrote %d objects before the snapshot's revision and %d after: both are needed", before, after)
	}

	// A clone from the snapshot: a new cluster with the objects, its own CA and its own Node.
	cloneStart := time.Now()
	framework.MustApply(t, framework.LocalClusterManifest(ns, "clone", framework.PinnedVersion, bootstrap.OSTalos, 1)+"  restoreFrom: {name: src-1}\n")
	clone := framework.WaitReady(t, ns, "clone", 1, 5*time.Minute)
	t.Logf("clone Ready %s after create; restore %+v", time.Since(cloneStart).Round(100*time.Millisecond), clone.Status.Restore)
	if r := clone.Status.Restore; r == nil || r.Phase != v1alpha1.RestoreSucceeded || r.InPlace || r.SnapshotUID != string(snap.UID) || r.Dropped == 0 {
		t.Fatalf("clone status.restore %+v", clone.Status.Restore)
	}
	cloneKubeconfig, _ := framework.MintKubeconfig(t, ns, "clone")
	ckube, cdyn, _ := fastClients(t, cloneKubeconfig)
	widgets, err := cdyn.Resource(widgetGVR).Namespace("app").List(ctx, metav1.ListOptions{})
	if err != nil || len(widgets.Items) != objects {
		t.Fatalf("widgets in the clone: %d, want %d (%v)", len(widgets.Items), objects, err)
	}
	cms, err := ckube.CoreV1().ConfigMaps("app").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cmCount := 0
	for _, cm := range cms.Items {
		if strings.HasPrefix(cm.Name, "cm-") {
			cmCount++
		}
	}
	if cmCount != configMaps {
		t.Errorf("ConfigMaps cm-* in app: %d, want %d", cmCount, configMaps)
	}
	if _, err := ckube.AppsV1().Deployments("app").Get(ctx, "hello", metav1.GetOptions{}); err != nil {
		t.Errorf("the Deployment in the clone: %v", err)
	}
	load, err := ckube.CoreV1().ConfigMaps("load").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inClone := map[string]bool{}
	for _, cm := range load.Items {
		inClone[cm.Name] = true
	}
	for name, rv := range written {
		if (rv <= snap.Status.Revision) != inClone[name] {
			t.Errorf("ConfigMap load/%s written at revision %d; snapshot revision %d; in the clone: %v", name, rv, snap.Status.Revision, inClone[name])
		}
	}
	t.Logf("load: %d ConfigMaps written up to the snapshot's revision (all in the clone), %d after (none)", before, after)
	// Its own CA: the source's credentials are refused; its Node is its own.
	if out, err := framework.KubectlAs(t, srcKubeconfig, "", "--server", "https://"+strings.TrimPrefix(clone.Status.ControlPlaneEndpoint, "https://"), "--insecure-skip-tls-verify", "get", "ns"); err == nil {
		t.Errorf("the source's kubeconfig is accepted by the clone:\n%s", out)
	} else {
		t.Logf("the source's kubeconfig at the clone: %s", strings.TrimSpace(out))
	}
	srcNodes, _ := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	cloneNodes, _ := ckube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	for _, cn := range cloneNodes.Items {
		for _, sn := range srcNodes.Items {
			if cn.Name == sn.Name {
				t.Errorf("the clone has the source's Node %s", sn.Name)
			}
		}
	}

	// A snapshot whose stored data changed is refused at admission, naming the checksum.
	framework.MustApply(t, fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantClusterSnapshot
metadata: {name: src-2, namespace: %s}
spec: {clusterRef: {name: src}}
`, ns))
	second := waitSnapshot(t, ns, "src-2", 2*time.Minute)
	data, err := os.ReadFile(second.Status.Location)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(second.Status.Location, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := framework.KubectlAs(t, framework.Plane.Kubeconfig, framework.LocalClusterManifest(ns, "bad", framework.PinnedVersion, bootstrap.OSTalos, 0)+"  restoreFrom: {name: src-2}\n", "apply", "-f", "-")
	if err == nil || !strings.Contains(out, "is invalid") || !strings.Contains(out, "spec.restoreFrom.name") || !strings.Contains(out, "does not match its checksum") {
		t.Errorf("a restore from a corrupted snapshot: %v\n%s", err, out)
	} else {
		t.Logf("a corrupted snapshot: %s", strings.TrimSpace(out))
	}
	framework.MustKubectl(t, "delete", "tcs", "src-2", "-n", ns, "--timeout=60s")

	for _, args := range [][]string{{"delete", "clusterrolebinding", "mallory"}, {"delete", "rolebinding", "mallory", "-n", "load"},
		{"delete", "serviceaccount", "ci", "-n", "load"}} {
		if out, err := framework.KubectlAs(t, srcKubeconfig, "", args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	// In place: the source, a second worker added since the snapshot and namespace app deleted,
	// is rolled back to the snapshot: app is back, and its Nodes are its two Machines' (the
	// snapshot holds one).
	framework.MustKubectl(t, "patch", "tc", "src", "-n", ns, "--type", "merge", "-p", `{"spec":{"workers":{"replicas":2}}}`)
	framework.WaitReady(t, ns, "src", 2, 4*time.Minute)
	nodesBefore := nodeNames(t, kube)
	deleteTenantNamespace(t, kube, "app")
	if out, err := framework.Kubectl(t, "patch", "tc", "src", "-n", ns, "--type", "merge", "-p", `{"spec":{"restoreFrom":{"name":"src-1"}}}`); err == nil || !strings.Contains(out, "spec.restoreFrom.confirm") {
		t.Errorf("an in-place restore without confirm: %v\n%s", err, out)
	}
	restoreInPlace(t, kube, ns, "src", "src-1", configMaps)
	if after := nodeNames(t, kube); len(nodesBefore) != 2 || strings.Join(after, ",") != strings.Join(nodesBefore, ",") {
		t.Errorf("Nodes after the in-place restore %v; the Machines' before it %v", after, nodesBefore)
	}
	if w, err := dyn.Resource(widgetGVR).Namespace("app").List(ctx, metav1.ListOptions{}); err != nil || len(w.Items) != objects {
		t.Errorf("widgets after the in-place restore: %v, %v", len(w.Items), err)
	}
	// Rights are the tenant's of now: what was taken back after the snapshot stays taken back.
	if _, err := kube.RbacV1().ClusterRoleBindings().Get(ctx, "mallory", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRoleBinding mallory after the in-place restore: %v (want NotFound: deleted after the snapshot)", err)
	}
	if _, err := kube.RbacV1().RoleBindings("load").Get(ctx, "mallory", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("RoleBinding load/mallory after the in-place restore: %v (want NotFound)", err)
	}
	if _, err := kube.CoreV1().ServiceAccounts("load").Get(ctx, "ci", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ServiceAccount load/ci after the in-place restore: %v (want NotFound)", err)
	}

	// Deleting the snapshot deletes its data.
	framework.MustKubectl(t, "delete", "tcs", "src-1", "-n", ns, "--timeout=60s")
	if _, err := os.Stat(snap.Status.Location); !os.IsNotExist(err) {
		t.Errorf("the snapshot's data after its delete: %v", err)
	}
}
