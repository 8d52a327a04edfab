package tenantaddon

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
// is one made for a chart the check refuses); the system namespaces are protected anyway.
func (c *Controller) protectNamespace(ctx context.Context, target addons.Target, want *desired, restriction string) error {
	ns := want.release.Namespace
	if want.definition == nil || restriction != "" || slices.Contains(access.SystemNamespaces, ns) {
		return nil
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": ns, "labels": map[string]any{external.ProtectedNamespaceLabel: "true"}},
	}}
	if err := c.engine.Apply(ctx, target, []*unstructured.Unstructured{obj}); err != nil {
		return fmt.Errorf("marking the release namespace %s protected: %w", ns, err)
	}
	return nil
}
