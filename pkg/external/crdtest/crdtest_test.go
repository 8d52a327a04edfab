package crdtest

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Validate reports what the apiserver would drop or reject, and accepts a valid object.
func TestValidate(t *testing.T) {
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	obj := func(spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "bootstrap.butlerlabs.dev/v1alpha1",
			"kind":       "BootstrapConfig",
			"metadata":   map[string]any{"name": "w", "namespace": "ns"},
			"spec":       spec,
		}}
	}
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want string // substring of the errors; empty: valid
	}{
		{"valid", obj(map[string]any{"os": map[string]any{"type": "talos"}}), ""},
		{"unknown field", obj(map[string]any{"os": map[string]any{"type": "talos"}, "clusterDNs": "x"}), "spec.clusterDNs"},
		{"enum", obj(map[string]any{"os": map[string]any{"type": "windows"}}), "spec.os.type"},
		{"required", obj(map[string]any{"podCIDR": "10.244.0.0/16"}), "spec.os"},
		{"unknown kind", &unstructured.Unstructured{Object: map[string]any{"apiVersion": "x.io/v1", "kind": "Nope"}}, "apiVersion"},
		{"CEL rule", &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1", "kind": "ProxmoxCluster",
			"metadata": map[string]any{"name": "p", "namespace": "ns"},
			"spec":     map[string]any{"dnsServers": []any{"10.0.0.1"}},
		}}, "ipv4Config or ipv6Config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := set.Validate(tc.obj)
			if tc.want == "" {
				if len(errs) > 0 {
					t.Fatalf("valid object rejected: %v", errs)
				}
				return
			}
			if !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Fatalf("errors %v, want one about %q", errs, tc.want)
			}
		})
	}
}
