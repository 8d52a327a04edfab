package nodes

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
	"github.com/butlerdotdev/butler-apiserver/test/gitserver"
)

// gitOpsServerAddr is where TestGitOpsTenant's Git server listens: the address every real node
// holds on its own loopback (the last of the nodes' bridge network, 10.250.0.0/16, where each
// node serves its tenant's API to its pods), in each node's network namespace, since a pod
// reaches nothing of the host. Internal, so the plane of make test-realnode allows it by
// --fetch-allowed-internal (plane_test.go), the fetch policy's exception for tests.
const gitOpsServerAddr = "10.250.255.254:9443"

// gitOpsInterval is the cluster's spec.addons.gitops.repository.interval: the shortest allowed,
// so a commit is waited for 10 s rather than the default minute.
const gitOpsInterval = 10 * time.Second

var (
	fluxKustomizationGVR = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	fluxGitRepositoryGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
)

// TestGitOpsTenant is a Team's TenantCluster on a real node with spec.addons.gitops naming a
// private repository (HTTPS, basic authentication, a CA of its own in the credential) on a Git
// server of this machine (Debian's git http-backend). The cluster is Ready; Flux's
// source-controller and kustomize-controller (images built from their modules, imported into
// the node's containerd) run as Pods on the real node; the Kustomization is Ready at the
// repository's HEAD, whose ConfigMap and Deployment (the echo image) are in the tenant, and
// status.gitops says that revision, in sync; a new commit is applied within the GitRepository's
// interval (gitOpsInterval, the cluster's spec) and status.gitops then shows it. The credential is readable by no other Team's
// operator (in the Team's namespace, in the cluster's management namespace, in the tenant,
// which they cannot enter) nor by the Team's own operator (the Team's namespace, the tenant's
// protected flux-system), and no Secret of the management namespace holds it. Then the
// repository fails three ways, each said by GitOpsSynced with nothing else changing
// (gitOpsFailures).
func TestGitOpsTenant(t *testing.T) {
	realNodeRequirements(t)
	gitOpsRequirements(t)
	realNodeParallel(t)
	const teamA, teamB, name = "gitops-a", "gitops-b", "gt"
	started := time.Now()
	framework.MustApply(t, framework.TeamManifest(teamA, "", framework.TeamMember("alice", "admin"), framework.TeamMember("otto", "operator"))+"---\n"+
		framework.TeamManifest(teamB, "", framework.TeamMember("mallory", "operator")))
	t.Cleanup(func() { _, _ = framework.Kubectl(t, "delete", "team", teamA, teamB, "--wait=false") })
	framework.WaitTeamReady(t, teamA)
	framework.WaitTeamReady(t, teamB)

	srv, repo, head := gitOpsRepository(t)
	gitOpsCredential(t, teamA, srv)
	framework.MustApply(t, fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: ProviderConfig
metadata: {name: local, namespace: %s}
spec: {provider: local, local: {nodeType: real}}
`, teamA))
	// alice, the Team's admin, may get the credential: admission lets her name it.
	framework.MustKubectlAs(t, framework.Plane.Kubeconfig, framework.LocalClusterManifest(teamA, name, framework.PinnedVersion, bootstrap.OSTalos, 1)+fmt.Sprintf(`  addons:
    gitops:
      provider: fluxcd
      repository: {url: "https://%s/apps.git", branch: main, path: ./apps, secretRef: {name: git-auth}, interval: %s}
`, gitOpsServerAddr, gitOpsInterval), "--as", "alice", "apply", "-f", "-")
	t.Cleanup(func() { _, _ = framework.Kubectl(t, "delete", "tc", name, "-n", teamA, "--wait=false") })
	tc := framework.WaitReady(t, teamA, name, 1, 4*time.Minute)
	t.Logf("TenantCluster Ready with a real node %s after it was applied", time.Since(started).Round(100*time.Millisecond))

	kubeconfig := framework.TenantAdminKubeconfig(t, teamA, name)
	tenant, tenantDyn := gitOpsTenantClients(t, kubeconfig)
	t.Cleanup(func() { gitOpsDiagnose(t, teamA, name, tenant, tenantDyn) })
	nodes, err := tenant.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 1 {
		t.Fatalf("the tenant's nodes: %v %v", err, nodes)
	}
	node := nodes.Items[0].Name
	netns := realNodeNetns(t, realNodeMachine(t, tenant, node))
	srv.Serve(listenInNetns(t, netns, gitOpsServerAddr))
	netns.Close()
	t.Cleanup(srv.Close)

	revision := "main@sha1:" + head
	gitOpsWaitSynced(t, teamA, name, tenantDyn, revision, 4*time.Minute)
	t.Logf("Kustomization Ready at HEAD and status.gitops in sync %s after the cluster was applied", time.Since(started).Round(100*time.Millisecond))
	gitOpsFluxRunsOn(t, tenant, node)
	gitOpsWorkload(t, tenant, "hello")

	// A new commit: applied within the GitRepository's interval, then in status.gitops.
	head2, err := repo.Commit(map[string]string{"apps/configmap.yaml": gitOpsConfigMap("hello again")}, "second")
	if err != nil {
		t.Fatal(err)
	}
	committed := time.Now()
	gitOpsCredentialStaysTheTeams(t, teamA, name, tc.Status.TenantNamespace, srv.Password)
	framework.WaitFor(t, gitOpsInterval+75*time.Second, "the new commit's ConfigMap in the tenant", func() (bool, string) {
		cm, err := tenant.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(context.Background(), "greeting", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cm.Data["message"] == "hello again", fmt.Sprint(cm.Data)
	})
	applied := time.Since(committed)
	if applied > gitOpsInterval+15*time.Second {
		t.Errorf("the new commit was applied %s after it was pushed, beyond the interval of %s", applied, gitOpsInterval)
	}
	gitOpsWaitSynced(t, teamA, name, tenantDyn, "main@sha1:"+head2, gitOpsInterval+time.Minute)
	t.Logf("new commit applied in the tenant %s after the push, in status.gitops after %s",
		applied.Round(100*time.Millisecond), time.Since(committed).Round(100*time.Millisecond))
	gitOpsFailures(t, teamA, name, tenant, srv, "main@sha1:"+head2)

	cp, err := framework.DynamicClient(t).Resource(framework.TenantCPGVR).Namespace(tc.Status.TenantNamespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	framework.DeleteCluster(t, teamA, name, string(cp.GetUID()))
	if left := realNodeLeftoversOf(tc.Status.TenantNamespace); len(left) > 0 {
		t.Errorf("the deleted cluster's real node left:\n  %s", strings.Join(left, "\n  "))
	}
}

// gitOpsRequirements skips (fails under make test-realnode) without Flux's images or git.
func gitOpsRequirements(t *testing.T) {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("BUTLER_E2E_REALNODE") != "" {
		skip = t.Fatalf
	}
	root, _ := filepath.Abs("../../..")
	for _, f := range []string{"flux-source-controller.oci.tar", "flux-kustomize-controller.oci.tar"} {
		if _, err := os.Stat(filepath.Join(root, "_output/node-images", f)); err != nil {
			skip("%s is missing: hack/build-flux-images.sh builds Flux's images", f)
		}
	}
}

// gitOpsRepository serves the repository apps with its first commit: the ConfigMap greeting and
// the Deployment web in ./apps.
func gitOpsRepository(t *testing.T) (*gitserver.Server, *gitserver.Repository, string) {
	t.Helper()
	host, _, _ := net.SplitHostPort(gitOpsServerAddr)
	srv, err := gitserver.New(t.TempDir(), []net.IP{net.ParseIP(host)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	repo, err := srv.Init("apps", "main")
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Commit(map[string]string{
		"apps/configmap.yaml": gitOpsConfigMap("hello"),
		"apps/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: echo, image: "localhost/butler-echo:v1", imagePullPolicy: Never}
`}, "first")
	if err != nil {
		t.Fatal(err)
	}
	return srv, repo, head
}

