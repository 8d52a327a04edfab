package tenantcluster

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/infra"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// allocationWant is one IPAllocation a cluster needs.
type allocationWant struct {
	suffix string
	typ    v1alpha1.IPAllocationType
	count  int32
	pinned *v1alpha1.PinnedRange
}

// wantedAllocations are the addresses a cluster holds in ipam mode: its load balancer range
// (spec.networking.loadBalancerPool pinned, or lbPoolSize, or the ProviderConfig's default pool
// size, or 8), and, where the provider's machine specs take static addresses, one per worker (at
// least one).
func wantedAllocations(tc *v1alpha1.TenantCluster, pc *v1alpha1.ProviderConfig) []allocationWant {
	lb := allocationWant{suffix: "lb", typ: v1alpha1.IPAllocationLoadBalancer, count: 8}
	switch {
	case tc.Spec.Networking.LoadBalancerPool != nil:
		lb.count = 0
		lb.pinned = &v1alpha1.PinnedRange{StartAddress: tc.Spec.Networking.LoadBalancerPool.Start, EndAddress: tc.Spec.Networking.LoadBalancerPool.End}
	case tc.Spec.Networking.LBPoolSize != nil:
		lb.count = *tc.Spec.Networking.LBPoolSize
	case pc.Spec.Network.LoadBalancer != nil && pc.Spec.Network.LoadBalancer.DefaultPoolSize != nil:
		lb.count = *pc.Spec.Network.LoadBalancer.DefaultPoolSize
	}
	if infra.NodeAddressesUnsupported(pc.Spec.Provider) != "" {
		return []allocationWant{lb}
	}
	return []allocationWant{{suffix: nodesSuffix, typ: v1alpha1.IPAllocationNodes, count: max(tc.Spec.Workers.Replicas, 1)}, lb}
}

const nodesSuffix = "nodes"

// allocationName names a cluster's IPAllocation; it lives in the pools' namespace, which many
// clusters share, so the name carries the tenant namespace (unique per cluster).
func allocationName(s *state, suffix string) string { return s.namespace + "-" + suffix }

// ensureNetwork holds the cluster's addresses in ipam mode, from the ProviderConfig's pools in
// priority order (lower first): an exhausted pool passes the request to the next.
func (c *Controller) ensureNetwork(ctx context.Context, s *state) (steps.Result, error) {
	pc := s.in.Provider
	s.networkChecked = true
	if pc.Spec.Network.Mode != v1alpha1.NetworkModeIPAM {
		return steps.Ready("ProviderNetwork", "addresses come from the provider (network mode %q)", orDefault(string(pc.Spec.Network.Mode), "cloud")), nil
	}
	pools := append([]v1alpha1.PoolReference(nil), pc.Spec.Network.PoolRefs...)
	sort.SliceStable(pools, func(i, j int) bool { return pools[i].Priority < pools[j].Priority })
	if len(pools) == 0 {
		return steps.Failure("NoPools", "ProviderConfig %s/%s is in ipam mode but lists no spec.network.poolRefs", pc.Namespace, pc.Name), nil
	}
	var held []string
	var pending []string
	for _, want := range wantedAllocations(s.tc, pc) {
		name := allocationName(s, want.suffix)
		got, err := c.allocations.IPAllocations(pc.Namespace).Get(name)
		if apierrors.IsNotFound(err) {
			got, err = c.allocate(ctx, s, name, want, pools)
			if err != nil {
				if r, ok := err.(resultError); ok {
					return r.Result, nil
				}
				return steps.Result{}, err
			}
		} else if err != nil {
			return steps.Result{}, err
		}
		s.allocationRefs = append(s.allocationRefs, v1alpha1.LocalObjectReference{Name: name})
		s.in.Allocations = append(s.in.Allocations, *got)
		switch got.Status.Phase {
		case v1alpha1.IPAllocationAllocated:
			held = append(held, fmt.Sprintf("%s %s-%s", want.typ, got.Status.StartAddress, got.Status.EndAddress))
		case v1alpha1.IPAllocationFailed:
			return steps.Failure("AllocationFailed", "IPAllocation %s/%s failed: %s", pc.Namespace, name, got.Status.Message), nil
		default:
			pending = append(pending, name)
		}
	}
	if len(pending) > 0 {
		return steps.Waiting("Allocating", "waiting for IPAllocations %s", strings.Join(pending, ", ")), nil
	}
	if why := infra.NodeAddressesUnsupported(pc.Spec.Provider); why != "" {
		// Addresses no machine would take are not held: a nodes allocation of an earlier
		// version, or of a ProviderConfig that changed provider, is given back.
		if err := c.releaseAllocation(ctx, pc.Namespace, allocationName(s, nodesSuffix)); err != nil {
			return steps.Result{}, err
		}
		held = append(held, fmt.Sprintf("no node addresses from the pools (%s machines cannot take them: %s)", pc.Spec.Provider, why))
	}
	return steps.Ready("AddressesAllocated", "%s", strings.Join(held, "; ")), nil
}

