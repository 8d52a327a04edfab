package access

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// policyPlugin is the policy as an admission.ValidationInterface, so that requests reach it the
// way the kube-apiserver's handlers build them.
type policyPlugin struct{ t *testing.T }

func (policyPlugin) Handles(admission.Operation) bool { return true }
func (p policyPlugin) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	policy, binding := attackPolicies()
	none := authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
		return authorizer.DecisionNoOpinion, "", nil
	})
	if slices.ContainsFunc(evaluate(p.t, policy, binding, a, none), func(d validating.PolicyDecision) bool { return d.Action == validating.ActionDeny }) {
		return errors.New("refused by " + APIEndpointPolicy)
	}
	return nil
}

// An operator (deletecollection on services, OperatorRules) deletes default/kubernetes with
// DELETE /api/v1/namespaces/default/services?fieldSelector=metadata.name=kubernetes. The
// kube-apiserver's deletecollection handler (apiserver endpoints/handlers/delete.go) builds the
// admission attributes with an empty name, and rest.AdmissionToValidateObjectDeleteFunc hands
// each item to admission under that empty name: a rule with resourceNames never matches it.
func TestAttackAPIEndpointDeleteCollection(t *testing.T) {
	operator := &user.DefaultInfo{Name: "butler:otto", Groups: []string{GroupPrefix + "ops", user.AllAuthenticated}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default"}}
	svc.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Service"))
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "services"}
	o := admission.NewObjectInterfacesFromScheme(scheme.Scheme)
	for _, c := range []struct{ name, requestName string }{
		{"delete default/kubernetes", "kubernetes"},
		{"deletecollection in default", ""},
	} {
		static := admission.NewAttributesRecord(nil, nil, svc.GroupVersionKind(), "default", c.requestName, gvr, "", admission.Delete,
			&metav1.DeleteOptions{}, false, operator)
		err := rest.AdmissionToValidateObjectDeleteFunc(policyPlugin{t}, static, o)(context.Background(), svc)
		if err == nil {
			t.Errorf("%s: the operator deleted the Service default/kubernetes", c.name)
		}
	}
}

// attackPolicies is the policy of a tenant whose service CIDR is 10.96.0.0/12 (the API's ClusterIP
// is apiClusterIP).
func attackPolicies() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	return APIEndpointPolicies(netip.MustParseAddr(apiClusterIP))
}

const apiClusterIP = "10.96.0.1"

// serviceCase is a Service write and whether the policy must refuse it.
type serviceCase struct {
	name     string
	op       admission.Operation
	obj, old *corev1.Service
	who      user.Info
	refused  bool
	says     string // in the refusal's message
}

// judgeServices runs each case through the policy as the kube-apiserver evaluates it; a tenant
// admin (butler:alice) may delete the policy.
func judgeServices(t *testing.T, cases []serviceCase) {
	t.Helper()
	policy, binding := attackPolicies()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			authz := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
				if a.GetUser().GetName() == "butler:alice" && a.GetVerb() == "delete" && a.GetResource() == "validatingadmissionpolicies" && a.GetName() == APIEndpointPolicy {
					return authorizer.DecisionAllow, "", nil
				}
				return authorizer.DecisionNoOpinion, "", nil
			})
			var obj, old runtime.Object
			if c.obj != nil {
				obj = c.obj
			}
			if c.old != nil {
				old = c.old
			}
			decisions := evaluate(t, policy, binding, attributes(t, c.op, obj, old, c.who), authz)
			refused := slices.ContainsFunc(decisions, func(d validating.PolicyDecision) bool { return d.Action == validating.ActionDeny })
			if refused != c.refused {
				t.Fatalf("refused %v, want %v: %+v", refused, c.refused, decisions)
			}
			if d := firstDenial(decisions); refused && (d.Reason != metav1.StatusReasonForbidden || !strings.Contains(d.Message, c.says)) {
				t.Errorf("want a 403 (Forbidden) saying %q, got %+v", c.says, d)
			}
		})
	}
}

// firstDenial is the first of the decisions that refuses (one per failed validation).
func firstDenial(decisions []validating.PolicyDecision) validating.PolicyDecision {
	i := slices.IndexFunc(decisions, func(d validating.PolicyDecision) bool { return d.Action == validating.ActionDeny })
	if i < 0 {
		return validating.PolicyDecision{}
	}
	return decisions[i]
}

