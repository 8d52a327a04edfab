package plane

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/access"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// TestTeamKubeconfigs: kubeconfigs of a Team's local cluster are bound to who asked. Each
// member's certificate says only who they are (butler:<name>); the Team's bindings in the tenant
// give the role: a viewer mints only a read-only kubeconfig that can get pods and not create
// one; an operator creates a Deployment but no ClusterRoleBinding, and can neither read a Secret
// nor create a Pod in kube-system; an admin can all of it; someone outside the Team gets 403
// minting; whoami in the tenant names the asker; and a member removed from the Team loses access
// within seconds while their kubeconfig is still valid.
func TestTeamKubeconfigs(t *testing.T) {
	const team, name = "e2e-access", "shared"
	framework.MustApply(t, framework.TeamManifest(team, "", framework.TeamMember("alice", "admin"), framework.TeamMember("otto", "operator"), framework.TeamMember("vera", "viewer")))
	t.Cleanup(func() { _, _ = framework.Kubectl(t, "delete", "team", team, "--wait=false") })
	poll(t, 2*time.Minute, "the Team's namespace", func() bool {
		_, err := framework.Kubectl(t, "get", "namespace", team)
		return err == nil
	})
	localCluster(t, team, name, framework.PinnedVersion, bootstrap.OSTalos, 0)
	framework.WaitReady(t, team, name, 0, 3*time.Minute)

	// Minting: members by their role, outsiders not at all.
	if _, _, out, err := framework.MintAs(t, team, name, "kubeconfig", "mallory"); err == nil || !strings.Contains(out, "Forbidden") {
		t.Errorf("mallory (no member) minted a kubeconfig: %v\n%s", err, out)
	}
	if _, _, out, err := framework.MintAs(t, team, name, "viewerkubeconfig", "mallory"); err == nil || !strings.Contains(out, "Forbidden") {
		t.Errorf("mallory (no member) minted a read-only kubeconfig: %v\n%s", err, out)
	}
	if _, _, out, err := framework.MintAs(t, team, name, "kubeconfig", "vera"); err == nil || !strings.Contains(out, "Forbidden") {
		t.Errorf("vera (viewer) minted a full kubeconfig: %v\n%s", err, out)
	}
	kubeconfigs := map[string]string{}
	for user, sub := range map[string]string{"vera": "viewerkubeconfig", "otto": "kubeconfig", "alice": "kubeconfig"} {
		path, identity, out, err := framework.MintAs(t, team, name, sub, user)
		if err != nil {
			t.Fatalf("%s minting %s: %v\n%s", user, sub, err, out)
		}
		want := "butler:" + user
		if sub == "viewerkubeconfig" {
			want += ":readonly"
		}
		if identity != want {
			t.Errorf("%s's identity %q, want %q", user, identity, want)
		}
		// whoami in the tenant names the asker.
		if out, err := framework.KubectlAs(t, path, "", "auth", "whoami"); err != nil || !strings.Contains(out, want) {
			t.Errorf("%s: whoami in the tenant: %v\n%s", user, err, out)
		}
		kubeconfigs[user] = path
	}

	// A Pod needs its namespace's default ServiceAccount, which the tenant's
	// kube-controller-manager makes (admission refuses the Pod until then, as Forbidden too).
	poll(t, time.Minute, "the tenant's default ServiceAccounts", func() bool {
		_, err1 := framework.KubectlAs(t, kubeconfigs["alice"], "", "get", "serviceaccount", "default", "-n", "kube-system")
		_, err2 := framework.KubectlAs(t, kubeconfigs["alice"], "", "get", "serviceaccount", "default", "-n", "default")
		return err1 == nil && err2 == nil
	})
	pod := func(ns string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"probe-","namespace":%q},"spec":{"containers":[{"name":"c","image":"pause"}]}}`, ns)
	}
	crb := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"generateName":"probe-"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"kind":"User","name":"x","apiGroup":"rbac.authorization.k8s.io"}]}`
	type check struct {
		user    string
		args    []string
		stdin   string
		allowed bool
	}
	checks := []check{
		{"vera", []string{"get", "pods", "-A"}, "", true},
		{"vera", []string{"create", "-f", "-"}, pod("default"), false},
		{"otto", []string{"create", "deployment", "web", "--image=pause", "-n", "default"}, "", true},
		{"otto", []string{"create", "-f", "-"}, crb, false},
		{"otto", []string{"get", "secrets", "-n", "kube-system"}, "", false},
		{"otto", []string{"create", "-f", "-"}, pod("kube-system"), false},
		{"alice", []string{"create", "-f", "-"}, crb, true},
		{"alice", []string{"get", "secrets", "-n", "kube-system"}, "", true},
		{"alice", []string{"create", "-f", "-"}, pod("kube-system"), true},
	}
	for _, c := range checks {
		out, err := framework.KubectlAs(t, kubeconfigs[c.user], c.stdin, c.args...)
		switch {
		case c.allowed && err != nil:
			t.Errorf("%s: kubectl %s: want allowed, got %v\n%s", c.user, strings.Join(c.args, " "), err, out)
		// RBAC's refusal ("User ... cannot ..."), not admission's.
		case !c.allowed && (err == nil || !strings.Contains(out, "Forbidden") || !strings.Contains(out, "cannot")):
			t.Errorf("%s: kubectl %s: want Forbidden, got %v\n%s", c.user, strings.Join(c.args, " "), err, out)
		}
	}

	checkBreakGlass(t, team, name, "alice")
	apiServiceStaysTheAPIServers(t, team, name, kubeconfigs["alice"], kubeconfigs["otto"])
	operatorStaysOperator(t, team, name, kubeconfigs["alice"], kubeconfigs["otto"])

	// otto leaves the Team: his kubeconfig, valid for an hour, stops working within seconds.
	framework.MustApply(t, framework.TeamManifest(team, "", framework.TeamMember("alice", "admin"), framework.TeamMember("vera", "viewer")))
	removed := time.Now()
	poll(t, time.Minute, "otto's access to end", func() bool {
		out, err := framework.KubectlAs(t, kubeconfigs["otto"], "", "get", "deployments", "-n", "default")
		return err != nil && strings.Contains(out, "Forbidden")
	})
	t.Logf("otto lost access %s after his removal from the Team", time.Since(removed).Round(100*time.Millisecond))
	if out, err := framework.KubectlAs(t, kubeconfigs["alice"], "", "get", "deployments", "-n", "default"); err != nil {
		t.Errorf("alice after otto's removal: %v\n%s", err, out)
	}
	framework.MustKubectl(t, "delete", "tc", name, "-n", team, "--wait=false")
}

