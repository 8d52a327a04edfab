package tenantaddon

import (
	"context"
	"fmt"

	"github.com/butlerdotdev/butler-apiserver/pkg/addons"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// metalLBPoolName names the IPAddressPool and L2Advertisement the controller keeps for MetalLB.
const metalLBPoolName = "butler-lb"

// isMetalLB says whether the addon installs MetalLB.
func isMetalLB(want *desired) bool {
	return want.chart.Name == "metallb" || (want.definition != nil && want.definition.Name == "metallb")
}

// loadBalancerAddresses are the cluster's load-balancer addresses: its Allocated load-balancer
// IPAllocations (status.ipAllocationRefs), else spec.networking.loadBalancerPool.
func (c *Controller) loadBalancerAddresses(tc *v1alpha1.TenantCluster) []string {
	var out []string
	for _, ref := range tc.Status.IPAllocationRefs {
		a, err := c.allocations.IPAllocations(tc.Namespace).Get(ref.Name)
		if err != nil || a.Spec.Type != v1alpha1.IPAllocationLoadBalancer || a.Status.Phase != v1alpha1.IPAllocationAllocated {
			continue
		}
		if a.Status.StartAddress != "" && a.Status.EndAddress != "" {
			out = append(out, a.Status.StartAddress+"-"+a.Status.EndAddress)
		}
	}
	if len(out) == 0 {
		if p := tc.Spec.Networking.LoadBalancerPool; p != nil && p.Start != "" && p.End != "" {
			out = append(out, p.Start+"-"+p.End)
		}
	}
	return out
}

// ensureMetalLBPool gives an installed MetalLB the cluster's load-balancer addresses. It
// returns what to add to the status message, or an error.
func (c *Controller) ensureMetalLBPool(ctx context.Context, target addons.Target, tc *v1alpha1.TenantCluster, namespace string) (string, error) {
	addresses := c.loadBalancerAddresses(tc)
	if len(addresses) == 0 {
		return "; no load-balancer addresses for its pool (no Allocated load-balancer IPAllocation, no spec.networking.loadBalancerPool)", nil
	}
	if err := c.engine.Apply(ctx, target, addons.MetalLBPool(namespace, metalLBPoolName, addresses)); err != nil {
		return "", fmt.Errorf("MetalLB address pool: %w", err)
	}
	return fmt.Sprintf("; IPAddressPool %s/%s: %v", namespace, metalLBPoolName, addresses), nil
}
