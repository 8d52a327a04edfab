package gitops

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	"github.com/butlerdotdev/butler-apiserver/test/gitserver"
)

const (
	// fleet is the Team whose TenantClusters the repository declares, in its namespace.
	fleet = "gitops-fleet"
	// fluxNS is where the ManagementAddon flux installs Flux (the catalog's flux-management).
	fluxNS = "flux-system"
	// version is a Kubernetes version of the examples' ButlerConfig catalog.
	version = "v1.36.3"
)

var (
	kustomizationGVR = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	gitRepositoryGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
)

// clients are the platform admin's, on the one-node cluster.
type clients struct {
	kube   kubernetes.Interface
	butler versioned.Interface
	dyn    dynamic.Interface
}

// TestGitOpsManagement: Flux on the management cluster, installed by the ManagementAddon flux (the
// stage applies it early; Helm as the impersonated account flux-system/flux-installer), applies a
// Team's TenantClusters from Git as a ServiceAccount of the Team's namespace bound to
// butler-operator, through kube-apiserver and the APIService (server-side dry run, then
// server-side apply). Two clusters become Ready and the Kustomization, which waits on them with
// kstatus, is Ready at the commit; a commit scales one; a commit removing the other deletes it
// (prune); a commit adding an invalid one is refused with butler's field path, which the
// Kustomization's Ready condition says, and nothing of it is applied.
func TestGitOpsManagement(t *testing.T) {
	kubeconfig, addr := os.Getenv("BUTLER_GITOPS_KUBECONFIG"), os.Getenv("BUTLER_GITOPS_GIT_ADDR")
	if kubeconfig == "" || addr == "" {
		t.Skip("the one-node cluster's GitOps stage sets BUTLER_GITOPS_KUBECONFIG and BUTLER_GITOPS_GIT_ADDR (hack/lib/gitops.sh)")
	}
	c := connect(t, kubeconfig)
	started := time.Now()
	c.fluxInstalled(t, 5*time.Minute)
	t.Logf("ManagementAddon flux Installed, both controllers available, %s after the test started", since(started))

	srv, repo := serve(t, addr)
	head := commit(t, repo, map[string]string{"clusters/gf-a.yaml": cluster("gf-a", 1), "clusters/gf-b.yaml": cluster("gf-b", 1)}, "two clusters")
	c.team(t, srv)
	c.dryRunLeavesNothing(t, kubeconfig)
	c.sync(t, addr)
	t.Cleanup(func() { c.cleanUp(t) })
	t.Cleanup(func() {
		if t.Failed() {
			c.diagnose(t)
		}
	})
	applied := time.Now()
	c.waitApplied(t, head, 8*time.Minute)
	for _, name := range []string{"gf-a", "gf-b"} {
		c.clusterReady(t, name, 1)
	}
	t.Logf("both TenantClusters Ready and the Kustomization Ready (healthy) at %s %s after it was applied", short(head), since(applied))
	c.inventoryHolds(t, "gf-a", "gf-b")

	scaled := time.Now()
	head = commit(t, repo, map[string]string{"clusters/gf-a.yaml": cluster("gf-a", 2)}, "scale gf-a")
	c.waitApplied(t, head, 6*time.Minute)
	c.clusterReady(t, "gf-a", 2)
	t.Logf("gf-a scaled to 2 workers, Ready and healthy, %s after the commit", since(scaled))

	b, err := c.tenantCluster("gf-b")
	if err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	head = commit(t, repo, map[string]string{"clusters/gf-b.yaml": ""}, "remove gf-b")
	c.waitApplied(t, head, 3*time.Minute)
	c.waitGone(t, "gf-b", b.Status.TenantNamespace, 4*time.Minute)
	c.inventoryHolds(t, "gf-a")
	t.Logf("gf-b pruned: gone from the API and its tenant namespace %s deleted, %s after the commit", b.Status.TenantNamespace, since(removed))

	a, err := c.tenantCluster("gf-a")
	if err != nil {
		t.Fatal(err)
	}
	refused := time.Now()
	head = commit(t, repo, map[string]string{"clusters/gf-c.yaml": cluster("gf-c", -1)}, "an invalid cluster")
	c.waitRefused(t, head, "spec.workers.replicas", 2*time.Minute)
	t.Logf("the invalid commit refused with butler's field path in the Kustomization's Ready condition, %s after the commit", since(refused))
	if _, err := c.tenantCluster("gf-c"); !apierrors.IsNotFound(err) {
		t.Errorf("gf-c of the refused commit: %v, want NotFound", err)
	}
	if now, err := c.tenantCluster("gf-a"); err != nil ||
		now.Generation != a.Generation || now.Status.Phase != v1alpha1.TenantClusterReady {
		t.Errorf("gf-a changed with the refused commit: %v", err)
	}
}

