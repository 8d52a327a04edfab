package plane

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// butlerSA is butler-apiserver's identity in the management cluster (the local plane's client
// certificate carries the same name as the ServiceAccount of artifacts/deploy).
const butlerSA = "system:serviceaccount:butler-system:butler-apiserver"

// fixtureTenantNamespace makes the tenant namespace of a paused TenantCluster as the
// TenantCluster controller would: labelled with the cluster, with butler-apiserver's Secrets
// RoleBinding. Tests that write a cluster's status themselves keep its Secrets there.
func fixtureTenantNamespace(t *testing.T, clusterNS, cluster string) string {
	t.Helper()
	name := clusterNS + "-" + cluster + "-tenant"
	framework.MustApply(t, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
  labels: {%[2]s: %[3]s, %[4]s: %[5]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: butler-apiserver-secrets, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: butler-apiserver-secrets}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: %[6]q}
`, name, external.TenantClusterLabel, cluster, external.TenantClusterNamespaceLabel, clusterNS, butlerSA))
	t.Cleanup(func() { _, _ = framework.Kubectl(t, "delete", "namespace", name, "--wait=false") })
	return name
}

// canI asks kube-apiserver whether butler-apiserver's account may do something.
func canI(t *testing.T, args ...string) string {
	t.Helper()
	out, _ := framework.Kubectl(t, append([]string{"auth", "can-i", "--as", butlerSA}, args...)...)
	// The answer is the last line (kubectl may warn first, e.g. of a cluster-scoped resource).
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// TestButlerAPIServerRBAC: butler-apiserver's account reads Secrets only in butler-system and
// in the tenant namespaces it made, reads Leases only by a get of Steward's and its provider's
// names (nothing to list, watch or write, no other name), and the admission policies of
// artifacts/deploy/rbac.yaml keep it there even if its account is taken.
func TestButlerAPIServerRBAC(t *testing.T) {
	ctx := context.Background()
	plain := framework.Namespace(t, "e2e-rbac-not-butlers")
	type canICase struct {
		args []string
		want string
	}
	cases := []canICase{
		{[]string{"get", "secrets", "-n", "kube-system"}, "no"},
		{[]string{"get", "secrets", "-n", plain}, "no"},
		{[]string{"list", "secrets", "--all-namespaces"}, "no"},
		{[]string{"get", "secrets", "-n", "butler-system"}, "yes"},
		{[]string{"escalate", "clusterroles"}, "no"},
		{[]string{"bind", "clusterroles/cluster-admin"}, "no"},
		{[]string{"bind", "clusterroles/butler-admin"}, "yes"},
		{[]string{"create", "leases", "-n", "kube-system"}, "no"},
		// Any other Lease (a node's, a controller's) and any list or watch: refused.
		{[]string{"get", "leases/kube-controller-manager", "-n", "kube-system"}, "no"},
		{[]string{"get", "leases", "-n", plain}, "no"},
		{[]string{"list", "leases", "-n", plain}, "no"},
		{[]string{"list", "leases", "--all-namespaces"}, "no"},
		{[]string{"watch", "leases", "--all-namespaces"}, "no"},
	}
	// The two names, in any namespace (ButlerConfig names them after the install): a get only.
	for _, l := range external.ControllerLeases(external.StewardControlPlaneGVK.Kind) {
		cases = append(cases,
			canICase{[]string{"get", "leases/" + l.Name, "-n", plain}, "yes"},
			canICase{[]string{"update", "leases/" + l.Name, "-n", plain}, "no"},
			canICase{[]string{"delete", "leases/" + l.Name, "-n", plain}, "no"})
	}
	for _, c := range cases {
		if got := canI(t, c.args...); got != c.want {
			t.Errorf("kubectl auth can-i %s --as %s: %q, want %q", strings.Join(c.args, " "), butlerSA, got, c.want)
		}
	}

	// A tenant namespace the TenantCluster controller made: it binds the Secrets role there.
	ns := framework.Namespace(t, "e2e-rbac-tenant")
	creds := providerCredentials(t, ns, "aws")
	framework.MustApply(t, fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: ProviderConfig
metadata: {name: aws, namespace: %[1]s}
spec:
  provider: aws
  %[2]s
  aws: {region: eu-west-1}
---
apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantCluster
metadata: {name: rbac, namespace: %[1]s}
spec:
  kubernetesVersion: v1.36.3
  providerConfigRef: {name: aws}
  workers: {replicas: 1, machineTemplate: {os: {type: talos}}}
`, ns, creds))
	tc := framework.WaitCluster(t, ns, "rbac", 60*time.Second, "its tenant namespace", func(tc *v1alpha1.TenantCluster) bool {
		return tc.Status.TenantNamespace != "" && meta.FindStatusCondition(tc.Status.Conditions, "InfrastructureReady") != nil
	})
	if got := canI(t, "get", "secrets", "-n", tc.Status.TenantNamespace); got != "yes" {
		t.Errorf("butler-apiserver in its tenant namespace %s: can-i get secrets %q, want yes", tc.Status.TenantNamespace, got)
	}
	if got := canI(t, "get", "secrets", "-n", ns); got != "no" {
		t.Errorf("butler-apiserver in the cluster's own namespace %s: can-i get secrets %q, want no", ns, got)
	}
	if err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Delete(ctx, "rbac", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// What a taken account would try next, refused by the policies.
	as := func(args ...string) (string, error) { return framework.Kubectl(t, append(args, "--as", butlerSA)...) }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "rolebinding", "steal", "-n", "kube-system", "--clusterrole=butler-apiserver-secrets", "--user=" + butlerSA},
			"butler-apiserver-secrets may be bound only in butler-system and in tenant namespaces butler made"},
		{[]string{"label", "namespace", plain, external.TenantClusterLabel + "=x"},
			"butler-apiserver may not mark an existing namespace as one it made"},
		{[]string{"delete", "namespace", plain, "--wait=false"}, "butler-apiserver deletes only the namespaces it made"},
		{[]string{"create", "clusterrole", "steal", "--verb=get", "--resource=teams.butler.butlerlabs.dev"},
			"butler-apiserver writes only the Teams' reader roles"},
		{[]string{"create", "clusterrole", "butler-team-reader:steal", "--verb=get", "--resource=teams.butler.butlerlabs.dev"},
			"a Team's reader role grants reading one Team only"},
	} {
		out, err := as(c.args...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("kubectl %s --as %s: %v, want refused with %q\n%s", strings.Join(c.args, " "), butlerSA, err, c.want, out)
		}
	}
	if _, err := framework.Plane.Kube.RbacV1().RoleBindings("kube-system").Get(ctx, "steal", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused RoleBinding exists: %v", err)
	}
}

