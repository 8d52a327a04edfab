package addons

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	kube2 "helm.sh/helm/v3/pkg/kube"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// checkCase is a manifest the allow-list must refuse naming want, or allow when want is "".
type checkCase struct{ name, manifest, want string }

func runCheckCases(t *testing.T, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		problems, err := newPrivilegeCheck("apps", nil).manifest([]byte(tc.manifest))
		got := strings.Join(problems, "; ")
		if err != nil {
			got = err.Error()
		}
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

const rbacV1 = "apiVersion: rbac.authorization.k8s.io/v1\n"

// TestAttackAggregatedRole: a chart's ClusterRole labelled to aggregate into view, edit, admin
// or butler:operator has its rules merged into roles viewers and operators hold cluster-wide.
func TestAttackAggregatedRole(t *testing.T) {
	rules := "rules: [{apiGroups: [''], resources: [pods], verbs: [get]}]\n"
	var cases []checkCase
	for _, label := range []string{"rbac.authorization.k8s.io/aggregate-to-view", "rbac.authorization.k8s.io/aggregate-to-edit",
		"rbac.authorization.k8s.io/aggregate-to-admin", "butler.butlerlabs.dev/aggregate-to-operator"} {
		cases = append(cases, checkCase{label, rbacV1 + "kind: ClusterRole\nmetadata: {name: r, labels: {'" + label + "': 'true'}}\n" + rules,
			"ClusterRole r aggregates into other roles (label " + label + ")"})
	}
	cases = append(cases, checkCase{"plain label", rbacV1 + "kind: ClusterRole\nmetadata: {name: r, labels: {app: x}}\n" + rules, ""})
	runCheckCases(t, cases)
}

// TestAttackWildcardSubresource: RBAC matches "*/proxy" to nodes/proxy and "*/token" to
// serviceaccounts/token.
func TestAttackWildcardSubresource(t *testing.T) {
	runCheckCases(t, []checkCase{
		{"*/proxy", rbacV1 + "kind: ClusterRole\nmetadata: {name: r}\nrules: [{apiGroups: [''], resources: ['*/proxy'], verbs: [get]}]", "ClusterRole r grants nodes/proxy (as \"*/proxy\")"},
		{"*/token", rbacV1 + "kind: Role\nmetadata: {name: r}\nrules: [{apiGroups: [''], resources: ['*/token'], verbs: [create]}]", "Role apps/r grants serviceaccounts/token (as \"*/token\")"},
	})
}

// TestAttackClusterWideExec: a read-only role with pods/exec (get suffices to exec over a
// websocket on older tenants) or a proxy subresource, bound cluster-wide, reaches kube-system.
func TestAttackClusterWideExec(t *testing.T) {
	var cases []checkCase
	for _, res := range []string{"pods/exec", "pods/attach", "pods/portforward", "pods/proxy", "services/proxy", "*/exec"} {
		m := rbacV1 + "kind: ClusterRole\nmetadata: {name: r}\nrules: [{apiGroups: [''], resources: ['" + res + "'], verbs: [get]}]\n---\n" +
			rbacV1 + "kind: ClusterRoleBinding\nmetadata: {name: c}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: r}\n"
		cases = append(cases, checkCase{res, m, "ClusterRoleBinding c binds ClusterRole r in every namespace, and it grants "})
		ns := strings.Replace(m, "kind: ClusterRoleBinding", "kind: RoleBinding", 1)
		cases = append(cases, checkCase{res + " in a namespace", ns, ""})
	}
	runCheckCases(t, cases)
}

// TestAttackDeleteHook: Helm post-renders no hook, and a pre-delete hook is created only at
// uninstall: a ClusterRoleBinding to cluster-admin as a pre-delete hook is refused at install.
func TestAttackDeleteHook(t *testing.T) {
	hook := strings.Replace(clusterAdminBinding, "metadata: {name: crb}", "metadata: {name: crb, annotations: {helm.sh/hook: pre-delete}}", 1)
	e, req := attackEngine(t, []*chart.Chart{attackChart("0.1.0", map[string]string{
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n", "hook.yaml": hook}, nil)})
	_, err := e.Ensure(context.Background(), req, nil)
	wantRefused(t, err, "ClusterRoleBinding crb binds ClusterRole cluster-admin")
}

// TestAttackHookDeletesANamespace: a hook's before-hook-creation policy has Helm delete the
// object first: a hook named like Namespace flux-system deletes it, unless the gate checks deletes.
func TestAttackHookDeletesANamespace(t *testing.T) {
	kube := &kubefake.FailingKubeClient{PrintingKubeClient: kubefake.PrintingKubeClient{Out: io.Discard}}
	g := newGate(kube, newPrivilegeCheck("apps", nil), func(p []string) error { return errors.New(strings.Join(p, "; ")) })
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}}
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "kube-system"}}
	for _, obj := range []runtime.Object{ns, cm} {
		list := kube2.ResourceList{{Object: obj}}
		if _, errs := g.Delete(list); len(errs) == 0 {
			t.Errorf("Delete of %v: no error", obj.GetObjectKind().GroupVersionKind().Kind)
		}
		if _, errs := g.DeleteWithPropagationPolicy(list, metav1.DeletePropagationBackground); len(errs) == 0 {
			t.Errorf("DeleteWithPropagationPolicy of %v: no error", obj.GetObjectKind().GroupVersionKind().Kind)
		}
	}
	ok := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "apps"}}
	if _, errs := g.Delete(kube2.ResourceList{{Object: ok}}); len(errs) != 0 {
		t.Errorf("Delete of the chart's ConfigMap: %v", errs)
	}
}