// svc is a Service ns/name of type typ with those cluster IPs and external IPs.
func svc(ns, name string, typ corev1.ServiceType, clusterIPs, externalIPs []string) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{Type: typ, ClusterIPs: clusterIPs, ExternalIPs: externalIPs, Selector: map[string]string{"app": "thief"},
			Ports: []corev1.ServicePort{{Port: 443}}}}
	if len(clusterIPs) > 0 {
		s.Spec.ClusterIP = clusterIPs[0]
	}
	return s
}

// Once a tenant admin has deleted default/kubernetes (the tenant's kube-apiserver makes it again
// within seconds), a Team operator (edit on Services in default and his own namespaces) makes a
// Service at the API's ClusterIP, the first address of the service CIDR: the kube-apiserver can
// then not make kubernetes again (the address is taken), and every Pod that dials
// kubernetes.default reaches the operator's Pods with its service-account token. Whatever the
// text: the kube-apiserver reads a ClusterIP with netutils.ParseIPSloppy (leading zeros, an
// IPv4-mapped IPv6 form), and allocates by the address read. And a dynamic allocation that
// hands him the address is refused as well: validating admission sees the allocated ClusterIP.
func TestAttackAPIClusterIP(t *testing.T) {
	operator := &user.DefaultInfo{Name: "butler:otto", Groups: []string{GroupPrefix + "ops", user.AllAuthenticated}}
	apiServer := &user.DefaultInfo{Name: APIServerUser, Groups: []string{pki.MastersGroup, user.AllAuthenticated}}
	platform := &user.DefaultInfo{Name: pki.AdminUser, Groups: []string{pki.AdminsGroup, user.AllAuthenticated}}
	admin := &user.DefaultInfo{Name: "butler:alice", Groups: []string{GroupPrefix + "admins", user.AllAuthenticated}}
	const says = "10.96.0.1"
	ip := func(ips ...string) []string { return ips }
	externalName := svc("team", "web", corev1.ServiceTypeExternalName, nil, nil)
	judgeServices(t, []serviceCase{
		{"operator makes a Service at the API's ClusterIP in default", admission.Create, svc("default", "api", corev1.ServiceTypeClusterIP, ip(apiClusterIP), nil), nil, operator, true, says},
		{"in a namespace of his own", admission.Create, svc("team", "api", corev1.ServiceTypeClusterIP, ip(apiClusterIP), nil), nil, operator, true, says},
		{"a NodePort Service", admission.Create, svc("team", "api", corev1.ServiceTypeNodePort, ip(apiClusterIP), nil), nil, operator, true, says},
		{"a LoadBalancer Service", admission.Create, svc("team", "api", corev1.ServiceTypeLoadBalancer, ip(apiClusterIP), nil), nil, operator, true, says},
		{"written with leading zeros", admission.Create, svc("team", "api", corev1.ServiceTypeClusterIP, ip("010.096.000.001"), nil), nil, operator, true, says},
		{"written as IPv4-mapped IPv6", admission.Create, svc("team", "api", corev1.ServiceTypeClusterIP, ip("::FFFF:10.96.0.1"), nil), nil, operator, true, says},
		{"written as IPv4-mapped IPv6 in hex", admission.Create, svc("team", "api", corev1.ServiceTypeClusterIP, ip("0:0::ffff:a60:1"), nil), nil, operator, true, says},
		{"an ExternalName Service turned ClusterIP at the API's address", admission.Update, svc("team", "web", corev1.ServiceTypeClusterIP, ip(apiClusterIP), nil), externalName, operator, true, says},
		{"kubernetes again, as the operator", admission.Create, svc("default", "kubernetes", corev1.ServiceTypeClusterIP, ip(apiClusterIP), nil), nil, operator, true, "default/kubernetes"},

		{"operator makes a Service at another address", admission.Create, svc("team", "web", corev1.ServiceTypeClusterIP, ip("10.96.0.11"), nil), nil, operator, false, ""},
		{"at an address that ends as the API's", admission.Create, svc("team", "web", corev1.ServiceTypeClusterIP, ip("10.96.0.101"), nil), nil, operator, false, ""},
		{"a headless Service", admission.Create, svc("team", "web", corev1.ServiceTypeClusterIP, ip("None"), nil), nil, operator, false, ""},
		{"the kube-apiserver makes kubernetes", admission.Create, svc("default", "kubernetes", corev1.ServiceTypeClusterIP, ip(apiClusterIP), nil), nil, apiServer, false, ""},
		{"the platform makes a Service there", admission.Create, svc("kube-system", "x", corev1.ServiceTypeClusterIP, ip(apiClusterIP), nil), nil, platform, false, ""},
		{"a tenant admin does", admission.Create, svc("team", "x", corev1.ServiceTypeClusterIP, ip(apiClusterIP), nil), nil, admin, false, ""},
	})
}

