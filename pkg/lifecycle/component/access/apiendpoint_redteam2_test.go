package access

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"
)

// patched is svc with a strategic merge patch applied, as the kube-apiserver's patch handler
// makes the object admission sees (a JSON patch, a merge patch and a server-side apply end the
// same way: admission judges the object written, not the request's body).
func patched(t *testing.T, base *corev1.Service, patch string) *corev1.Service {
	t.Helper()
	original, err := json.Marshal(base)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := strategicpatch.StrategicMergePatch(original, []byte(patch), corev1.Service{})
	if err != nil {
		t.Fatal(err)
	}
	out := &corev1.Service{}
	if err := json.Unmarshal(merged, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Red team (s8): the update paths of spec.loadBalancerIP, as a Team operator and as a
// ServiceAccount he mints a token for: a strategic merge patch (kubectl patch, kubectl apply's
// client-side merge) or a server-side apply that adds it, moves it, or sets it beside a type
// change; text the kube-apiserver keeps as it is (it does not validate the field: blanks, a
// zone, any length); and on a Service of each type. All refused: the policy reads the object
// written, whatever the request's shape.
func TestRedteam2LoadBalancerIPThroughUpdatePaths(t *testing.T) {
	operator := &user.DefaultInfo{Name: "butler:otto", Groups: []string{GroupPrefix + "ops", user.AllAuthenticated}}
	bot := &user.DefaultInfo{Name: "system:serviceaccount:team:bot", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team", user.AllAuthenticated}}
	const says = "spec.loadBalancerIP"
	plain := svc("team", "web", corev1.ServiceTypeClusterIP, []string{"10.96.0.30"}, nil)
	lb := plain.DeepCopy()
	lb.Spec.Type = corev1.ServiceTypeLoadBalancer
	legacy := lb.DeepCopy() // set before the policy held
	legacy.Spec.LoadBalancerIP = "192.168.1.240"
	with := func(base *corev1.Service, address string) *corev1.Service {
		s := base.DeepCopy()
		s.Spec.LoadBalancerIP = address
		return s
	}
	externalName := svc("team", "web", corev1.ServiceTypeExternalName, nil, nil)
	externalName.Spec.ExternalName = "example.com"
	judgeServices(t, []serviceCase{
		{"a strategic merge patch that adds it", admission.Update, patched(t, lb, `{"spec":{"loadBalancerIP":"10.96.0.1"}}`), lb, operator, true, says},
		{"one that makes a ClusterIP Service a LoadBalancer at an address", admission.Update,
			patched(t, plain, `{"spec":{"type":"LoadBalancer","loadBalancerIP":"10.96.0.1"}}`), plain, operator, true, says},
		{"one that moves a legacy Service's", admission.Update, patched(t, legacy, `{"spec":{"loadBalancerIP":"10.96.0.1"}}`), legacy, operator, true, says},
		{"one that turns a legacy ClusterIP Service with it into a LoadBalancer", admission.Update,
			patched(t, with(plain, "192.168.1.240"), `{"spec":{"type":"LoadBalancer"}}`), with(plain, "192.168.1.240"), operator, true, says},
		{"one that adds a port to a legacy Service", admission.Update,
			patched(t, legacy, `{"spec":{"ports":[{"port":8443}]}}`), legacy, operator, true, says},
		{"a server-side apply by the operator's ServiceAccount", admission.Update, with(lb, "10.96.0.1"), lb, bot, true, says},
		{"blanks", admission.Create, with(lb, " "), nil, operator, true, says},
		{"an IPv6 address with a zone", admission.Create, with(lb, "fe80::1%eth0"), nil, operator, true, says},
		{"on an ExternalName Service", admission.Create, with(externalName, "10.96.0.1"), nil, operator, true, says},
		{"on a NodePort Service", admission.Create, with(svc("team", "web", corev1.ServiceTypeNodePort, nil, nil), "10.96.0.1"), nil, operator, true, says},

		{"a patch that removes a legacy Service's", admission.Update, patched(t, legacy, `{"spec":{"loadBalancerIP":null}}`), legacy, operator, false, ""},
		{"a patch of a legacy Service's labels", admission.Update, patched(t, legacy, `{"metadata":{"labels":{"app":"mine"}}}`), legacy, operator, false, ""},
	})
}

// Red team (s8): the rest of CVE-2020-8554 and of pointing a Service at any address is held by
// RBAC, not by the policy (it matches neither status subresources nor custom resources): a
// Team operator writes none of services/status (status.loadBalancer.ingress, which kube-proxy
// takes every Pod's traffic to), ingresses/status, Endpoints, EndpointSlices, nor Gateway API
// objects (a Gateway's spec.addresses asks its controller for an address), nor anything that
// would let him grant himself those (roles, bindings, impersonation).
func TestRedteam2OperatorsWriteNoStatusEndpointsOrGateways(t *testing.T) {
	writes := []string{"create", "update", "patch"}
	for _, r := range []rbacv1.PolicyRule{
		{Verbs: writes, APIGroups: []string{""}, Resources: []string{"services/status"}},
		{Verbs: writes, APIGroups: []string{networkingv1.GroupName}, Resources: []string{"ingresses/status"}},
		{Verbs: writes, APIGroups: []string{"extensions"}, Resources: []string{"ingresses/status"}},
		{Verbs: writes, APIGroups: []string{""}, Resources: []string{"endpoints"}},
		{Verbs: writes, APIGroups: []string{discoveryv1.GroupName}, Resources: []string{"endpointslices"}},
		{Verbs: writes, APIGroups: []string{"gateway.networking.k8s.io"}, Resources: []string{"gateways", "httproutes", "tcproutes"}},
		{Verbs: writes, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "rolebindings"}},
		{Verbs: []string{"impersonate"}, APIGroups: []string{""}, Resources: []string{"serviceaccounts", "users", "groups"}},
		{Verbs: []string{"update", "patch"}, APIGroups: []string{""}, Resources: []string{"namespaces"}},
	} {
		for _, verb := range r.Verbs {
			for _, res := range r.Resources {
				one := rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: r.APIGroups, Resources: []string{res}}
				if covered, _ := rbacvalidation.Covers(OperatorRules(), []rbacv1.PolicyRule{one}); covered {
					t.Errorf("an operator may %s %s in group %q", verb, res, r.APIGroups[0])
				}
			}
		}
	}
}
