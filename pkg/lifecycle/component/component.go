package component

import (
	"fmt"
	"net/netip"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// Input is what every builder reads.
type Input struct {
	// Cluster is the stored TenantCluster (v1alpha1), defaults applied.
	Cluster *v1alpha1.TenantCluster
	// Namespace is the tenant namespace the external objects live in.
	Namespace string
	// Provider is the cluster's ProviderConfig (never nil here).
	Provider *v1alpha1.ProviderConfig
	// Config is the ButlerConfig "butler", nil when none.
	Config *v1alpha1.ButlerConfig
	// Allocations are this cluster's Allocated IPAllocations (types nodes and loadbalancer).
	Allocations []v1alpha1.IPAllocation
}

// The contract labels of every object the TenantCluster controller writes.
const (
	// PoolLabel names a node pool on machines and Nodes.
	PoolLabel = "butler.butlerlabs.dev/pool"
	// WorkersPool is the pool of spec.workers.
	WorkersPool = "workers"
	// ServiceDomain is the tenant clusters' DNS domain.
	ServiceDomain = "cluster.local"
)

// ManagementKubeconfigKeys are the keys of a tenant's admin kubeconfig Secret that butler's
// controllers read, in order: Steward's and Kamaji's .svc key names the control plane's address
// inside the management cluster (for a wake-on-request tenant, one that does not wake it),
// admin.conf its endpoint, value and kubeconfig other providers' keys.
var ManagementKubeconfigKeys = []string{"admin.svc", "admin.conf", "value", "kubeconfig"}

// Labels are the contract labels.
func Labels(in Input) map[string]string {
	return map[string]string{
		clusterv1.ClusterNameLabel:           in.Cluster.Name,
		external.TenantClusterLabel:          in.Cluster.Name,
		external.TenantClusterNamespaceLabel: in.Cluster.Namespace,
		external.ManagedByLabel:              external.ManagedBy,
	}
}

// Name is the TenantCluster's name, which the Cluster, control plane and infrastructure cluster take.
func Name(in Input) string { return in.Cluster.Name }

// WorkersName names the MachineDeployment, its bootstrap template and machine template.
func WorkersName(in Input) string { return in.Cluster.Name + "-workers" }

// ControlPlaneMachinesName names the machine template of a standalone control plane.
func ControlPlaneMachinesName(in Input) string { return in.Cluster.Name + "-control-plane" }

// New is an object of a kind with the contract labels and the given spec.
func New(in Input, gvk schema.GroupVersionKind, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	u.SetName(name)
	u.SetNamespace(in.Namespace)
	u.SetLabels(Labels(in))
	if spec != nil {
		u.Object["spec"] = spec
	}
	return u
}

// FromTyped converts a typed object (CAPI's Go types) to one ready for apply: metadata is
// replaced by name, namespace and the contract labels, status is dropped, and so are nulls and
// empty maps and lists the converter leaves for zero fields.
func FromTyped(in Input, gvk schema.GroupVersionKind, name string, obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %s %s: %w", gvk.Kind, name, err)
	}
	spec, _ := m["spec"].(map[string]any)
	spec, _ = Prune(spec).(map[string]any)
	return New(in, gvk, name, spec), nil
}

// FromSpec is an object of a kind whose spec is a typed struct (a mirror in pkg/external),
// converted and pruned as FromTyped does.
func FromSpec(in Input, gvk schema.GroupVersionKind, name string, spec any) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(spec)
	if err != nil {
		return nil, fmt.Errorf("converting %s %s: %w", gvk.Kind, name, err)
	}
	pruned, _ := Prune(m).(map[string]any)
	return New(in, gvk, name, pruned), nil
}

// Prune drops nulls and empty maps and lists, recursively.
func Prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			p := Prune(e)
			if p == nil {
				delete(t, k)
				continue
			}
			t[k] = p
		}
		if len(t) == 0 {
			return nil
		}
		return t
	case []any:
		out := t[:0]
		for _, e := range t {
			if p := Prune(e); p != nil {
				out = append(out, p)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	default:
		return v
	}
}

// ControlPlaneProvider is the hosted control plane provider ButlerConfig picks: kamaji, or
// steward for none or anything else.
func ControlPlaneProvider(cfg *v1alpha1.ButlerConfig) v1alpha1.ControlPlaneProvider {
	if cfg != nil && cfg.Spec.ControlPlaneProvider == v1alpha1.ControlPlaneProviderKamaji {
		return v1alpha1.ControlPlaneProviderKamaji
	}
	return v1alpha1.ControlPlaneProviderSteward
}

// Allocation is the first allocated IPAllocation of a type, or nil.
func Allocation(in Input, typ v1alpha1.IPAllocationType) *v1alpha1.IPAllocation {
	for i := range in.Allocations {
		a := &in.Allocations[i]
		if a.Spec.Type == typ && a.Status.Phase == v1alpha1.IPAllocationAllocated && a.Status.StartAddress != "" {
			return a
		}
	}
	return nil
}

// AddressRanges are the ranges of every allocated IPAllocation of a type, in the input's order
// (the nodes' addresses come in blocks as the workers grow).
func AddressRanges(in Input, typ v1alpha1.IPAllocationType) []string {
	var out []string
	for i := range in.Allocations {
		a := &in.Allocations[i]
		if a.Spec.Type == typ && a.Status.Phase == v1alpha1.IPAllocationAllocated && a.Status.StartAddress != "" {
			out = append(out, AddressRange(a))
		}
	}
	return out
}

// AddressRange is an allocation's addresses as "start-end" (one address: "start"), the form
// CAPI's in-cluster IPAM pools and MetalLB take.
func AddressRange(a *v1alpha1.IPAllocation) string {
	if a.Status.EndAddress == "" || a.Status.EndAddress == a.Status.StartAddress {
		return a.Status.StartAddress
	}
	return a.Status.StartAddress + "-" + a.Status.EndAddress
}

// NthAddress is the n-th address of a CIDR (n=10 of 10.96.0.0/12 is 10.96.0.10, the cluster
// DNS service kubeadm uses).
func NthAddress(cidr string, n int) (string, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return "", fmt.Errorf("parsing CIDR %q: %w", cidr, err)
	}
	a := p.Masked().Addr()
	for range n {
		a = a.Next()
	}
	if !a.IsValid() || !p.Contains(a) {
		return "", fmt.Errorf("CIDR %s has no address number %d", cidr, n)
	}
	return a.String(), nil
}