// operatorStaysOperator tries, as the Team operator otto, the ways from edit to cluster-admin in
// the tenant: impersonating a service account, reading the Secrets of a platform addon's
// namespace (Helm's release Secret at least), and exec or a Pod running as a privileged service
// account in a namespace a tenant admin marked protected. Each is refused by RBAC, while otto
// still runs a Deployment in a namespace of his own. The namespaces are made before a Team
// change, so the bindings are applied with them there.
func operatorStaysOperator(t *testing.T, team, name, alice, otto string) {
	repo := addonChartRepo(t, map[string][]string{"demo": {"0.1.0"}})
	addonDefinition(t, team+"-platform", repo, "demo", "defaults: {namespace: platform-addon, createNamespace: true}")
	framework.MustApply(t, fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantAddon
metadata: {name: platform, namespace: %s}
spec:
  clusterRef: {name: %s}
  addon: %s-platform
`, team, name, team))
	// alice's namespace with a cluster-admin service account, marked protected; one of otto's.
	framework.MustKubectlAs(t, alice, `apiVersion: v1
kind: Namespace
metadata: {name: guarded, labels: {`+external.ProtectedNamespaceLabel+`: "true"}}
---
apiVersion: v1
kind: Namespace
metadata: {name: workloads}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: powerful, namespace: guarded}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: guarded-powerful}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: powerful, namespace: guarded}]
`, "apply", "-f", "-")
	waitAddon(t, team, "platform", v1alpha1.TenantAddonInstalled, "chart demo 0.1.0", 2*time.Minute)
	// A new operator moves every operator binding: once walt may edit in workloads, the last
	// namespace in the order they are applied, the namespaces above have theirs.
	framework.MustApply(t, framework.TeamManifest(team, "", framework.TeamMember("alice", "admin"), framework.TeamMember("otto", "operator"), framework.TeamMember("vera", "viewer"), framework.TeamMember("walt", "operator")))
	poll(t, time.Minute, "the bindings of the new operator", func() bool {
		out, _ := framework.KubectlAs(t, alice, "", "auth", "can-i", "create", "deployments", "-n", "workloads", "--as", "butler:walt")
		return strings.TrimSpace(out) == "yes"
	})

	for _, q := range [][]string{
		{"impersonate", "serviceaccounts", "-n", "workloads"},
		{"impersonate", "serviceaccounts", "-n", "default"},
		{"get", "secrets", "-n", "platform-addon"},
		{"create", "pods", "-n", "platform-addon"},
		{"get", "secrets", "-n", "guarded"},
		{"create", "pods", "--subresource=exec", "-n", "guarded"},
		{"create", "serviceaccounts", "--subresource=token", "-n", "guarded"},
		{"patch", "namespaces/guarded"},
	} {
		// The answer is the last line: kubectl may print a warning before it (namespaces are not
		// namespaced).
		out, _ := framework.KubectlAs(t, otto, "", append([]string{"auth", "can-i"}, q...)...)
		if lines := strings.Split(strings.TrimSpace(out), "\n"); strings.TrimSpace(lines[len(lines)-1]) != "no" {
			t.Errorf("otto (operator): can-i %s: %s, want no", strings.Join(q, " "), strings.TrimSpace(out))
		}
	}
	podAs := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"as-powerful","namespace":"guarded"},"spec":{"serviceAccountName":"powerful","containers":[{"name":"c","image":"pause"}]}}`
	for what, args := range map[string][]string{
		"reads the platform addon's Secrets":           {"get", "secrets", "-n", "platform-addon"},
		"runs a Pod as a cluster-admin ServiceAccount": {"create", "-f", "-"},
		"removes the protected label":                  {"label", "namespace", "guarded", external.ProtectedNamespaceLabel + "-"},
	} {
		stdin := ""
		if args[0] == "create" {
			stdin = podAs
		}
		if out, err := framework.KubectlAs(t, otto, stdin, args...); err == nil || !strings.Contains(out, "Forbidden") {
			t.Errorf("otto (operator) %s: %v\n%s", what, err, out)
		}
	}
	// A privileged Pod with the node's root mounted reads every Pod's token on its node (a Flux
	// controller's is cluster-admin): the tenant enforces Pod Security baseline where operators
	// are bound.
	privileged := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"root","namespace":"workloads"},"spec":{"containers":[{"name":"c","image":"pause","securityContext":{"privileged":true},"volumeMounts":[{"name":"host","mountPath":"/host"}]}],"volumes":[{"name":"host","hostPath":{"path":"/"}}]}}`
	if out, err := framework.KubectlAs(t, otto, privileged, "create", "-f", "-"); err == nil || !strings.Contains(out, "violates PodSecurity") {
		t.Errorf("otto (operator) runs a privileged Pod with the node's root mounted in his own namespace: %v\n%s", err, out)
	}
	if out, err := framework.KubectlAs(t, otto, "", "create", "deployment", "web", "--image=pause", "-n", "workloads"); err != nil {
		t.Errorf("otto (operator) cannot create a Deployment in his own namespace: %v\n%s", err, out)
	}
	operatorRulesAreEdits(t, alice)
}

// apiServiceStaysTheAPIServers: the tenant's kubernetes Service and the EndpointSlices that
// publish its endpoint are its kube-apiserver's and the platform's. The Team operator otto may
// edit Services in default, but adding a selector to default/kubernetes (a share of the API's
// ClusterIP for Pods of his: every Pod's API access partly fails), deleting it, or making a
// Service with spec.externalIPs, spec.loadBalancerIP or MetalLB's address annotation is a 403 naming the policy; an account a tenant admin lets write EndpointSlices may not touch the API's.
// The platform's writer (the admin kubeconfig, as the local provider publishes
// kubernetes-butler-nodes for real nodes) may, and so may the admin alice; the Service she
// deletes is made again by the tenant's kube-apiserver.
func apiServiceStaysTheAPIServers(t *testing.T, team, name, alice, otto string) {
	start, policy := time.Now(), access.APIEndpointPolicy
	refused := func(what, out string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(out, "Forbidden") || !strings.Contains(out, policy) {
			t.Errorf("%s: want a 403 naming %s, got %v\n%s", what, policy, err, out)
		}
	}
	out, err := framework.KubectlAs(t, otto, "", "patch", "service", "kubernetes", "-n", "default", "--type=merge", "-p", `{"spec":{"selector":{"app":"api-thief"}}}`)
	refused("otto (operator) adds a selector to default/kubernetes", out, err)
	out, err = framework.KubectlAs(t, otto, "", "delete", "service", "kubernetes", "-n", "default", "--wait=false")
	refused("otto (operator) deletes default/kubernetes", out, err)
	// CVE-2020-8554: kube-proxy would send every Pod's traffic to 203.0.113.9 to his Service.
	out, err = framework.KubectlAs(t, otto, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"ip-thief","namespace":"default"},"spec":{"selector":{"app":"api-thief"},"ports":[{"port":443}],"externalIPs":["203.0.113.9"]}}`, "create", "-f", "-")
	refused("otto (operator) makes a Service with spec.externalIPs", out, err)
	if err != nil && !strings.Contains(out, "spec.externalIPs") {
		t.Errorf("otto's Service with spec.externalIPs: the refusal does not name spec.externalIPs:\n%s", out)
	}
	// A load-balancer controller would announce 10.96.0.1 and write it to the status kube-proxy reads.
	out, err = framework.KubectlAs(t, otto, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"lb-thief","namespace":"default"},"spec":{"type":"LoadBalancer","selector":{"app":"api-thief"},"ports":[{"port":443}],"loadBalancerIP":"10.96.0.1"}}`, "create", "-f", "-")
	refused("otto (operator) makes a Service with spec.loadBalancerIP", out, err)
	if err != nil && !strings.Contains(out, "spec.loadBalancerIP") {
		t.Errorf("otto's Service with spec.loadBalancerIP: the refusal does not name spec.loadBalancerIP:\n%s", out)
	}
	// The same asked of MetalLB (the TenantCluster's default load balancer) by its annotation.
	out, err = framework.KubectlAs(t, otto, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"lb-thief","namespace":"default","annotations":{"metallb.io/loadBalancerIPs":"10.96.0.1"}},"spec":{"type":"LoadBalancer","selector":{"app":"api-thief"},"ports":[{"port":443}]}}`, "create", "-f", "-")
	refused("otto (operator) makes a Service with metallb.io/loadBalancerIPs", out, err)
	if err != nil && !strings.Contains(out, "metallb.io/loadBalancerIPs") {
		t.Errorf("otto's Service with metallb.io/loadBalancerIPs: the refusal does not name the annotation:\n%s", out)
	}
	slice := func(name, service string) string {
		return fmt.Sprintf(`{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":%q,"namespace":"default","labels":{"kubernetes.io/service-name":%q}},"addressType":"IPv4","endpoints":[{"addresses":["10.250.255.254"]}],"ports":[{"name":"https","port":6443,"protocol":"TCP"}]}`, name, service)
	}
	// Operators write no EndpointSlice at all (edit has none): RBAC's refusal.
	if out, err := framework.KubectlAs(t, otto, slice("kubernetes-butler-nodes", "kubernetes"), "create", "-f", "-"); err == nil || !strings.Contains(out, "cannot") {
		t.Errorf("otto (operator) publishes an endpoint of the API: %v\n%s", err, out)
	}
	framework.MustKubectlAs(t, alice, `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: slicer, namespace: default}
rules: [{apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [create, update, patch, delete]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: slicer, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: slicer}
subjects: [{kind: ServiceAccount, name: slicer, namespace: default}]
`, "apply", "-f", "-")
	slicer := []string{"--as", "system:serviceaccount:default:slicer", "create", "-f", "-"}
	out, err = framework.KubectlAs(t, alice, slice("api-thief", "kubernetes"), slicer...)
	refused("an account that writes EndpointSlices publishes an endpoint of the API", out, err)
	if out, err := framework.KubectlAs(t, alice, slice("web", "web"), slicer...); err != nil {
		t.Errorf("an account that writes EndpointSlices publishes one of its own Service: %v\n%s", err, out)
	}
	platform := framework.TenantAdminKubeconfig(t, team, name)
	framework.MustKubectlAs(t, platform, slice("kubernetes-butler-nodes", "kubernetes"), "create", "-f", "-")
	framework.MustKubectlAs(t, platform, "", "delete", "endpointslice", "kubernetes-butler-nodes", "-n", "default")
	framework.MustKubectlAs(t, alice, "", "delete", "service", "kubernetes", "-n", "default")
	deleted := time.Now()
	poll(t, 30*time.Second, "the tenant's kube-apiserver to make default/kubernetes again", func() bool {
		_, err := framework.KubectlAs(t, alice, "", "get", "service", "kubernetes", "-n", "default")
		return err == nil
	})
	t.Logf("the API endpoint's checks: %s, of which %s for the tenant's kube-apiserver to make the Service again",
		time.Since(start).Round(100*time.Millisecond), time.Since(deleted).Round(100*time.Millisecond))
}