// TestAttackEmptyList: an object of any kind ending in List was taken for a list and, without
// items, nothing of it was checked; kubectl and Helm expand only real lists.
func TestAttackEmptyList(t *testing.T) {
	runCheckCases(t, []checkCase{
		{"EvilList", "apiVersion: example.com/v1\nkind: EvilList\nmetadata: {name: x}\nspec: {}", "EvilList x (example.com/v1) is not a kind"},
		{"v1 List", "apiVersion: v1\nkind: List\nitems: []", ""},
		{"RoleBindingList", rbacV1 + "kind: RoleBindingList\nitems: [{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: b}, roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}}]",
			"RoleBinding apps/b binds ClusterRole admin, which the chart does not define"},
	})
}

// TestCaseVariantsOnlyInSchemaFields: keys of data, labels and annotations are the user's and
// case-sensitive (kube-apiserver keeps HTTP_PROXY and http_proxy apart); schema fields that
// differ only in case are still refused.
func TestCaseVariantsOnlyInSchemaFields(t *testing.T) {
	runCheckCases(t, []checkCase{
		{"proxy variables", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, labels: {A: p, a: q}, annotations: {B: p, b: q}}\ndata: {HTTP_PROXY: p, http_proxy: q}", ""},
		{"Secret stringData", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {K: p, k: q}", ""},
		{"roleref", rbacV1 + "kind: RoleBinding\nmetadata: {name: b}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}\nroleref: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}",
			`has both "roleRef" and "roleref"`},
		{"nested schema", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {serviceAccountName: a, serviceaccountname: b}", `spec has both`},
	})
}

// A Team's chart makes a Service with spec.externalIPs (CVE-2020-8554): kube-proxy then sends
// every Pod's traffic to that address, a protected namespace's (Flux fetching its sources) too,
// to the chart's Pods. The tenant's kube-apiserver runs without DenyServiceExternalIPs.
func TestAttackServiceExternalIPs(t *testing.T) {
	runCheckCases(t, []checkCase{
		{"externalIPs", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 443}], externalIPs: [140.82.121.4]}",
			"Service apps/s sets spec.externalIPs"},
		// A load-balancer controller announces the address and writes it to the status kube-proxy
		// reads: the same capture (TestAttackServiceLoadBalancerIPOfAnOperator of package access).
		{"loadBalancerIP", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 443}], type: LoadBalancer, loadBalancerIP: 10.96.0.1}",
			"Service apps/s sets spec.loadBalancerIP"},
		{"a plain Service", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 443}], type: LoadBalancer}", ""},
	})
}

// Red team (s7): a Team's chart is installed with the tenant's admin kubeconfig
// (kubernetes-admin, group kubeadm:cluster-admins), which the tenant's policy
// butler-api-endpoint exempts by name. So the chart's allow-list is the only check on what a
// Team operator (who writes the TenantAddon) gets through a chart, and it mirrors only the
// policy's externalIPs part: once a tenant admin has deleted default/kubernetes (the
// precondition of TestAttackAPIClusterIP, where kubectl is refused), a chart's Service takes the
// API's ClusterIP, in any text ParseIPSloppy reads as it, or is default/kubernetes itself with a
// selector (the kube-apiserver's controller keeps an existing Service's selector, and
// kube-controller-manager publishes the chart's Pods beside the API).
func TestAttackChartServiceTakesTheAPIEndpoint(t *testing.T) {
	svc := func(meta, spec string) string {
		return "apiVersion: v1\nkind: Service\nmetadata: " + meta + "\nspec: " + spec
	}
	runCheckCases(t, []checkCase{
		{"the API's ClusterIP", svc("{name: s}", "{ports: [{port: 443}], selector: {app: thief}, clusterIP: 10.96.0.1}"), "Service apps/s"},
		{"with leading zeros", svc("{name: s}", "{ports: [{port: 443}], selector: {app: thief}, clusterIP: 010.096.000.001}"), "Service apps/s"},
		{"as clusterIPs[0], IPv4-mapped", svc("{name: s}", "{ports: [{port: 443}], selector: {app: thief}, clusterIPs: ['::ffff:a60:1']}"), "Service apps/s"},
		{"default/kubernetes with a selector", svc("{name: kubernetes, namespace: default}",
			"{ports: [{name: https, port: 443, targetPort: 6443}], selector: {app: thief}}"), "Service default/kubernetes"},
	})
}