// resultError carries a step Result out of a helper.
type resultError struct{ steps.Result }

func (r resultError) Error() string { return r.Message }

func (c *Controller) allocate(ctx context.Context, s *state, name string, want allocationWant, pools []v1alpha1.PoolReference) (*v1alpha1.IPAllocation, error) {
	pc := s.in.Provider
	var refusals []string
	for _, pool := range pools {
		a := &v1alpha1.IPAllocation{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pc.Namespace, Labels: labels(s.tc)},
			Spec: v1alpha1.IPAllocationSpec{
				PoolRef:          v1alpha1.LocalObjectReference{Name: pool.Name},
				TenantClusterRef: &v1alpha1.NamespacedObjectReference{Name: s.tc.Name, Namespace: s.tc.Namespace},
				Type:             want.typ, PinnedRange: want.pinned,
			},
		}
		if want.pinned == nil {
			a.Spec.Count = ptr.To(want.count)
		}
		got, err := c.butler.ButlerV1alpha1().IPAllocations(pc.Namespace).Create(ctx, a, metav1.CreateOptions{})
		switch {
		case err == nil:
			return got, nil
		case apierrors.IsAlreadyExists(err):
			return c.butler.ButlerV1alpha1().IPAllocations(pc.Namespace).Get(ctx, name, metav1.GetOptions{})
		case apierrors.IsConflict(err) || apierrors.IsInvalid(err):
			// Exhausted, or a pinned range this pool does not hold: the next pool may.
			refusals = append(refusals, fmt.Sprintf("pool %s: %v", pool.Name, err))
		default:
			return nil, err
		}
	}
	return nil, resultError{steps.Failure("PoolsExhausted", "no pool of ProviderConfig %s/%s can hold %s addresses for %s: %s",
		pc.Namespace, pc.Name, want.typ, name, strings.Join(refusals, "; "))}
}

// releaseAllocation deletes an IPAllocation if the cache holds it.
func (c *Controller) releaseAllocation(ctx context.Context, namespace, name string) error {
	if _, err := c.allocations.IPAllocations(namespace).Get(name); apierrors.IsNotFound(err) {
		return nil
	}
	err := c.butler.ButlerV1alpha1().IPAllocations(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// cleanupNetwork releases the cluster's addresses: deleting an IPAllocation returns them.
func (c *Controller) cleanupNetwork(ctx context.Context, s *state) (bool, error) {
	sel := k8slabels.SelectorFromSet(k8slabels.Set{ClusterLabel: s.tc.Name, ClusterNamespaceLabel: s.tc.Namespace})
	all, err := c.allocations.List(sel)
	if err != nil {
		return false, err
	}
	for _, a := range all {
		err := c.butler.ButlerV1alpha1().IPAllocations(a.Namespace).Delete(ctx, a.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
	}
	return len(all) == 0, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
