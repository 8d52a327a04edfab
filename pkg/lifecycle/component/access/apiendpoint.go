package access

import (
	"net/netip"
	"reflect"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// APIEndpointPolicy names the ValidatingAdmissionPolicy (and its binding) that keeps the tenant's
// API endpoint to those who publish it. Pods reach the tenant's API through the Service
// default/kubernetes and the EndpointSlices labelled as its own; operators may edit Services in
// default, so without it an operator could add a selector to that Service (kube-controller-manager
// would then publish the operator's Pods beside the API) or delete it, and every Pod's API access
// would partly fail: the whole tenant's, beyond what an operator's role is for.
const APIEndpointPolicy = "butler-api-endpoint"

// apiServiceName is the API's Service in default, and the name its EndpointSlices are labelled with.
const apiServiceName = "kubernetes"

// APIEndpointPolicies are the policy and its binding for a tenant whose API's ClusterIP (the
// first address of its service CIDR) is apiAddress. Refused with a 403 naming the policy:
//   - writes (create, update, delete) of the Service and Endpoints default/kubernetes, and of
//     EndpointSlices in default labelled kubernetes.io/service-name=kubernetes (before or after
//     the write);
//   - a Service in any namespace whose spec.clusterIP(s) is apiAddress, in any text the
//     kube-apiserver reads as it (addressForms): once a tenant admin deletes default/kubernetes,
//     a Service there would keep the kube-apiserver from making it again and take every Pod's
//     API traffic, tokens included. A dynamic allocation is judged too: validating admission
//     sees the ClusterIP allocated;
//   - a Service in any namespace with spec.externalIPs (CVE-2020-8554): kube-proxy sends every
//     Pod's traffic to those addresses, the API's ClusterIP or any address outside, to the
//     Service's Pods. Upstream's DenyServiceExternalIPs admission plugin would refuse the tenant's
//     admins too, and be one more flag each provider's kube-apiserver must carry; the policy
//     travels with the access step to every provider and leaves the feature to the admins;
//   - a Service in any namespace with spec.loadBalancerIP, any address: a load-balancer
//     controller (a cloud's, MetalLB, kube-vip) asks for it, announces it, and writes it to
//     status.loadBalancer.ingress, where kube-proxy takes every Pod's traffic to it (the other
//     half of CVE-2020-8554). Not only the API's address: which addresses a controller hands out
//     is its own pool's business, which the policy cannot see;
//   - a Service in any namespace with an annotation by which a load-balancer implementation is
//     asked for addresses (external.LoadBalancerAddressAnnotations: MetalLB's, kube-vip's,
//     Cilium's, ...), any value: the same request as spec.loadBalancerIP.
//
// Except by:
//   - the tenant's kube-apiserver (system:apiserver), which makes the Service and, where its
//     endpoint reconciler runs (Steward's tenants), writes its Endpoints and EndpointSlice;
//   - the platform: system:masters and the admin kubeconfig's group (kubeadm:cluster-admins),
//     which butler's controllers and the local provider use (the provider publishes the real nodes'
//     EndpointSlice kubernetes-butler-nodes with it). These go by name, not by RBAC, so that
//     nothing a tenant admin does to the tenant's RBAC makes the policy refuse the platform;
//   - whoever may delete this policy: the tenant's admins (cluster-admin: a Team's admins, the
//     platform's break-glass), who could remove it anyway. Holding them would keep nothing out.
//
// The rule is about the operator's role: butler:operator may not delete the policy, nor can any
// service account an operator runs Pods as, unless a tenant admin granted it that. Deleting a
// Service, an update that only removes its externalIPs, loadBalancerIP or address annotations, or
// one that leaves the spec (and those annotations) of a Service with them as it was, is not judged
// (outside default/kubernetes). A write that removes loadBalancerIP or an annotation and changes
// the spec is: the address stays assigned (MetalLB keeps it) and would be repointed.
func APIEndpointPolicies(apiAddress netip.Addr) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	fail, equivalent := admissionregistrationv1.Fail, admissionregistrationv1.Equivalent
	forbidden := metav1.StatusReasonForbidden
	write := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete}
	rule := func(group string, resources ...string) admissionregistrationv1.NamedRuleWithOperations {
		return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: write,
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: resources},
		}}
	}
	endpoint, address, externalIPs, lbIP, lbAsked := apiEndpointExpr(), apiAddressExpr(apiAddress), externalIPsExpr(), loadBalancerIPExpr(), loadBalancerAnnotationsExpr()
	mayDelete := `authorizer.group('admissionregistration.k8s.io').resource('validatingadmissionpolicies').name('` +
		APIEndpointPolicy + `').check('delete').allowed()`
	admins := " is written only by its kube-apiserver, the platform and the tenant's admins"
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: meta(APIEndpointPolicy, ""),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{},
				ObjectSelector:    &metav1.LabelSelector{},
				MatchPolicy:       &equivalent,
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
					// No resourceNames: a deletecollection reaches admission with an empty name
					// (each item under the collection's), so the name is the object's, below.
					rule("", "services", "endpoints"),
					rule(discoveryv1.GroupName, "endpointslices"),
				},
			},
			// A condition that is false lets the request through unjudged, whatever the others say:
			// the kube-apiserver's and the platform's writes never meet the authorizer.
			MatchConditions: []admissionregistrationv1.MatchCondition{
				{Name: "the-apis-endpoint-or-address-or-external-ips", Expression: `(` + endpoint + `) || (` + address + `) || (` + externalIPs + `) || (` + lbIP + `) || (` + lbAsked + `)`},
				{Name: "not-the-apiserver-or-the-platform", Expression: `request.userInfo.username != '` + APIServerUser + `' && ` +
					`!(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g == '` + pki.MastersGroup + `' || g == '` + pki.AdminsGroup + `'))`},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: `!(` + endpoint + `) || ` + mayDelete,
				Reason:     &forbidden,
				Message: "the tenant's API endpoint (Service and Endpoints default/kubernetes, EndpointSlices labelled " +
					discoveryv1.LabelServiceName + "=" + apiServiceName + ")" + admins,
			}, {
				Expression: `!(` + address + `) || ` + mayDelete,
				Reason:     &forbidden,
				Message:    "the tenant's API's ClusterIP " + apiAddress.String() + " (the Service default/kubernetes's)" + admins,
			}, {
				Expression: `!(` + externalIPs + `) || ` + mayDelete,
				Reason:     &forbidden,
				Message: "spec.externalIPs is set only by the platform and the tenant's admins: kube-proxy would send every Pod's traffic " +
					"to those addresses to this Service (CVE-2020-8554)",
			}, {
				Expression: `!(` + lbIP + `) || ` + mayDelete,
				Reason:     &forbidden,
				Message: "spec.loadBalancerIP is set only by the platform and the tenant's admins: a load-balancer controller would announce " +
					"that address for this Service, and kube-proxy send every Pod's traffic to it to this Service (CVE-2020-8554)",
			}, {
				Expression: `!(` + lbAsked + `) || ` + mayDelete,
				Reason:     &forbidden,
				Message: "the annotations asking a load balancer for addresses (" + strings.Join(external.LoadBalancerAddressAnnotations, ", ") +
					") are set only by the platform and the tenant's admins: as spec.loadBalancerIP, the address would be announced for this " +
					"Service and kube-proxy send every Pod's traffic to it to this Service (CVE-2020-8554)",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: meta(APIEndpointPolicy, ""),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        APIEndpointPolicy,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return policy, binding
}

