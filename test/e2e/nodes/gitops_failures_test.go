package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
	"github.com/butlerdotdev/butler-apiserver/test/gitserver"
)

// gitOpsNobodyAddr is an address the plane allows as gitOpsServerAddr is (plane_test.go) where
// nothing listens: a repository URL there is refused at the connection.
const gitOpsNobodyAddr = "10.250.255.254:9444"

// gitOpsFailures: three ways a synced repository fails, each by a spec change of the Team's
// admin: a path that does not exist, a credential the server refuses, a URL where nothing
// answers. GitOpsSynced says which (its reason, with Flux's words), while the cluster stays Ready
// and the tenant keeps what the last good revision applied: the ConfigMap unchanged (its
// resourceVersion), the Deployment unchanged (UID, generation, its pod available), and
// status.gitops at that revision, not in sync.
func gitOpsFailures(t *testing.T, ns, name string, tenant kubernetes.Interface, srv *gitserver.Server, revision string) {
	t.Helper()
	ctx := context.Background()
	cm, err := tenant.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, "greeting", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	web, err := tenant.AppsV1().Deployments(metav1.NamespaceDefault).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gitOpsSecret(t, ns, "git-auth-wrong", map[string][]byte{"username": []byte(srv.Username), "password": []byte("not-" + srv.Password), "ca.crt": srv.CA})
	good := fmt.Sprintf("https://%s/apps.git", gitOpsServerAddr)
	for _, c := range []struct {
		what, url, path, secret, reason, says string
	}{
		{"a path that does not exist", good, "./nope", "git-auth", "PathNotFound", "kustomization path not found"},
		{"a credential the server refuses", good, "./apps", "git-auth-wrong", "CredentialRejected", "authentication required"},
		{"a URL where nothing answers", fmt.Sprintf("https://%s/apps.git", gitOpsNobodyAddr), "./apps", "git-auth", "RepositoryUnreachable", "connection refused"},
	} {
		changed := time.Now()
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"addons": map[string]any{"gitops": map[string]any{"repository": map[string]any{
			"url": c.url, "branch": "main", "path": c.path, "secretRef": map[string]string{"name": c.secret}}}}}})
		framework.MustKubectlAs(t, framework.Plane.Kubeconfig, "", "--as", "alice", "-n", ns, "patch", "tc", name, "--type", "merge", "-p", string(patch))
		var cond *metav1.Condition
		tc := framework.WaitCluster(t, ns, name, 75*time.Second, c.what+": GitOpsSynced "+c.reason, func(tc *v1alpha1.TenantCluster) bool {
			cond = meta.FindStatusCondition(tc.Status.Conditions, "GitOpsSynced")
			return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == c.reason
		})
		t.Logf("%s: GitOpsSynced %s %s after the change: %s", c.what, c.reason, time.Since(changed).Round(100*time.Millisecond), cond.Message)
		if !strings.Contains(cond.Message, c.says) || strings.Contains(cond.Message, srv.Password) {
			t.Errorf("%s: the condition's message %q does not say %q (or holds the password)", c.what, cond.Message, c.says)
		}
		if g := tc.Status.Gitops; g == nil || g.Revision != revision || g.InSync || tc.Status.Phase != v1alpha1.TenantClusterReady {
			t.Errorf("%s: phase %s, status.gitops %+v; want Ready, at %s, not in sync", c.what, tc.Status.Phase, g, revision)
		}
		gitOpsTenantUnchanged(t, tenant, c.what, cm, web)
	}
}

// gitOpsTenantUnchanged: the repository's ConfigMap and Deployment are as they were.
func gitOpsTenantUnchanged(t *testing.T, tenant kubernetes.Interface, what string, cm *corev1.ConfigMap, web *appsv1.Deployment) {
	t.Helper()
	ctx := context.Background()
	nowCM, err := tenant.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, cm.Name, metav1.GetOptions{})
	if err != nil || nowCM.ResourceVersion != cm.ResourceVersion {
		t.Errorf("%s: the ConfigMap %s changed: %v, %v (was %v)", what, cm.Name, err, nowCM.Data, cm.Data)
	}
	nowWeb, err := tenant.AppsV1().Deployments(metav1.NamespaceDefault).Get(ctx, web.Name, metav1.GetOptions{})
	if err != nil || nowWeb.UID != web.UID || nowWeb.Generation != web.Generation || nowWeb.Status.AvailableReplicas != 1 {
		t.Errorf("%s: the Deployment %s changed: %v, generation %d (was %d), available %d", what, web.Name, err, nowWeb.Generation, web.Generation, nowWeb.Status.AvailableReplicas)
	}
}

// gitOpsSecret writes the Secret secret into the Team's namespace, as its namespace admin would,
// and grants get on it by name to the Team's admin alice (who names it in a cluster) and to
// butler-apiserver's ServiceAccount (which copies it into the tenant).
func gitOpsSecret(t *testing.T, ns, secret string, data map[string][]byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: ns}, Data: data}
	if _, err := framework.Plane.Kube.CoreV1().Secrets(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := "butler-gitops-" + secret
	framework.MustKubectl(t, "-n", ns, "create", "role", role, "--verb=get", "--resource=secrets", "--resource-name="+secret)
	framework.MustKubectl(t, "-n", ns, "create", "rolebinding", role, "--role="+role, "--user=alice", "--serviceaccount=butler-system:butler-apiserver")
}

// gitOpsDiagnose logs, when the test failed, what says why without the tenant at hand (it is
// deleted with the test): the TenantCluster's status, Flux's two objects' status, the pods of
// flux-system and default with their containers' states, those namespaces' events and the last
// lines of Flux's controllers' logs.
func gitOpsDiagnose(t *testing.T, ns, name string, tenant kubernetes.Interface, tenantDyn dynamic.Interface) {
	if !t.Failed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tc, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, name, metav1.GetOptions{})
	t.Logf("diagnosis: TenantCluster %s/%s: %v %s; status.gitops %+v", ns, name, err, framework.StatusOf(tc), func() any {
		if tc == nil {
			return nil
		}
		return tc.Status.Gitops
	}())
	for _, gvr := range []schema.GroupVersionResource{fluxGitRepositoryGVR, fluxKustomizationGVR} {
		obj, err := tenantDyn.Resource(gvr).Namespace("flux-system").Get(ctx, "butler-gitops", metav1.GetOptions{})
		var out []byte
		if err == nil {
			out, _ = json.Marshal(map[string]any{"generation": obj.GetGeneration(), "annotations": obj.GetAnnotations(), "status": obj.Object["status"]})
		}
		t.Logf("diagnosis: %s: %v %s", gvr.Resource, err, out)
	}
	for _, space := range []string{"flux-system", metav1.NamespaceDefault} {
		pods, err := tenant.CoreV1().Pods(space).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Logf("diagnosis: pods of %s: %v", space, err)
			continue
		}
		for _, p := range pods.Items {
			states, _ := json.Marshal(p.Status.ContainerStatuses)
			t.Logf("diagnosis: pod %s/%s on %q: %s %s", space, p.Name, p.Spec.NodeName, p.Status.Phase, states)
			if space != "flux-system" {
				continue
			}
			tail := int64(30)
			logs, err := tenant.CoreV1().Pods(space).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: &tail}).DoRaw(ctx)
			t.Logf("diagnosis: logs of %s/%s: %v\n%s", space, p.Name, err, logs)
		}
		events, err := tenant.CoreV1().Events(space).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, e := range events.Items {
			t.Logf("diagnosis: event %s: %s %s %s/%s: %s", space, e.LastTimestamp.Format(time.TimeOnly), e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
		}
	}
}