func gitOpsConfigMap(message string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: greeting, namespace: default}\ndata: {message: %q}\n", message)
}

// gitOpsCredential writes the Secret git-auth, the server's credential and CA, into the Team's
// namespace, granted by name to alice and butler-apiserver (gitOpsSecret).
func gitOpsCredential(t *testing.T, ns string, srv *gitserver.Server) {
	t.Helper()
	gitOpsSecret(t, ns, "git-auth", map[string][]byte{"username": []byte(srv.Username), "password": []byte(srv.Password), "ca.crt": srv.CA})
}

func gitOpsTenantClients(t *testing.T, kubeconfig string) (kubernetes.Interface, dynamic.Interface) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg), dynamic.NewForConfigOrDie(cfg)
}

// gitOpsWaitSynced waits until the tenant's Kustomization is Ready at revision and the
// TenantCluster's status.gitops says that revision, in sync, with GitOpsSynced True.
func gitOpsWaitSynced(t *testing.T, ns, name string, tenant dynamic.Interface, revision string, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	framework.WaitFor(t, timeout, "the Kustomization Ready at "+revision, func() (bool, string) {
		k, err := tenant.Resource(fluxKustomizationGVR).Namespace("flux-system").Get(ctx, "butler-gitops", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		applied, _, _ := unstructured.NestedString(k.Object, "status", "lastAppliedRevision")
		ready := fluxReady(k)
		if applied != revision || ready == "" {
			src, _ := tenant.Resource(fluxGitRepositoryGVR).Namespace("flux-system").Get(ctx, "butler-gitops", metav1.GetOptions{})
			return false, fmt.Sprintf("Kustomization applied %q, Ready %q; GitRepository %v", applied, ready, statusOfObject(src))
		}
		return true, ""
	})
	framework.WaitCluster(t, ns, name, timeout, "status.gitops at "+revision, func(tc *v1alpha1.TenantCluster) bool {
		g := tc.Status.Gitops
		return g != nil && g.Revision == revision && g.InSync && meta.IsStatusConditionTrue(tc.Status.Conditions, "GitOpsSynced")
	})
}

// fluxReady is the message of a Flux object's Ready condition when it is True, else "".
func fluxReady(u *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		c, _ := c.(map[string]any)
		if c["type"] == "Ready" && c["status"] == "True" {
			return fmt.Sprint(c["message"])
		}
	}
	return ""
}

