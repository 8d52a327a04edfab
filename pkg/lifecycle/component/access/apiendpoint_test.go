package access

import (
	"context"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/client-go/kubernetes/scheme"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// A write of the tenant's API endpoint by a Team operator (edit on Services in default), by an
// account a tenant admin let write EndpointSlices, or by kube-controller-manager's EndpointSlice
// controller (what a selector on the Service makes it do) is refused with a 403 naming the rule.
// The kube-apiserver, the platform's admin kubeconfig and the tenant's admins write it; other
// Services and EndpointSlices, and kubernetes in another namespace, are not the policy's. The
// policy is evaluated by the kube-apiserver's own admission code, compiled as a v1.30
// kube-apiserver compiles a new policy (the oldest tenant that serves its API: its CEL
// environment is 1.29's, without the ip() library).
func TestAttackAPIEndpointPolicy(t *testing.T) {
	policy, binding := attackPolicies()
	const admin = "butler:alice" // bound to cluster-admin: may delete the policy
	operator := user.DefaultInfo{Name: "butler:otto", Groups: []string{GroupPrefix + "ops", user.AllAuthenticated}}
	slicer := user.DefaultInfo{Name: "system:serviceaccount:default:slicer", Groups: []string{"system:serviceaccounts", user.AllAuthenticated}}
	apiServer := user.DefaultInfo{Name: APIServerUser, Groups: []string{pki.MastersGroup, user.AllAuthenticated}}
	platform := user.DefaultInfo{Name: pki.AdminUser, Groups: []string{pki.AdminsGroup, user.AllAuthenticated}}
	service := func(name, ns string, selector map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.ServiceSpec{Selector: selector}}
	}
	slice := func(name, serviceName string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Labels: map[string]string{discoveryv1.LabelServiceName: serviceName}}, AddressType: discoveryv1.AddressTypeIPv4}
	}
	apiService, thief := service("kubernetes", "default", nil), service("kubernetes", "default", map[string]string{"app": "api-thief"})
	for _, c := range []struct {
		name     string
		op       admission.Operation
		obj, old runtime.Object
		who      user.Info
		refused  bool
	}{
		{"operator adds a selector to default/kubernetes", admission.Update, thief, apiService, &operator, true},
		{"operator deletes default/kubernetes", admission.Delete, nil, apiService, &operator, true},
		{"operator makes default/kubernetes again", admission.Create, thief, nil, &operator, true},
		{"operator writes Endpoints default/kubernetes", admission.Update,
			//nolint:staticcheck // SA1019: deprecated, yet still served, so a tenant can write it; the policy must refuse it.
			&corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default"}}, nil, &operator, true},
		{"user with no groups adds a selector", admission.Update, thief, apiService, &user.DefaultInfo{Name: "nobody"}, true},
		{"account publishes an endpoint of the API", admission.Create, slice("api-thief", "kubernetes"), nil, &slicer, true},
		{"account unlabels the real nodes' EndpointSlice", admission.Update, slice("kubernetes-butler-nodes", "other"), slice("kubernetes-butler-nodes", "kubernetes"), &slicer, true},
		{"account deletes the real nodes' EndpointSlice", admission.Delete, nil, slice("kubernetes-butler-nodes", "kubernetes"), &slicer, true},
		{"EndpointSlice controller publishes Pods selected by the API's Service", admission.Create, slice("kubernetes-x7k2p", "kubernetes"), nil,
			&user.DefaultInfo{Name: "system:serviceaccount:kube-system:endpointslice-controller", Groups: []string{"system:serviceaccounts"}}, true},

		{"operator edits a Service of his own in default", admission.Update, service("web", "default", map[string]string{"app": "x"}), service("web", "default", nil), &operator, false},
		{"operator edits a Service kubernetes of his namespace", admission.Update, service("kubernetes", "team", map[string]string{"app": "x"}), service("kubernetes", "team", nil), &operator, false},
		{"account publishes its own Service's endpoint", admission.Create, slice("web-1", "web"), nil, &slicer, false},
		{"tenant admin adds a selector", admission.Update, thief, apiService, &user.DefaultInfo{Name: admin}, false},
		{"kube-apiserver updates default/kubernetes", admission.Update, apiService, apiService, &apiServer, false},
		{"kube-apiserver writes its EndpointSlice", admission.Update, slice("kubernetes", "kubernetes"), slice("kubernetes", "kubernetes"), &apiServer, false},
		{"local provider publishes the real nodes' EndpointSlice", admission.Create, slice("kubernetes-butler-nodes", "kubernetes"), nil, &platform, false},
		{"a system:masters client deletes it", admission.Delete, nil, slice("kubernetes-butler-nodes", "kubernetes"), &user.DefaultInfo{Name: "x", Groups: []string{pki.MastersGroup}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			asked := 0
			authz := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
				asked++
				if a.GetUser().GetName() == admin && a.GetVerb() == "delete" && a.GetResource() == "validatingadmissionpolicies" && a.GetName() == APIEndpointPolicy {
					return authorizer.DecisionAllow, "", nil
				}
				return authorizer.DecisionNoOpinion, "", nil
			})
			decisions := evaluate(t, policy, binding, attributes(t, c.op, c.obj, c.old, c.who), authz)
			refused := slices.ContainsFunc(decisions, func(d validating.PolicyDecision) bool { return d.Action == validating.ActionDeny })
			if refused != c.refused {
				t.Fatalf("refused %v, want %v: %+v", refused, c.refused, decisions)
			}
			if refused {
				d := firstDenial(decisions)
				if d.Evaluation != validating.EvalDeny || d.Reason != metav1.StatusReasonForbidden || !strings.Contains(d.Message, "default/kubernetes") {
					t.Errorf("want a 403 (Forbidden) naming default/kubernetes, got %+v", d)
				}
			}
			// The kube-apiserver and the platform are let through by name: no RBAC a tenant admin
			// edits makes the policy refuse them.
			if (c.who == &apiServer || c.who == &platform) && asked != 0 {
				t.Errorf("the authorizer was asked %d times for %s", asked, c.who.GetName())
			}
		})
	}
}