// apiEndpointExpr is CEL that is true for a write of the API's endpoint: the Service or Endpoints
// default/kubernetes, or an EndpointSlice in default labelled as its own before or after.
func apiEndpointExpr() string {
	labelled := func(o string) string {
		return o + ` != null && has(` + o + `.metadata.labels) && '` + discoveryv1.LabelServiceName + `' in ` + o + `.metadata.labels && ` +
			o + `.metadata.labels['` + discoveryv1.LabelServiceName + `'] == '` + apiServiceName + `'`
	}
	return `request.namespace == '` + metav1.NamespaceDefault + `' && (request.resource.resource == 'endpointslices' ? (` +
		labelled("object") + `) || (` + labelled("oldObject") + `) : ` +
		`(object != null ? object.metadata.name : oldObject.metadata.name) == '` + apiServiceName + `')`
}

// externalIPsExpr is CEL that is true for a Service written with spec.externalIPs, unless the
// write leaves its spec as it was: a controller's finalizer or owner reference (a cloud's service
// controller, the garbage collector) on a tenant admin's Service routes no traffic.
func externalIPsExpr() string {
	return `request.resource.resource == 'services' && object != null && has(object.spec.externalIPs) && ` +
		`size(object.spec.externalIPs) > 0 && (oldObject == null || object.spec != oldObject.spec)`
}