// TestManagementAddonsArePlatformOnly: a ManagementAddon installs into the management cluster
// itself, so no Team role may write one: not a Team's admin in the Team's namespace, not even a
// user a platform bound to the built-in admin role cluster-wide (the Team roles aggregate into
// it); butler-platform-addons, bound to nobody, grants them. butler-apiserver's account may
// impersonate no ServiceAccount while the chart lists none (the default, artifacts/deploy).
func TestManagementAddonsArePlatformOnly(t *testing.T) {
	ctx := context.Background()
	ns := framework.Namespace(t, "e2e-ma-team")
	framework.MustKubectl(t, "create", "rolebinding", "ns-admin", "-n", ns, "--clusterrole=admin", "--user=ma-ns-admin")
	framework.MustKubectl(t, "create", "clusterrolebinding", "e2e-ma-admin-everywhere", "--clusterrole=admin", "--user=ma-admin-everywhere")
	framework.MustKubectl(t, "create", "clusterrolebinding", "e2e-ma-platform-addons", "--clusterrole=butler-platform-addons", "--user=ma-platform")
	t.Cleanup(func() {
		_, _ = framework.Kubectl(t, "delete", "clusterrolebinding", "e2e-ma-admin-everywhere", "e2e-ma-platform-addons")
	})
	for _, c := range []struct {
		user string
		args []string
		want string
	}{
		{"ma-ns-admin", []string{"create", "managementaddons"}, "no"},
		{"ma-ns-admin", []string{"create", "tenantclusters", "-n", ns}, "yes"},
		{"ma-admin-everywhere", []string{"create", "managementaddons"}, "no"},
		{"ma-admin-everywhere", []string{"update", "managementaddons", "--subresource=status"}, "no"},
		{"ma-platform", []string{"create", "managementaddons"}, "yes"},
		{butlerSA, []string{"impersonate", "serviceaccounts/flux-installer", "-n", "butler-management-addons"}, "no"},
		{butlerSA, []string{"impersonate", "serviceaccounts", "-n", "kube-system"}, "no"},
	} {
		out, _ := framework.Kubectl(t, append([]string{"auth", "can-i", "--as", c.user}, c.args...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if got := strings.TrimSpace(lines[len(lines)-1]); got != c.want {
			t.Errorf("kubectl auth can-i %s --as %s: %q, want %q", strings.Join(c.args, " "), c.user, got, c.want)
		}
	}
	// The real request of a Team's namespace admin, through kube-apiserver: RBAC's 403.
	obj := newObject(gvrMA, "", "e2e-ma-by-a-team")
	cfg := userConfig(t, "ma-ns-admin")
	_, err := dynamic.NewForConfigOrDie(cfg).Resource(gvrMA).Create(ctx, obj, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `cannot create resource "managementaddons"`) {
		t.Errorf("a Team namespace admin's ManagementAddon: %v, want RBAC's 403", err)
	}
}