func connect(t *testing.T, kubeconfig string) *clients {
	t.Helper()
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return &clients{kube: kubernetes.NewForConfigOrDie(config), butler: versioned.NewForConfigOrDie(config), dyn: dynamic.NewForConfigOrDie(config)}
}

// fluxInstalled waits for the ManagementAddon flux to be Installed and Flux's two Deployments
// to be available.
func (c *clients) fluxInstalled(t *testing.T, timeout time.Duration) {
	t.Helper()
	wait(t, timeout, "the ManagementAddon flux Installed and Flux's controllers available", func() (bool, string) {
		ma, err := c.butler.ButlerV1alpha1().ManagementAddons().Get(context.Background(), "flux", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if ma.Status.Phase != v1alpha1.TenantAddonInstalled {
			return false, fmt.Sprintf("phase %s: %s", ma.Status.Phase, ma.Status.Message)
		}
		for _, name := range []string{"source-controller", "kustomize-controller"} {
			d, err := c.kube.AppsV1().Deployments(fluxNS).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if !available(d) {
				return false, fmt.Sprintf("%s: %d of %d updated replicas available", name, d.Status.AvailableReplicas, d.Status.UpdatedReplicas)
			}
		}
		return true, ""
	})
}

func available(d *appsv1.Deployment) bool {
	return d.Status.ObservedGeneration == d.Generation && d.Status.UpdatedReplicas == *d.Spec.Replicas &&
		d.Status.AvailableReplicas == *d.Spec.Replicas && d.Status.Replicas == *d.Spec.Replicas
}

// serve starts the Git server on addr (the cluster's bridge address, which its Pods reach) with
// the repository fleet.
func serve(t *testing.T, addr string) (*gitserver.Server, *gitserver.Repository) {
	t.Helper()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := gitserver.New(t.TempDir(), []net.IP{net.ParseIP(host)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	repo, err := srv.Init("fleet", "main")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv.Serve(l)
	t.Cleanup(srv.Close)
	return srv, repo
}

func commit(t *testing.T, repo *gitserver.Repository, files map[string]string, message string) string {
	t.Helper()
	head, err := repo.Commit(files, message)
	if err != nil {
		t.Fatal(err)
	}
	return head
}

// cluster is a local TenantCluster of the Team with replicas Talos workers.
func cluster(name string, replicas int) string {
	return fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantCluster
metadata: {name: %s, namespace: %s}
spec:
  kubernetesVersion: %s
  providerConfigRef: {name: local}
  workers: {replicas: %d, machineTemplate: {os: {type: talos}}}
`, name, fleet, version, replicas)
}

// team makes what the platform (or the Team's namespace admin) writes for a Team's clusters in
// Git, as docs/concepts/gitops.md shows it: the Team, its local ProviderConfig, the applier
// account bound to butler-operator, the Git credential, the GitRepository and the Kustomization.
func (c *clients) team(t *testing.T, srv *gitserver.Server) {
	t.Helper()
	c.apply(t, fmt.Sprintf("apiVersion: butler.butlerlabs.dev/v1alpha1\nkind: Team\nmetadata: {name: %s}\nspec: {access: {}, resourceLimits: {maxClusters: 2}}\n", fleet))
	wait(t, time.Minute, "the Team's namespace", func() (bool, string) {
		_, err := c.kube.CoreV1().Namespaces().Get(context.Background(), fleet, metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	ca := strings.ReplaceAll(strings.TrimSpace(string(srv.CA)), "\n", "\n    ")
	c.apply(t, fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: ProviderConfig
metadata: {name: local, namespace: %[1]s}
spec: {provider: local}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: flux-applier, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: flux-applier, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: butler-operator}
subjects: [{kind: ServiceAccount, name: flux-applier, namespace: %[1]s}]
---
apiVersion: v1
kind: Secret
metadata: {name: git-auth, namespace: %[1]s}
stringData:
  username: %[2]s
  password: %[3]s
  ca.crt: |
    %[4]s
`, fleet, srv.Username, srv.Password, ca))
}

// sync makes the GitRepository and the Kustomization that applies its ./clusters as
// flux-applier, pruning what leaves Git and waiting (kstatus) for what it applied.
func (c *clients) sync(t *testing.T, addr string) {
	t.Helper()
	c.apply(t, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: fleet, namespace: %[1]s}
spec: {url: "https://%[2]s/fleet.git", ref: {branch: main}, interval: 5s, timeout: 20s, secretRef: {name: git-auth}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: fleet, namespace: %[1]s}
spec:
  sourceRef: {kind: GitRepository, name: fleet}
  path: ./clusters
  prune: true
  wait: true
  timeout: 8m
  interval: 10m
  retryInterval: 10s
  serviceAccountName: flux-applier
`, fleet, addr))
}

// dryRunLeavesNothing: a server-side apply with dryRun=All, as kustomize-controller makes before
// each apply, through kube-apiserver and the APIService as the applier account, answers with the
// object and stores nothing; three times, since a dry run that reserved the Team's limit (maxClusters
// 2, the clusters counted by admission) would refuse the second.
func (c *clients) dryRunLeavesNothing(t *testing.T, kubeconfig string) {
	t.Helper()
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	config.Impersonate.UserName = "system:serviceaccount:" + fleet + ":flux-applier"
	asApplier := dynamic.NewForConfigOrDie(config).Resource(v1alpha1.SchemeGroupVersion.WithResource("tenantclusters")).Namespace(fleet)
	var u unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(cluster("gf-dry", 1)), &u.Object); err != nil {
		t.Fatal(err)
	}
	data, _ := u.MarshalJSON()
	for range 3 {
		got, _, err := retried(func() (*unstructured.Unstructured, any, error) {
			o, err := asApplier.Patch(context.Background(), "gf-dry", types.ApplyPatchType, data,
				metav1.PatchOptions{FieldManager: "kustomize-controller", DryRun: []string{metav1.DryRunAll}})
			return o, nil, err
		})
		if err != nil {
			t.Fatalf("a server-side dry-run apply of a TenantCluster through the APIService: %v", err)
		}
		if got.GetName() != "gf-dry" || got.GetUID() == "" {
			t.Errorf("the dry run answered %s uid %q", got.GetName(), got.GetUID())
		}
	}
	if _, err := c.tenantCluster("gf-dry"); !apierrors.IsNotFound(err) {
		t.Errorf("after the dry runs, gf-dry: %v, want NotFound", err)
	}
}

// apply applies the manifests (several, separated by ---) server-side as the platform admin.
func (c *clients) apply(t *testing.T, manifests string) {
	t.Helper()
	mapper := map[string]schema.GroupVersionResource{
		"Team": {Group: "butler.butlerlabs.dev", Version: "v1alpha1", Resource: "teams"}, "ProviderConfig": {Group: "butler.butlerlabs.dev", Version: "v1alpha1", Resource: "providerconfigs"},
		"ServiceAccount": {Version: "v1", Resource: "serviceaccounts"}, "Secret": {Version: "v1", Resource: "secrets"},
		"RoleBinding":   {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
		"GitRepository": gitRepositoryGVR, "Kustomization": kustomizationGVR,
	}
	for _, doc := range strings.Split(manifests, "\n---\n") {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("%v:\n%s", err, doc)
		}
		gvr, ok := mapper[u.GetKind()]
		if !ok {
			t.Fatalf("no resource for %s", u.GetKind())
		}
		data, err := u.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var r dynamic.ResourceInterface = c.dyn.Resource(gvr)
		if u.GetNamespace() != "" {
			r = c.dyn.Resource(gvr).Namespace(u.GetNamespace())
		}
		if _, _, err := retried(func() (*unstructured.Unstructured, any, error) {
			o, err := r.Patch(context.Background(), u.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "test-gitops", Force: ptrTo(true)})
			return o, nil, err
		}); err != nil {
			t.Fatalf("applying %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// kustomization is the Team's Kustomization fleet, and its Ready condition.
func (c *clients) kustomization() (*unstructured.Unstructured, *metav1.Condition, error) {
	k, err := c.dyn.Resource(kustomizationGVR).Namespace(fleet).Get(context.Background(), "fleet", metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	conditions, _, _ := unstructured.NestedSlice(k.Object, "status", "conditions")
	for _, raw := range conditions {
		m, _ := raw.(map[string]any)
		if m["type"] == "Ready" {
			return k, &metav1.Condition{Type: "Ready", Status: metav1.ConditionStatus(fmt.Sprint(m["status"])),
				Reason: fmt.Sprint(m["reason"]), Message: fmt.Sprint(m["message"])}, nil
		}
	}
	return k, nil, nil
}

// waitApplied waits for the Kustomization to be Ready at the commit: applied, and (wait: true)
// every object it applied Current to kstatus, that is a Ready TenantCluster at its generation.
func (c *clients) waitApplied(t *testing.T, head string, timeout time.Duration) {
	t.Helper()
	revision := "main@sha1:" + head
	wait(t, timeout, "the Kustomization Ready at "+revision, func() (bool, string) {
		k, ready, err := c.kustomization()
		if err != nil || ready == nil {
			return false, fmt.Sprint("no Ready condition yet ", err)
		}
		applied, _, _ := unstructured.NestedString(k.Object, "status", "lastAppliedRevision")
		observed, _, _ := unstructured.NestedInt64(k.Object, "status", "observedGeneration")
		return ready.Status == metav1.ConditionTrue && applied == revision && observed == k.GetGeneration(),
			fmt.Sprintf("Ready=%s %s: %s (applied %s)", ready.Status, ready.Reason, ready.Message, applied)
	})
}

// waitRefused waits for the Kustomization to say, in its Ready condition, that the commit was
// not applied and why, naming path.
func (c *clients) waitRefused(t *testing.T, head, path string, timeout time.Duration) {
	t.Helper()
	revision := "main@sha1:" + head
	wait(t, timeout, "the Kustomization to refuse "+revision+" naming "+path, func() (bool, string) {
		k, ready, err := c.kustomization()
		if err != nil || ready == nil {
			return false, fmt.Sprint("no Ready condition yet ", err)
		}
		attempted, _, _ := unstructured.NestedString(k.Object, "status", "lastAttemptedRevision")
		return ready.Status == metav1.ConditionFalse && attempted == revision && strings.Contains(ready.Message, path),
			fmt.Sprintf("Ready=%s %s: %s (attempted %s)", ready.Status, ready.Reason, ready.Message, attempted)
	})
	if _, ready, _ := retried(c.kustomization); ready != nil {
		t.Logf("the Kustomization says: %s: %s", ready.Reason, ready.Message)
	}
}

// clusterReady checks the TenantCluster is Ready with its workers at its generation, and that
// Flux's field manager applied it.
func (c *clients) clusterReady(t *testing.T, name string, workers int32) {
	t.Helper()
	tc, err := c.tenantCluster(name)
	if err != nil {
		t.Fatal(err)
	}
	if tc.Status.Phase != v1alpha1.TenantClusterReady || !meta.IsStatusConditionTrue(tc.Status.Conditions, "Ready") ||
		tc.Status.ObservedGeneration != tc.Generation || tc.Status.ObservedState == nil || tc.Status.ObservedState.Workers.Ready != workers {
		t.Errorf("%s is not Ready with %d workers at generation %d: %s %+v", name, workers, tc.Generation, tc.Status.Phase, tc.Status.ObservedState)
	}
	var managers []string
	for _, f := range tc.ManagedFields {
		if f.Manager == "kustomize-controller" && f.Operation == metav1.ManagedFieldsOperationApply {
			return
		}
		managers = append(managers, f.Manager+"/"+string(f.Operation))
	}
	t.Errorf("%s was not applied by kustomize-controller (server-side apply): managers %v", name, managers)
}

// inventoryHolds checks the Kustomization's inventory is exactly these TenantClusters: what
// prune compares the next revision with.
func (c *clients) inventoryHolds(t *testing.T, names ...string) {
	t.Helper()
	k, _, err := retried(c.kustomization)
	if err != nil {
		t.Fatal(err)
	}
	entries, _, _ := unstructured.NestedSlice(k.Object, "status", "inventory", "entries")
	var got []string
	for _, e := range entries {
		m, _ := e.(map[string]any)
		got = append(got, fmt.Sprint(m["id"]))
	}
	var want []string
	for _, n := range names {
		want = append(want, fleet+"_"+n+"_butler.butlerlabs.dev_TenantCluster")
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the Kustomization's inventory: %v, want %v", got, want)
	}
}

// waitGone waits for the TenantCluster and its tenant namespace to be deleted.
func (c *clients) waitGone(t *testing.T, name, tenantNS string, timeout time.Duration) {
	t.Helper()
	wait(t, timeout, name+" and its tenant namespace deleted", func() (bool, string) {
		tc, err := c.tenantCluster(name)
		if !apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("%s: %v %s", name, err, phase(tc))
		}
		if tenantNS == "" {
			return true, ""
		}
		_, err = c.kube.CoreV1().Namespaces().Get(context.Background(), tenantNS, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("namespace %s: %v", tenantNS, err)
	})
}

func phase(tc *v1alpha1.TenantCluster) string {
	if tc == nil {
		return ""
	}
	return string(tc.Status.Phase)
}

// cleanUp deletes the Kustomization, which prunes what it applied (gf-a), then the rest; it
// waits for the clusters to go, so the stages after this one start without them.
func (c *clients) cleanUp(t *testing.T) {
	ctx := context.Background()
	_ = c.dyn.Resource(kustomizationGVR).Namespace(fleet).Delete(ctx, "fleet", metav1.DeleteOptions{})
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		list, err := c.butler.ButlerV1alpha1().TenantClusters(fleet).List(ctx, metav1.ListOptions{})
		if err == nil && len(list.Items) == 0 {
			break
		}
		if err == nil && time.Until(deadline) < 2*time.Minute {
			// Flux did not prune them on the Kustomization's delete (it failed or was gone).
			_ = c.butler.ButlerV1alpha1().TenantClusters(fleet).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		}
		time.Sleep(time.Second)
	}
	_ = c.dyn.Resource(gitRepositoryGVR).Namespace(fleet).Delete(ctx, "fleet", metav1.DeleteOptions{})
	_ = c.butler.ButlerV1alpha1().Teams().Delete(ctx, fleet, metav1.DeleteOptions{})
}

// diagnose logs what a failure needs: the Flux objects' conditions, the clusters' phases and the
// controllers' last log lines.
func (c *clients) diagnose(t *testing.T) {
	ctx := context.Background()
	for _, gvr := range []schema.GroupVersionResource{gitRepositoryGVR, kustomizationGVR} {
		if o, err := c.dyn.Resource(gvr).Namespace(fleet).Get(ctx, "fleet", metav1.GetOptions{}); err == nil {
			status, _ := yaml.Marshal(o.Object["status"])
			t.Logf("%s fleet status:\n%s", gvr.Resource, status)
		}
	}
	if list, err := c.butler.ButlerV1alpha1().TenantClusters(fleet).List(ctx, metav1.ListOptions{}); err == nil {
		for _, tc := range list.Items {
			t.Logf("TenantCluster %s: %s generation %d observed %d %+v", tc.Name, tc.Status.Phase, tc.Generation, tc.Status.ObservedGeneration, tc.Status.ObservedState)
		}
	}
	for _, app := range []string{"source-controller", "kustomize-controller"} {
		pods, err := c.kube.CoreV1().Pods(fluxNS).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			continue
		}
		for _, p := range pods.Items {
			tail := int64(20)
			out, _ := c.kube.CoreV1().Pods(fluxNS).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: &tail}).DoRaw(ctx)
			t.Logf("%s (%s) last lines:\n%s", p.Name, p.Status.Phase, out)
		}
	}
}

// tenantCluster reads the Team's TenantCluster (retried).
func (c *clients) tenantCluster(name string) (*v1alpha1.TenantCluster, error) {
	tc, _, err := retried(func() (*v1alpha1.TenantCluster, any, error) {
		tc, err := c.butler.ButlerV1alpha1().TenantClusters(fleet).Get(context.Background(), name, metav1.GetOptions{})
		return tc, nil, err
	})
	return tc, err
}

// retried calls f until it answers other than an error of the server's availability, for up
// to 30 s: the stage runs beside stage 5, which deletes one of butler-apiserver's two Pods.
func retried[A, B any](f func() (A, B, error)) (A, B, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		a, b, err := f()
		if err == nil || time.Now().After(deadline) || !(apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) ||
			apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err) || isConnection(err)) {
			return a, b, err
		}
		time.Sleep(time.Second)
	}
}

// isConnection is a failed connection or request to kube-apiserver (no status from it).
func isConnection(err error) bool {
	var status apierrors.APIStatus
	return !errors.As(err, &status)
}

// wait polls cond every second until it holds, failing the test with cond's last word at the
// timeout.
func wait(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, why := cond()
		if ok {
			return
		}
		if why != last {
			t.Logf("waiting for %s: %s", what, why)
			last = why
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %s", what, timeout, why)
		}
		time.Sleep(time.Second)
	}
}

func since(t time.Time) time.Duration { return time.Since(t).Round(100 * time.Millisecond) }
func short(sha string) string         { return sha[:min(12, len(sha))] }
func ptrTo[T any](v T) *T             { return &v }