// Red team (s7): a Team's chart defines a Role granting more than edit (the allow-list refuses
// only named things: "*", escalate/bind/impersonate, writes of four API groups, Secrets,
// nodes/proxy, serviceaccounts/token) and binds it to a ServiceAccount of its own; Helm creates
// both as the tenant's admin, so RBAC's escalation check passes. The Team operator then mints
// that account's token (serviceaccounts/token is in OperatorRules) and holds what operators are
// said not to: services/status (status.loadBalancer.ingress of a LoadBalancer Service with a
// loadBalancerClass nobody serves: kube-proxy takes every Pod's traffic to any address, the
// other half of CVE-2020-8554, which butler-api-endpoint does not match: no services/status
// rule), the Namespace object itself (a RoleBinding grants update of its own namespace: label
// it pod-security.kubernetes.io/enforce=privileged, then a privileged DaemonSet), Endpoints and
// EndpointSlices (a Service pointed at any address, CVE-2021-25740).
func TestAttackChartRoleBeyondEdit(t *testing.T) {
	role := func(rule string) string {
		return rbacV1 + "kind: Role\nmetadata: {name: bot}\nrules: [" + rule + "]\n---\n" +
			rbacV1 + "kind: RoleBinding\nmetadata: {name: bot}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: bot}\n" +
			"subjects: [{kind: ServiceAccount, name: bot, namespace: apps}]\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: bot}\n"
	}
	runCheckCases(t, []checkCase{
		{"services/status", role("{apiGroups: [''], resources: [services/status], verbs: [patch, update]}"), "services/status"},
		{"its own Namespace", role("{apiGroups: [''], resources: [namespaces], verbs: [patch, update]}"), "namespaces"},
		{"EndpointSlices", role("{apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [create, update]}"), "endpointslices"},
		{"Endpoints", role("{apiGroups: [''], resources: [endpoints], verbs: [create, update]}"), "endpoints"},
		{"within edit", role("{apiGroups: [''], resources: [services, configmaps], verbs: [create, update]}"), ""},
	})
}

// TestChartRoleWritesOnlyWhatAnOperatorWrites: the writes of a chart's role are checked against
// access.OperatorRules by RBAC's own comparison (wildcard subresources, resource names, any verb
// but get, list and watch); reads stay free but for the guarded resources.
func TestChartRoleWritesOnlyWhatAnOperatorWrites(t *testing.T) {
	role := func(rule string) string { return rbacV1 + "kind: Role\nmetadata: {name: r}\nrules: [" + rule + "]" }
	runCheckCases(t, []checkCase{
		{"any status", role("{apiGroups: [apps], resources: ['*/status'], verbs: [update]}"), "Role apps/r grants update of */status.apps, beyond"},
		{"a custom resource", role("{apiGroups: [cert-manager.io], resources: [certificates], verbs: [create]}"), "certificates.cert-manager.io"},
		{"a verb of its own", role("{apiGroups: [''], resources: [configmaps], verbs: [use]}"), "grants use of configmaps"},
		{"by name", role("{apiGroups: [''], resources: [namespaces], resourceNames: [apps], verbs: [patch]}"), "grants patch of namespaces"},
		{"reads", role("{apiGroups: ['', discovery.k8s.io], resources: [namespaces, endpoints, endpointslices, services/status], verbs: [get, list, watch]}"), ""},
		{"edit's writes", role("{apiGroups: [apps], resources: [deployments, deployments/scale], verbs: [create, update, patch, delete, deletecollection]}"), ""},
		{"by name, within edit", role("{apiGroups: [''], resources: [configmaps], resourceNames: [c], verbs: [update]}"), ""},
	})
	svc := "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: "
	runCheckCases(t, []checkCase{
		{"another address", svc + "{clusterIP: 10.96.0.11}", "Service apps/s pins its ClusterIP (10.96.0.11)"},
		{"dual-stack, second", svc + "{clusterIPs: ['', 'fd00::1']}", "(fd00::1)"},
		{"headless", svc + "{clusterIP: None, clusterIPs: [None]}", ""},
		{"allocated", svc + "{clusterIP: '', ports: [{port: 80}]}", ""},
		{"kubernetes elsewhere", "apiVersion: v1\nkind: Service\nmetadata: {name: kubernetes}\nspec: {ports: [{port: 443}]}", ""},
	})
}
