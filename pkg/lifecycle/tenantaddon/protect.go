package tenantaddon

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/pkg/addons"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/access"
)

// protectNamespace marks the release namespace of a platform catalog addon installed as the
// platform vetted it (no restriction) as the platform's (external.ProtectedNamespaceLabel), server-side
// applied before its chart is installed, so it is made labelled: the Team's operators get no
// binding there, hence neither its Secrets nor its service accounts (a Flux controller's is
// cluster-admin). A chart held to a Team's allow-list (spec.helm, or a catalog chart with a
// Team's values) is no more than an operator's own, and its namespace stays the operators' (nor
// is one made for a chart the check refuses); the system namespaces are protected anyway. The
// namespace it makes is also Pod Security privileged: a platform addon (a CNI, a CSI driver) may
// need what the tenant's default level, baseline, refuses, and operators have no binding there.
//
// It labels only a namespace it makes: one that exists unlabelled may hold what the Team's
// operators left there (a Deployment waiting for a ServiceAccount the chart makes would get its
// token), which the label would not remove. Then it waits for a tenant admin to label it.
func (c *Controller) protectNamespace(ctx context.Context, target addons.Target, want *desired, restriction string) error {
	ns := want.release.Namespace
	if want.definition == nil || restriction != "" || slices.Contains(external.TenantSystemNamespaces, ns) {
		return nil
	}
	labels, exists, err := c.namespaceLabels(ctx, target, ns)
	switch {
	case err != nil:
		return fmt.Errorf("reading the release namespace %s: %w", ns, err)
	case exists && access.Protected(ns, labels):
		return nil
	case exists:
		return fmt.Errorf("the release namespace %s exists without %s=true, so what the Team's operators put there may use the addon's accounts: a tenant admin must label it (after removing what should not run with them)",
			ns, external.ProtectedNamespaceLabel)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": ns, "labels": map[string]any{
			external.ProtectedNamespaceLabel: "true", external.PodSecurityEnforceLabel: external.PodSecurityPrivileged}},
	}}
	if err := c.engine.Apply(ctx, target, []*unstructured.Unstructured{obj}); err != nil {
		return fmt.Errorf("marking the release namespace %s protected: %w", ns, err)
	}
	return nil
}

// tenantNamespaceLabels reads a namespace of the target cluster with its admin kubeconfig.
func tenantNamespaceLabels(ctx context.Context, target addons.Target, name string) (map[string]string, bool, error) {
	config, err := clientcmd.RESTConfigFromKubeConfig(target.Kubeconfig)
	if err != nil {
		return nil, false, err
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, false, err
	}
	ns, err := client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return ns.Labels, true, nil
}