// A Team operator sets spec.externalIPs on a Service of his (CVE-2020-8554): kube-proxy sends
// every Pod's traffic to those addresses, the API's ClusterIP or any address outside, to his
// Pods, a protected namespace's traffic too. By create, by an update that adds them, on any
// type. Removing them, or deleting such a Service, is let through; a tenant admin and the
// platform set them.
func TestAttackServiceExternalIPsOfAnOperator(t *testing.T) {
	operator := &user.DefaultInfo{Name: "butler:otto", Groups: []string{GroupPrefix + "ops", user.AllAuthenticated}}
	platform := &user.DefaultInfo{Name: pki.AdminUser, Groups: []string{pki.AdminsGroup, user.AllAuthenticated}}
	admin := &user.DefaultInfo{Name: "butler:alice", Groups: []string{GroupPrefix + "admins", user.AllAuthenticated}}
	const says = "spec.externalIPs"
	ip := func(ips ...string) []string { return ips }
	plain := svc("team", "web", corev1.ServiceTypeClusterIP, ip("10.96.0.20"), nil)
	outside := svc("team", "web", corev1.ServiceTypeClusterIP, ip("10.96.0.20"), ip("203.0.113.9"))
	adminsOwn := outside.DeepCopy()
	adminsOwn.Spec.Selector = map[string]string{"app": "admins-own"}
	finalized := outside.DeepCopy()
	finalized.Finalizers = []string{"service.kubernetes.io/load-balancer-cleanup"}
	judgeServices(t, []serviceCase{
		{"operator's Service with the API's ClusterIP as external IP", admission.Create, svc("team", "web", corev1.ServiceTypeClusterIP, ip("10.96.0.20"), ip(apiClusterIP)), nil, operator, true, says},
		{"with an address outside", admission.Create, outside, nil, operator, true, says},
		{"in default", admission.Create, svc("default", "web", corev1.ServiceTypeClusterIP, ip("10.96.0.20"), ip("203.0.113.9")), nil, operator, true, says},
		{"a NodePort Service", admission.Create, svc("team", "web", corev1.ServiceTypeNodePort, ip("10.96.0.20"), ip("203.0.113.9")), nil, operator, true, says},
		{"a LoadBalancer Service", admission.Create, svc("team", "web", corev1.ServiceTypeLoadBalancer, ip("10.96.0.20"), ip("203.0.113.9")), nil, operator, true, says},
		{"an update that adds them", admission.Update, outside, plain, operator, true, says},
		{"an update of a tenant admin's Service that has them (his Pods selected)", admission.Update, outside, adminsOwn, operator, true, says},

		{"an update that removes them", admission.Update, plain, outside, operator, false, ""},
		{"a controller's finalizer on a Service that has them", admission.Update, finalized, outside,
			&user.DefaultInfo{Name: "system:serviceaccount:kube-system:service-controller", Groups: []string{"system:serviceaccounts"}}, false, ""},
		{"a delete of such a Service", admission.Delete, nil, outside, operator, false, ""},
		{"a Service without", admission.Create, plain, nil, operator, false, ""},
		{"a tenant admin sets them", admission.Create, outside, nil, admin, false, ""},
		{"the platform sets them", admission.Create, outside, nil, platform, false, ""},
	})
}

