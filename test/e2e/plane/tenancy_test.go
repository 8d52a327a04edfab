package plane

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// providerConfigManifest is a local ProviderConfig with a scope and limits (YAML fragments).
func providerConfigManifest(ns, name, scope, limits string) string {
	return fmt.Sprintf("apiVersion: butler.butlerlabs.dev/v1alpha1\nkind: ProviderConfig\nmetadata:\n  name: %s\n  namespace: %s\n"+
		"spec:\n  provider: local\n%s%s", name, ns, scope, limits)
}

// TestTenancyProviderConfigUse: a Team's admin cannot point a TenantCluster at another Team's
// ProviderConfig (its credentials), nor at another Team through teamRef; a ProviderConfig the
// platform shares is usable, and its maxClustersPerTeam holds under parallel creates.
func TestTenancyProviderConfigUse(t *testing.T) {
	framework.LongestFirst(t, 10*time.Second)
	ctx := context.Background()
	team(t, framework.TeamManifest("tenancy-a", "", framework.TeamMember("tenancy-a-admin", "admin")))
	team(t, framework.TeamManifest("tenancy-b", "", framework.TeamMember("tenancy-b-admin", "admin")))
	platform := framework.Namespace(t, "tenancy-platform")
	// Team B's ProviderConfig, with its credentials in its namespace; one the platform shares
	// with every team, at most 3 clusters per team.
	framework.MustKubectl(t, "create", "secret", "generic", "b-cloud", "-n", "tenancy-b", "--from-literal=kubeconfig=secret-of-b")
	framework.MustApply(t, providerConfigManifest("tenancy-b", "b-cloud", "  scope: {type: team, teamRef: {name: tenancy-b}}\n",
		"  credentialsRef: {name: b-cloud, namespace: tenancy-b, key: kubeconfig}\n"))
	framework.MustApply(t, providerConfigManifest(platform, "shared", "  scope: {type: platform}\n", "  limits: {maxClustersPerTeam: 3}\n"))
	// One in B's namespace without spec.scope is shared with every Team (Butler's default): the
	// platform admin who writes it is told so, naming spec.scope.
	if out, err := framework.KubectlAs(t, framework.Plane.Kubeconfig, providerConfigManifest("tenancy-b", "b-unscoped", "", ""), "apply", "-f", "-"); err != nil ||
		!strings.Contains(out, "Warning: spec.scope: this ProviderConfig is in Team tenancy-b's namespace but its scope is platform") {
		t.Errorf("kubectl apply of a ProviderConfig without spec.scope in a Team's namespace: %v\n%s", err, out)
	}

	alice := clientset.NewForConfigOrDie(userConfig(t, "tenancy-a-admin")).ButlerV1alpha1().TenantClusters("tenancy-a")
	using := func(name, ns, pc string) *v1alpha1.TenantCluster {
		tc := newTenantCluster(name)
		tc.Namespace = "tenancy-a"
		tc.Spec.ProviderConfigRef = &v1alpha1.NamespacedObjectReference{Namespace: ns, Name: pc}
		return tc
	}

	// B's ProviderConfig: refused, naming the rule; the same words for one that does not exist.
	const rule = "a TenantCluster may use a ProviderConfig in its own namespace, or one whose spec.scope is platform or names the cluster's Team"
	for _, pc := range []string{"b-cloud", "no-such"} {
		_, err := alice.Create(ctx, using("steal-"+pc, "tenancy-b", pc), metav1.CreateOptions{})
		want := fmt.Sprintf(`ProviderConfig tenancy-b/%s does not exist or is not shared with namespace "tenancy-a": %s`, pc, rule)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("team A's admin creates a cluster on tenancy-b/%s: %v, want 403 saying %q", pc, err, want)
		}
	}
	// kubectl shows the same.
	manifest := strings.Replace(tenantCluster("tenancy-a", "steal-kubectl"), "name: harvester", "name: b-cloud\n    namespace: tenancy-b", 1)
	out, err := framework.KubectlAs(t, userKubeconfig(t, "tenancy-a-admin"), manifest, "apply", "-f", "-")
	if err == nil || !strings.Contains(out, "Forbidden") || !strings.Contains(out, rule) {
		t.Errorf("kubectl apply of a cluster on team B's ProviderConfig: %v\n%s", err, out)
	}
	// teamRef names the cluster's own Team in every multi-tenancy mode (the default is Disabled).
	viaTeam := newTenantCluster("steal-teamref")
	viaTeam.Spec.TeamRef = &v1alpha1.LocalObjectReference{Name: "tenancy-b"}
	if _, err := alice.Create(ctx, viaTeam, metav1.CreateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), `spec.teamRef.name: Invalid value: "tenancy-b": must be "tenancy-a"`) {
		t.Errorf("teamRef naming team B: %v, want 422 on spec.teamRef.name", err)
	}
	// Nothing was stored in either namespace, and nothing of the lifecycle names B's Secret.
	for _, ns := range []string{"tenancy-a", "tenancy-b"} {
		list, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 0 {
			t.Errorf("TenantClusters in %s after the refusals: %v %d", ns, err, len(list.Items))
		}
	}
	nss, err := framework.Plane.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: external.TenantClusterNamespaceLabel + "=tenancy-a"})
	if err != nil || len(nss.Items) != 0 {
		t.Errorf("tenant namespaces of tenancy-a's clusters: %v %d", err, len(nss.Items))
	}

	// The shared one: 3 of 16 parallel creates pass maxClustersPerTeam; B's count is its own.
	var ok, refused atomic.Int32
	var fns []func() error
	for i := range 16 {
		fns = append(fns, func() error {
			_, err := alice.Create(ctx, using(fmt.Sprint("shared-", i), platform, "shared"), metav1.CreateOptions{})
			switch {
			case err == nil:
				ok.Add(1)
			case apierrors.IsForbidden(err) && strings.Contains(err.Error(),
				`exceeds the limits of ProviderConfig tenancy-platform/shared for namespace "tenancy-a": maxClustersPerTeam is 3, in use 3, requested 1 (would be 4)`):
				refused.Add(1)
			default:
				t.Errorf("create shared-%d: %v", i, err)
			}
			return nil
		})
	}
	_ = parallel(16, fns)
	list, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters("tenancy-a").List(ctx, metav1.ListOptions{})
	if err != nil || ok.Load() != 3 || refused.Load() != 13 || len(list.Items) != 3 {
		t.Fatalf("16 parallel creates on a ProviderConfig with maxClustersPerTeam 3: %d created, %d refused, %d stored (%v)",
			ok.Load(), refused.Load(), len(list.Items), err)
	}
	t.Logf("16 parallel creates: %d created, %d refused", ok.Load(), refused.Load())
	bob := clientset.NewForConfigOrDie(userConfig(t, "tenancy-b-admin")).ButlerV1alpha1().TenantClusters("tenancy-b")
	theirs := using("shared-b", platform, "shared")
	theirs.Namespace = "tenancy-b"
	if _, err := bob.Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Errorf("team B's first cluster on the shared ProviderConfig: %v", err)
	}
	// Deleting one frees its place at once.
	if err := alice.Delete(ctx, list.Items[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Create(ctx, using("shared-again", platform, "shared"), metav1.CreateOptions{}); err != nil {
		t.Errorf("a create after a delete: %v", err)
	}
}

// TestTenancyAddonSources: a Team's operator installs only charts the platform lists (by
// repository and chart, not by name); a platform admin installs any.
func TestTenancyAddonSources(t *testing.T) {
	framework.LongestFirst(t, 5*time.Second)
	ctx := context.Background()
	team(t, framework.TeamManifest("tenancy-addons", "", framework.TeamMember("tenancy-addons-operator", "operator")))
	framework.MustApply(t, `apiVersion: butler.butlerlabs.dev/v1alpha1
kind: AddonDefinition
metadata: {name: tenancy-demo}
spec:
  displayName: Demo
  category: other
  chart: {repository: "https://charts.example.com/tenancy", name: demo, defaultVersion: 0.1.0}
`)
	t.Cleanup(func() { _, _ = framework.Kubectl(t, "delete", "addondefinition", "tenancy-demo", "--wait=false") })
	addon := func(name, repository string) *v1alpha1.TenantAddon {
		return &v1alpha1.TenantAddon{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenancy-addons"},
			Spec: v1alpha1.TenantAddonSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "none"}, Version: "0.1.0",
				Helm: &v1alpha1.HelmChartSpec{Repository: repository, Chart: "demo"}}}
	}
	operator := clientset.NewForConfigOrDie(userConfig(t, "tenancy-addons-operator")).ButlerV1alpha1().TenantAddons("tenancy-addons")
	_, err := operator.Create(ctx, addon("elsewhere", "https://evil.example.com/charts"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(),
		`spec.helm: chart "demo" from repository "https://evil.example.com/charts" is not in the platform's catalog`) {
		t.Errorf("an operator's chart from an unlisted repository: %v, want 403 naming the rule", err)
	}
	if _, err := operator.Create(ctx, addon("listed", "https://charts.example.com/tenancy"), metav1.CreateOptions{}); err != nil {
		t.Errorf("an operator's chart from the listed repository: %v", err)
	}
	admin := framework.Plane.Butler.ButlerV1alpha1().TenantAddons("tenancy-addons")
	if _, err := admin.Create(ctx, addon("by-platform", "https://evil.example.com/charts"), metav1.CreateOptions{}); err != nil {
		t.Errorf("a platform admin's chart from anywhere: %v", err)
	}
	for _, name := range []string{"listed", "by-platform"} {
		_ = admin.Delete(ctx, name, metav1.DeleteOptions{})
	}
}
