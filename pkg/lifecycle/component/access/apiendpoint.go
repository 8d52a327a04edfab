package access

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// APIEndpointPolicies are the policy and its binding. Writes (create, update, delete) of the
// Service and Endpoints default/kubernetes, and of EndpointSlices in default labelled
// kubernetes.io/service-name=kubernetes (before or after the write), are refused with a 403 naming
// the policy, except:
//   - the tenant's kube-apiserver (system:apiserver), which makes the Service and, where its
//     endpoint reconciler runs (Steward's tenants), writes its Endpoints and EndpointSlice;
//   - the platform: system:masters and the admin kubeconfig's group (kubeadm:cluster-admins),
//     which the workers and the local provider use (the provider publishes the real nodes'
//     EndpointSlice kubernetes-butler-nodes with it). These go by name, not by RBAC, so that
//     nothing a tenant admin does to the tenant's RBAC makes the policy refuse the platform;
//   - whoever may delete this policy: the tenant's admins (cluster-admin: a Team's admins, the
//     platform's break-glass), who could remove it anyway. Holding them would keep nothing out.
//
// The rule is about the operator's role: butler:operator may not delete the policy, nor can any
// service account an operator runs Pods as, unless a tenant admin granted it that.
func APIEndpointPolicies() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	fail, equivalent := admissionregistrationv1.Fail, admissionregistrationv1.Equivalent
	forbidden := metav1.StatusReasonForbidden
	write := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete}
	rule := func(group string, names []string, resources ...string) admissionregistrationv1.NamedRuleWithOperations {
		return admissionregistrationv1.NamedRuleWithOperations{ResourceNames: names, RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: write,
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: resources},
		}}
	}
	labelled := func(o string) string {
		return o + ` != null && has(` + o + `.metadata.labels) && '` + discoveryv1.LabelServiceName + `' in ` + o + `.metadata.labels && ` +
			o + `.metadata.labels['` + discoveryv1.LabelServiceName + `'] == '` + apiServiceName + `'`
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: meta(APIEndpointPolicy, ""),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: metav1.NamespaceDefault}},
				ObjectSelector:    &metav1.LabelSelector{},
				MatchPolicy:       &equivalent,
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
					// No resourceNames: a deletecollection reaches admission with an empty name
					// (each item under the collection's), so the name is the object's, below.
					rule("", nil, "services", "endpoints"),
					rule(discoveryv1.GroupName, nil, "endpointslices"),
				},
			},
			// A condition that is false lets the request through unjudged, whatever the others say:
			// the kube-apiserver's and the platform's writes never meet the authorizer.
			MatchConditions: []admissionregistrationv1.MatchCondition{
				{Name: "the-apis-endpoint", Expression: `request.resource.resource == 'endpointslices' ? (` +
					labelled("object") + `) || (` + labelled("oldObject") + `) : ` +
					`(object != null ? object.metadata.name : oldObject.metadata.name) == '` + apiServiceName + `'`},
				{Name: "not-the-apiserver-or-the-platform", Expression: `request.userInfo.username != '` + APIServerUser + `' && ` +
					`!(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g == '` + pki.MastersGroup + `' || g == '` + pki.AdminsGroup + `'))`},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: `authorizer.group('admissionregistration.k8s.io').resource('validatingadmissionpolicies').name('` +
					APIEndpointPolicy + `').check('delete').allowed()`,
				Reason: &forbidden,
				Message: "the tenant's API endpoint (Service and Endpoints default/kubernetes, EndpointSlices labelled " +
					discoveryv1.LabelServiceName + "=" + apiServiceName + ") is written only by its kube-apiserver, the platform and the tenant's admins",
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

// APIServerUser is who a kube-apiserver's own requests are from (its loopback client).
const APIServerUser = "system:apiserver"
