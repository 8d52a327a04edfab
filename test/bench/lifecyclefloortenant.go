package main

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/access"
)

// The floor's part in a cluster's tenant: between a control plane Ready and its workers, butler's
// plan runs the access step (the Team's access; with no Team, the platform admins') and the
// service-address step, which send the tenant what writeFloorTenant sends: the admin kubeconfig
// Secret read, a new client, the tenant's namespaces listed, the API endpoint's policy and its
// binding, butler's ClusterRoles and the bindings applied (those with no subject deleted), the
// bound roles read, and one list of the Services. Built by the same builders (component/access).
// In the bench every cluster's tenant is the one real local tenant (benchTenant), on both sides.

// floorTenantOf opens a client to in's tenant.
type floorTenantOf func(ctx context.Context, in component.Input) (dynamic.Interface, error)

// tenantFromSecret opens a client of its own to in's tenant from the admin kubeconfig Secret the
// Steward stand-in wrote, paced as butler's tenant clients are (50/s, burst 100).
func tenantFromSecret(kube kubernetes.Interface) floorTenantOf {
	return func(ctx context.Context, in component.Input) (dynamic.Interface, error) {
		name := in.Cluster.Name + "-admin-kubeconfig"
		secret, err := kube.CoreV1().Secrets(in.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		for _, key := range component.ManagementKubeconfigKeys {
			if data := secret.Data[key]; len(data) > 0 {
				cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
				if err != nil {
					return nil, err
				}
				cfg.UserAgent = string(external.Workers)
				cfg.QPS, cfg.Burst = 50, 100
				return dynamic.NewForConfig(cfg)
			}
		}
		return nil, fmt.Errorf("the Secret %s/%s holds no kubeconfig", in.Namespace, name)
	}
}

var (
	tenantNamespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	tenantServices   = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	tenantPolicies   = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies")
	tenantPolicyRefs = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicybindings")
	tenantRoles      = rbacv1.SchemeGroupVersion.WithResource("clusterroles")
	tenantCRBs       = rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings")
	tenantRBs        = rbacv1.SchemeGroupVersion.WithResource("rolebindings")
)

// writeFloorTenant sends in's tenant what butler's access and service-address steps send in a
// cluster's first run after its control plane is Ready, and says how many requests it sent.
func writeFloorTenant(ctx context.Context, tenantOf floorTenantOf, in component.Input) (int, error) {
	tenant, err := tenantOf(ctx, in)
	if err != nil {
		return 1, fmt.Errorf("the tenant of %s: %w", in.Cluster.Name, err)
	}
	sent := 2 // the Secret, the namespaces
	list, err := tenant.Resource(tenantNamespaces).List(ctx, metav1.ListOptions{})
	if err != nil {
		return sent, err
	}
	var namespaces []access.Namespace
	for _, ns := range list.Items {
		if ns.GetDeletionTimestamp() == nil {
			namespaces = append(namespaces, access.Namespace{Name: ns.GetName(), Protected: access.Protected(ns.GetName(), ns.GetLabels())})
		}
	}
	slices.SortFunc(namespaces, func(a, b access.Namespace) int { return cmp.Compare(a.Name, b.Name) })
	first, err := component.NthAddress(cmp.Or(in.Cluster.Spec.Networking.ServiceCIDR, v1alpha1.DefaultServiceCIDR), 1)
	if err != nil {
		return sent, err
	}
	policy, binding := access.APIEndpointPolicies(netip.MustParseAddr(first))
	crbs, rbs := access.Bindings(access.Members{}, namespaces)
	n, err := applyFloorAccess(ctx, tenant, policy, binding, crbs, rbs)
	sent += n
	if err != nil {
		return sent, err
	}
	for _, role := range access.BoundRoles(crbs, rbs) {
		sent++
		if _, err := tenant.Resource(tenantRoles).Get(ctx, role, metav1.GetOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return sent, err
		}
	}
	sent++
	_, err = tenant.Resource(tenantServices).List(ctx, metav1.ListOptions{Limit: 50}) // servicesPage
	return sent, err
}

// applyFloorAccess applies the policy and its binding, butler's ClusterRoles and the bindings in
// the access step's order, deleting a binding with no subject as it does.
func applyFloorAccess(ctx context.Context, tenant dynamic.Interface, policy *admissionregistrationv1.ValidatingAdmissionPolicy,
	binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding, crbs []*rbacv1.ClusterRoleBinding, rbs []*rbacv1.RoleBinding) (int, error) {
	// deleted: a binding with no subject, which the access step deletes rather than applies.
	type write struct {
		gvr     schema.GroupVersionResource
		kind    string
		obj     metav1.Object
		deleted bool
	}
	writes := []write{{tenantPolicies, "ValidatingAdmissionPolicy", policy, false}, {tenantPolicyRefs, "ValidatingAdmissionPolicyBinding", binding, false}}
	for _, r := range access.ClusterRoles() {
		writes = append(writes, write{tenantRoles, "ClusterRole", r, false})
	}
	for _, b := range crbs {
		writes = append(writes, write{tenantCRBs, "ClusterRoleBinding", b, len(b.Subjects) == 0})
	}
	for _, b := range rbs {
		writes = append(writes, write{tenantRBs, "RoleBinding", b, len(b.Subjects) == 0})
	}
	for i, w := range writes {
		r := tenant.Resource(w.gvr).Namespace(w.obj.GetNamespace())
		var err error
		if w.deleted {
			err = r.Delete(ctx, w.obj.GetName(), metav1.DeleteOptions{})
		} else {
			var u *unstructured.Unstructured
			if u, err = asUnstructured(w.obj.(runtime.Object), w.gvr.GroupVersion().WithKind(w.kind)); err == nil {
				_, err = external.Workers.Apply(ctx, r, u)
			}
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return i + 1, fmt.Errorf("%s %s in the tenant: %w", w.kind, w.obj.GetName(), err)
		}
	}
	return len(writes), nil
}

// asUnstructured is obj as gvk, without status (the tenant's kube-apiserver's). Not
// component.FromTyped, which keeps only a spec: RBAC objects have rules, roleRef and subjects.
func asUnstructured(obj runtime.Object, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	delete(u.Object, "status")
	u.SetGroupVersionKind(gvk)
	return u, nil
}