// loadBalancerIPExpr is CEL that is true for a Service written with spec.loadBalancerIP, unless
// the write leaves its spec as it was (as externalIPsExpr), and for a write that removes it and
// changes any other field of the spec: a load-balancer controller (MetalLB) keeps the address it
// assigned once the Service stops asking, so that write repoints the address as if kept. The
// removal alone is not judged.
func loadBalancerIPExpr() string {
	var others []string
	for _, f := range serviceSpecFields() {
		if f != "loadBalancerIP" {
			others = append(others, `has(object.spec.`+f+`) != has(oldObject.spec.`+f+`) || has(object.spec.`+f+`) && object.spec.`+f+` != oldObject.spec.`+f)
		}
	}
	return `request.resource.resource == 'services' && object != null && (has(object.spec.loadBalancerIP) && ` +
		`object.spec.loadBalancerIP != '' && (oldObject == null || object.spec != oldObject.spec) || ` +
		`oldObject != null && has(oldObject.spec.loadBalancerIP) && oldObject.spec.loadBalancerIP != '' && (` + strings.Join(others, " || ") + `))`
}

// serviceSpecFields are the JSON names of a Service's spec fields as this build knows them: a
// field added upstream since is judged once the dependency is updated.
func serviceSpecFields() []string {
	t := reflect.TypeFor[corev1.ServiceSpec]()
	fields := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			fields = append(fields, name)
		}
	}
	return fields
}

// loadBalancerAnnotationsExpr is CEL that is true for a Service written with an annotation of
// external.LoadBalancerAddressAnnotations, unless the write leaves it and the spec as they were,
// and for a write that changes the spec of a Service that had one (removed or not, as
// loadBalancerIPExpr): an annotation is metadata, so a write that only adds one leaves the spec
// as it was. Removing one alone is not judged.
func loadBalancerAnnotationsExpr() string {
	keys := `['` + strings.Join(external.LoadBalancerAddressAnnotations, `', '`) + `']`
	in := func(o string) string {
		return `has(` + o + `.metadata.annotations) && k in ` + o + `.metadata.annotations`
	}
	return `request.resource.resource == 'services' && object != null && ` + keys + `.exists(k, ` +
		in("object") + ` && (oldObject == null || object.spec != oldObject.spec || !(` + in("oldObject") + `) || ` +
		`oldObject.metadata.annotations[k] != object.metadata.annotations[k]) || ` +
		`oldObject != null && ` + in("oldObject") + ` && object.spec != oldObject.spec)`
}

// apiAddressExpr is CEL that is true for a Service written with apiAddress as a ClusterIP.
func apiAddressExpr(apiAddress netip.Addr) string {
	forms := addressForms(apiAddress)
	return `request.resource.resource == 'services' && object != null && (` +
		`has(object.spec.clusterIPs) && object.spec.clusterIPs.exists(ip, ip.matches('` + forms + `')) || ` +
		`has(object.spec.clusterIP) && object.spec.clusterIP.matches('` + forms + `'))`
}

// APIServerUser is who a kube-apiserver's own requests are from (its loopback client).
const APIServerUser = "system:apiserver"