func TestAPIEndpointPolicyObjects(t *testing.T) {
	policy, binding := attackPolicies()
	if policy.Name != APIEndpointPolicy || binding.Name != APIEndpointPolicy || binding.Spec.PolicyName != APIEndpointPolicy {
		t.Errorf("names: policy %q, binding %q for %q", policy.Name, binding.Name, binding.Spec.PolicyName)
	}
	if !slices.Equal(binding.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
		t.Errorf("binding's actions %v, want Deny", binding.Spec.ValidationActions)
	}
	if policy.Labels[ManagedByLabel] != ManagedBy || binding.Labels[ManagedByLabel] != ManagedBy {
		t.Errorf("labels %v, %v", policy.Labels, binding.Labels)
	}
	if p := policy.Spec.FailurePolicy; p == nil || *p != admissionregistrationv1.Fail {
		t.Errorf("failure policy %v, want Fail", p)
	}
}

// evaluate is what the kube-apiserver's ValidatingAdmissionPolicy plugin does with one policy
// and its binding for a request: its matcher, then the policy compiled as its compilePolicy
// compiles it (unexported), in the environment a v1.30 kube-apiserver checks new policies in:
// its compatibility version's, 1.29 (a release's new expressions use the one before's, for rollback).
func evaluate(t *testing.T, policy *admissionregistrationv1.ValidatingAdmissionPolicy, binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding,
	attr admission.Attributes, authz authorizer.Authorizer) []validating.PolicyDecision {
	t.Helper()
	namespaces := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, ns := range []string{"default", "team", "kube-system"} {
		_ = namespaces.Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{corev1.LabelMetadataName: ns}}})
	}
	matcher := generic.NewPolicyMatcher(matching.NewMatcher(corev1listers.NewNamespaceLister(namespaces), nil))
	o := admission.NewObjectInterfacesFromScheme(scheme.Scheme)
	matches, gvr, gvk, err := matcher.DefinitionMatches(attr, o, validating.NewValidatingAdmissionPolicyAccessor(policy))
	if err != nil {
		t.Fatal(err)
	}
	if !matches {
		return nil
	}
	if ok, err := matcher.BindingMatches(attr, o, validating.NewValidatingAdmissionPolicyBindingAccessor(binding)); err != nil || !ok {
		t.Fatalf("the binding does not match what the policy does: %v", err)
	}

	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(version.MajorMinor(1, 29)))
	if err != nil {
		t.Fatal(err)
	}
	vars := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	const mode = environment.NewExpressions
	var conditions []plugincel.ExpressionAccessor
	for i := range policy.Spec.MatchConditions {
		conditions = append(conditions, (*matchconditions.MatchCondition)(&policy.Spec.MatchConditions[i]))
	}
	var validations, messages []plugincel.ExpressionAccessor
	for _, v := range policy.Spec.Validations {
		validations = append(validations, &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason})
		messages = append(messages, nil)
	}
	match := compiler.CompileCondition(conditions, vars, mode)
	validate := compiler.CompileCondition(validations, vars, mode)
	for _, e := range append(match.CompilationErrors(), validate.CompilationErrors()...) {
		t.Fatalf("does not compile: %v", e)
	}
	v := validating.NewValidator(validate, matchconditions.NewMatcher(match, policy.Spec.FailurePolicy, "policy", "validate", policy.Name),
		compiler.CompileCondition(nil, vars, mode), compiler.CompileCondition(messages, plugincel.OptionalVariableDeclarations{}, mode),
		policy.Spec.FailurePolicy, nil)
	ns, _ := matcher.GetNamespace(context.Background(), attr.GetNamespace())
	versioned, err := admission.NewVersionedAttributes(attr, gvk, o)
	if err != nil {
		t.Fatal(err)
	}
	return v.Validate(context.Background(), gvr, versioned, nil, ns, celconfig.RuntimeCELCostBudget, authz).Decisions
}

// attributes is an admission request of op on obj (old, for an update or delete) by who.
func attributes(t *testing.T, op admission.Operation, obj, old runtime.Object, who user.Info) admission.Attributes {
	t.Helper()
	some := obj
	if some == nil {
		some = old
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(some)
	if err != nil {
		t.Fatal(err)
	}
	gvk := gvks[0]
	for _, o := range []runtime.Object{obj, old} {
		if o != nil {
			o.GetObjectKind().SetGroupVersionKind(gvk)
		}
	}
	resource := map[string]string{"Service": "services", "Endpoints": "endpoints", "EndpointSlice": "endpointslices"}[gvk.Kind]
	m, err := apimeta.Accessor(some)
	if err != nil {
		t.Fatal(err)
	}
	var opts runtime.Object
	switch op {
	case admission.Create:
		opts = &metav1.CreateOptions{}
	case admission.Update:
		opts = &metav1.UpdateOptions{}
	case admission.Delete:
		opts = &metav1.DeleteOptions{}
	}
	return admission.NewAttributesRecord(obj, old, gvk, m.GetNamespace(), m.GetName(), schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: resource},
		"", op, opts, false, who)
}