// operatorRulesAreEdits: butler:operator's own rules are this Kubernetes version's
// system:aggregate-to-edit without impersonate, no more and no less (a new version's edit
// changes fail here). butler:operator aggregates them and only the ClusterRoles labelled
// butler.butlerlabs.dev/aggregate-to-operator, not the other roles aggregated to edit (a CRD
// chart's, such as flux-edit), so edit's own rules are the whole of what it compares.
func operatorRulesAreEdits(t *testing.T, admin string) {
	var edit rbacv1.ClusterRole
	if err := json.Unmarshal([]byte(framework.MustKubectlAs(t, admin, "", "get", "clusterrole", "system:aggregate-to-edit", "-o", "json")), &edit); err != nil {
		t.Fatal(err)
	}
	flat := func(rules []rbacv1.PolicyRule) []string {
		var out []string
		for _, r := range rules {
			for _, v := range r.Verbs {
				for _, g := range r.APIGroups {
					for _, res := range r.Resources {
						if v != "impersonate" {
							out = append(out, v+" "+g+"/"+res)
						}
					}
				}
			}
		}
		sort.Strings(out)
		return slices.Compact(out)
	}
	if got, want := flat(access.OperatorRules()), flat(edit.Rules); !slices.Equal(got, want) {
		t.Errorf("butler:operator's rules\n%v\nare not system:aggregate-to-edit's without impersonate\n%v", got, want)
	}
}

// poll calls ok every 200ms until it says true, and fails the test after timeout.
func poll(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return ok(), nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s", what, timeout)
	}
}
