package access

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/kubernetes/scheme"
)

// policyPlugin is the policy as an admission.ValidationInterface, so that requests reach it the
// way the kube-apiserver's handlers build them.
type policyPlugin struct{ t *testing.T }

func (policyPlugin) Handles(admission.Operation) bool { return true }
func (p policyPlugin) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	policy, binding := APIEndpointPolicies()
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