// A Team operator sets spec.loadBalancerIP on a Service of his (deprecated, still read): a
// load-balancer controller (a cloud's service controller, MetalLB, kube-vip) asks for that
// address and, once it has it, writes it to status.loadBalancer.ingress, where kube-proxy sends
// every Pod's traffic to it to his Pods (the other half of CVE-2020-8554); outside, the
// controller announces it. Any address, the API's ClusterIP in any spelling, by create or by an
// update that adds or changes it, on any type, as himself or a ServiceAccount of his. Removing
// it, deleting such a Service, a controller's finalizer on it, and a tenant admin or the
// platform setting it pass.
func TestAttackServiceLoadBalancerIPOfAnOperator(t *testing.T) {
	operator := &user.DefaultInfo{Name: "butler:otto", Groups: []string{GroupPrefix + "ops", user.AllAuthenticated}}
	bot := &user.DefaultInfo{Name: "system:serviceaccount:team:bot", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team", user.AllAuthenticated}}
	platform := &user.DefaultInfo{Name: pki.AdminUser, Groups: []string{pki.AdminsGroup, user.AllAuthenticated}}
	admin := &user.DefaultInfo{Name: "butler:alice", Groups: []string{GroupPrefix + "admins", user.AllAuthenticated}}
	const says = "spec.loadBalancerIP"
	lb := func(typ corev1.ServiceType, address string) *corev1.Service {
		s := svc("team", "lb", typ, []string{"10.96.0.30"}, nil)
		s.Spec.LoadBalancerIP = address
		return s
	}
	plain := lb(corev1.ServiceTypeLoadBalancer, "")
	pinned := lb(corev1.ServiceTypeLoadBalancer, "192.168.1.240")
	moved := lb(corev1.ServiceTypeLoadBalancer, "192.168.1.241")
	adminsOwn := pinned.DeepCopy()
	adminsOwn.Spec.Selector = map[string]string{"app": "admins-own"}
	relabelled := pinned.DeepCopy()
	relabelled.Labels = map[string]string{"app": "mine"}
	finalized := pinned.DeepCopy()
	finalized.Finalizers = []string{"service.kubernetes.io/load-balancer-cleanup"}
	judgeServices(t, []serviceCase{
		{"operator's LoadBalancer at the API's ClusterIP", admission.Create, lb(corev1.ServiceTypeLoadBalancer, apiClusterIP), nil, operator, true, says},
		{"at the API's ClusterIP with leading zeros", admission.Create, lb(corev1.ServiceTypeLoadBalancer, "010.096.000.001"), nil, operator, true, says},
		{"at the API's ClusterIP, IPv4-mapped", admission.Create, lb(corev1.ServiceTypeLoadBalancer, "::ffff:a60:1"), nil, operator, true, says},
		{"at an address of the load balancer's pool", admission.Create, pinned, nil, operator, true, says},
		{"at an address outside", admission.Create, lb(corev1.ServiceTypeLoadBalancer, "203.0.113.9"), nil, operator, true, says},
		{"on a ClusterIP Service", admission.Create, lb(corev1.ServiceTypeClusterIP, "203.0.113.9"), nil, operator, true, says},
		{"an update that adds it", admission.Update, pinned, plain, operator, true, says},
		{"an update that moves it", admission.Update, moved, pinned, operator, true, says},
		{"an update of a tenant admin's Service that has it (his Pods selected)", admission.Update, pinned, adminsOwn, operator, true, says},
		{"the operator's ServiceAccount sets it", admission.Create, pinned, nil, bot, true, says},

		{"an update that removes it", admission.Update, plain, pinned, operator, false, ""},
		{"a metadata update of a Service that has it", admission.Update, relabelled, pinned, operator, false, ""},
		{"a controller's finalizer on a Service that has it", admission.Update, finalized, pinned,
			&user.DefaultInfo{Name: "system:serviceaccount:kube-system:service-controller", Groups: []string{"system:serviceaccounts"}}, false, ""},
		{"a delete of such a Service", admission.Delete, nil, pinned, operator, false, ""},
		{"a LoadBalancer without it", admission.Create, plain, nil, operator, false, ""},
		{"a tenant admin sets it", admission.Create, pinned, nil, admin, false, ""},
		{"the platform sets it", admission.Create, pinned, nil, platform, false, ""},
	})
}

// Red team (s7): other spellings, identities and shapes of the attacks above, as an operator and
// as a ServiceAccount an operator mints a token for (serviceaccounts/token is in OperatorRules).
// All refused; the admitted ones are recorded as what the policy leaves (see each comment).
func TestRedteamVariantsOfTheOperatorsAttacks(t *testing.T) {
	operator := &user.DefaultInfo{Name: "butler:otto", Groups: []string{GroupPrefix + "ops", user.AllAuthenticated}}
	bot := &user.DefaultInfo{Name: "system:serviceaccount:team:bot", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team", user.AllAuthenticated}}
	ip := func(ips ...string) []string { return ips }
	dual := svc("team", "api", corev1.ServiceTypeClusterIP, ip("fd00::a", apiClusterIP), nil)
	dual.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
	legacy := svc("team", "web", corev1.ServiceTypeClusterIP, ip("10.96.0.20"), ip("203.0.113.9")) // made before e52fda9
	relabelled := legacy.DeepCopy()
	relabelled.Labels = map[string]string{"app": "mine"}
	toLB := legacy.DeepCopy()
	toLB.Spec.Type = corev1.ServiceTypeLoadBalancer
	lbIP := svc("team", "lb", corev1.ServiceTypeLoadBalancer, ip("10.96.0.30"), nil)
	lbIP.Spec.LoadBalancerIP = apiClusterIP
	toAPI := svc("team", "api", corev1.ServiceTypeExternalName, nil, nil)
	toAPI.Spec.ExternalName = "kubernetes.default.svc.cluster.local"
	judgeServices(t, []serviceCase{
		{"dual-stack, the API's address as clusterIPs[1]", admission.Create, dual, nil, operator, true, apiClusterIP},
		{"eight groups, upper case, leading zeros", admission.Create, svc("team", "api", corev1.ServiceTypeClusterIP, ip("0000:0000:0000:0000:0000:FFFF:0A60:0001"), nil), nil, operator, true, apiClusterIP},
		{"IPv4-mapped with a zero-padded tail", admission.Create, svc("team", "api", corev1.ServiceTypeClusterIP, ip("0::0:ffff:010.096.0.01"), nil), nil, operator, true, apiClusterIP},
		{"the operator's ServiceAccount at the API's ClusterIP", admission.Create, svc("default", "api", corev1.ServiceTypeClusterIP, ip(apiClusterIP), nil), nil, bot, true, apiClusterIP},
		{"the operator's ServiceAccount sets externalIPs", admission.Create, svc("team", "web", corev1.ServiceTypeClusterIP, ip("10.96.0.20"), ip(apiClusterIP)), nil, bot, true, "spec.externalIPs"},
		{"a type change of a Service that has them", admission.Update, toLB, legacy, operator, true, "spec.externalIPs"},
		{"the operator's ServiceAccount adds a selector to default/kubernetes", admission.Update,
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "thief"}}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default"}}, bot, true, "default/kubernetes"},

		// Admitted by design (b02172f): a Service that already has externalIPs (made before the
		// policy, in its loading delay, or restored from an older snapshot) keeps them and is
		// written by its operator as long as the spec stays; the policy judges writes only.
		{"a metadata update of an operator's Service that already has them", admission.Update, relabelled, legacy, operator, false, ""},
		// Refused since TestAttackServiceLoadBalancerIPOfAnOperator (admitted before: a
		// load-balancer controller writes it to the status kube-proxy reads).
		{"spec.loadBalancerIP at the API's ClusterIP", admission.Create, lbIP, nil, operator, true, "spec.loadBalancerIP"},
		// Admitted: an ExternalName is a DNS CNAME; kube-proxy captures no address for it.
		{"ExternalName to the API's name", admission.Create, toAPI, nil, operator, false, ""},
	})
}

// Red team (s7): ParseIPSloppy takes any number of leading zeros, and CEL's matches() costs in
// the text's length: past the runtime budget the evaluation is an error, which failurePolicy
// Fail turns into a refusal (not a 403 naming the policy, but no Service either).
func TestRedteamZeroPaddedPastTheCostBudget(t *testing.T) {
	operator := &user.DefaultInfo{Name: "butler:otto", Groups: []string{GroupPrefix + "ops", user.AllAuthenticated}}
	policy, binding := attackPolicies()
	padded := svc("team", "api", corev1.ServiceTypeClusterIP, []string{strings.Repeat("0", 200000) + apiClusterIP}, nil)
	decisions := evaluate(t, policy, binding, attributes(t, admission.Create, padded, nil, operator), authorizer.AuthorizerFunc(
		func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
			return authorizer.DecisionNoOpinion, "", nil
		}))
	if d := firstDenial(decisions); d.Action != validating.ActionDeny {
		t.Fatalf("a zero-padded API ClusterIP was admitted: %+v", decisions)
	}
}
