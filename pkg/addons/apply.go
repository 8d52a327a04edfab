package addons

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// Apply writes objects into the target cluster with server-side apply (as
// external.Workers, taking over conflicting fields): for what an addon needs beyond its chart,
// such as MetalLB's address pool, whose kinds exist only once the chart installed their CRDs.
func (e *Engine) Apply(ctx context.Context, target Target, objs []*unstructured.Unstructured) error {
	e.mu.Lock()
	clients, err := e.clientsLocked(target, sha256Sum(target.Kubeconfig))
	e.mu.Unlock()
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(clients.config)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		mapping, err := clients.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			// The kind may be newer than the discovery cache (its CRD came with the chart).
			clients.discovery.Invalidate()
			meta.MaybeResetRESTMapper(clients.mapper)
			mapping, err = clients.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", gvk.Kind, err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
		}
		if _, err := external.Workers.Apply(ctx, ri, obj); err != nil {
			return fmt.Errorf("applying %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}

// MetalLBPool returns MetalLB's IPAddressPool and L2Advertisement named name in namespace,
// handing out addresses ("start-end" ranges or CIDRs).
func MetalLBPool(namespace, name string, addresses []string) []*unstructured.Unstructured {
	list := make([]any, len(addresses))
	for i, a := range addresses {
		list[i] = a
	}
	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "metallb.io/v1beta1", "kind": "IPAddressPool",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     map[string]any{"addresses": list},
	}}
	l2 := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "metallb.io/v1beta1", "kind": "L2Advertisement",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     map[string]any{"ipAddressPools": []any{name}},
	}}
	return []*unstructured.Unstructured{pool, l2}
}