func statusOfObject(u *unstructured.Unstructured) any {
	if u == nil {
		return nil
	}
	return u.Object["status"]
}

// gitOpsFluxRunsOn: both of Flux's controllers run as Pods of flux-system on the real node.
func gitOpsFluxRunsOn(t *testing.T, tenant kubernetes.Interface, node string) {
	t.Helper()
	pods, err := tenant.CoreV1().Pods("flux-system").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	running := map[string]string{}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning {
			running[p.Labels["app"]] = p.Spec.NodeName
		}
	}
	for _, app := range []string{"source-controller", "kustomize-controller"} {
		if running[app] != node {
			t.Errorf("Flux's %s runs on %q, want a Pod on the real node %s (running: %v)", app, running[app], node, running)
		}
	}
}

// gitOpsWorkload: the repository's ConfigMap says message and its Deployment's pod runs.
func gitOpsWorkload(t *testing.T, tenant kubernetes.Interface, message string) {
	t.Helper()
	ctx := context.Background()
	cm, err := tenant.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, "greeting", metav1.GetOptions{})
	if err != nil || cm.Data["message"] != message {
		t.Errorf("the repository's ConfigMap in the tenant: %v %v", err, cm)
	}
	d, err := tenant.AppsV1().Deployments(metav1.NamespaceDefault).Get(ctx, "web", metav1.GetOptions{})
	if err != nil || d.Status.AvailableReplicas != 1 {
		t.Errorf("the repository's Deployment in the tenant: %v, status %+v", err, d.Status)
	}
}

// gitOpsCredentialStaysTheTeams: the Git credential is the Team's. Another Team's operator
// (mallory) reads it nowhere and enters no tenant of the Team; the Team's operator (otto) reads
// neither the Team's Secret nor its copy in the tenant's protected flux-system; no Secret of the
// cluster's management namespace holds the password.
func gitOpsCredentialStaysTheTeams(t *testing.T, teamA, name, tenantNS, password string) {
	t.Helper()
	refused := func(who string, args ...string) {
		t.Helper()
		out, err := framework.Kubectl(t, append([]string{"--as", who}, args...)...)
		if err == nil || !strings.Contains(out, "Forbidden") {
			t.Errorf("%s: kubectl %s: want Forbidden, got %v\n%s", who, strings.Join(args, " "), err, out)
		}
	}
	refused("mallory", "get", "secret", "git-auth", "-n", teamA)
	refused("mallory", "get", "secrets", "-n", tenantNS)
	refused("otto", "get", "secret", "git-auth", "-n", teamA)
	refused("otto", "get", "secrets", "-n", tenantNS)
	if _, _, out, err := framework.MintAs(t, teamA, name, "kubeconfig", "mallory"); err == nil || !strings.Contains(out, "Forbidden") {
		t.Errorf("mallory (another Team's operator) minted a kubeconfig of %s/%s: %v\n%s", teamA, name, err, out)
	}
	otto, _, out, err := framework.MintAs(t, teamA, name, "kubeconfig", "otto")
	if err != nil {
		t.Fatalf("otto minting: %v\n%s", err, out)
	}
	if out, err := framework.KubectlAs(t, otto, "", "get", "secret", "butler-gitops", "-n", "flux-system"); err == nil || !strings.Contains(out, "Forbidden") {
		t.Errorf("otto (the Team's operator) read the credential's copy in the tenant: %v\n%s", err, out)
	}
	secrets, err := framework.Plane.Kube.CoreV1().Secrets(tenantNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		for k, v := range s.Data {
			if strings.Contains(string(v), password) {
				t.Errorf("Secret %s/%s (%s) of the management namespace holds the Git password", s.Namespace, s.Name, k)
			}
		}
	}
}
