package tenantcluster

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
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

// wantedAllocations is the load balancer range a cluster holds in ipam mode
// (spec.networking.loadBalancerPool pinned, or lbPoolSize, or the ProviderConfig's default pool
// size, or 8); the nodes' addresses follow the workers (ensureNodeAddresses).
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
	return []allocationWant{lb}
}

const nodesSuffix = "nodes"

// nodeHeadroom is the address a rollout needs beyond the workers: a MachineDeployment replaces
// machines one at a time with one more (maxSurge 1) while it does.
const nodeHeadroom = 1

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
	if infra.NodeAddressesUnsupported(pc.Spec.Provider) == "" {
		r, err := c.ensureNodeAddresses(ctx, s, pools)
		switch {
		case err != nil:
			return steps.Result{}, err
		case r.Done:
			held = append(held, r.Message)
		case r.Reason == "Allocating":
			pending = append(pending, r.Message)
		default:
			return r, nil
		}
	}
	if len(pending) > 0 {
		return steps.Waiting("Allocating", "waiting for IPAllocations %s", strings.Join(pending, "; ")), nil
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
	sel := k8slabels.SelectorFromSet(k8slabels.Set{external.TenantClusterLabel: s.tc.Name, external.TenantClusterNamespaceLabel: s.tc.Namespace})
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

// ensureNodeAddresses keeps the addresses of the nodes at workers + nodeHeadroom, in blocks: the
// IPAllocation <ns>-nodes, then <ns>-nodes-1, -2, ... (an IPAllocation does not resize). It grows
// before the workers step scales (that step waits for this one), and shrinks after: a block no
// machine has an address in is given back once every machine has its address and the blocks
// left still hold enough. The blocks are the provider's address pool (Proxmox's ipv4Config).
func (c *Controller) ensureNodeAddresses(ctx context.Context, s *state, pools []v1alpha1.PoolReference) (steps.Result, error) {
	pc := s.in.Provider
	want := max(s.tc.Spec.Workers.Replicas, 0) + nodeHeadroom
	blocks, err := c.nodeBlocks(s)
	if err != nil {
		return steps.Result{}, err
	}
	held, next := int32(0), 0
	var pending []string
	for _, b := range blocks {
		held += ptr.Deref(b.Spec.Count, 0)
		next = max(next, blockIndex(s, b.Name)+1)
		switch b.Status.Phase {
		case v1alpha1.IPAllocationFailed:
			return steps.Failure("AllocationFailed", "IPAllocation %s/%s failed: %s", pc.Namespace, b.Name, b.Status.Message), nil
		case v1alpha1.IPAllocationAllocated:
		default:
			pending = append(pending, b.Name)
		}
	}
	if held < want {
		name := allocationName(s, nodesSuffix)
		if len(blocks) > 0 {
			name = fmt.Sprintf("%s-%d", name, next)
		}
		got, err := c.allocate(ctx, s, name, allocationWant{typ: v1alpha1.IPAllocationNodes, count: want - held}, pools)
		if err != nil {
			if r, ok := err.(resultError); ok {
				return r.Result, nil
			}
			return steps.Result{}, err
		}
		blocks = append(blocks, got)
		if got.Status.Phase != v1alpha1.IPAllocationAllocated {
			pending = append(pending, name)
		}
	}
	for _, b := range blocks {
		s.allocationRefs = append(s.allocationRefs, v1alpha1.LocalObjectReference{Name: b.Name})
		s.in.Allocations = append(s.in.Allocations, *b)
	}
	if len(pending) > 0 {
		return steps.Waiting("Allocating", "%s (%d node addresses for %d workers and a rollout's one more)",
			strings.Join(pending, ", "), want, s.tc.Spec.Workers.Replicas), nil
	}
	if held > want {
		if err := c.releaseUnusedBlocks(ctx, s, blocks, held-want); err != nil {
			return steps.Result{}, err
		}
	}
	ranges := make([]string, 0, len(s.in.Allocations))
	for i := range s.in.Allocations {
		if a := &s.in.Allocations[i]; a.Spec.Type == v1alpha1.IPAllocationNodes {
			ranges = append(ranges, component.AddressRange(a))
		}
	}
	return steps.Ready("AddressesAllocated", "nodes %s", strings.Join(ranges, ", ")), nil
}

// nodeBlocks are the cluster's nodes IPAllocations, oldest block first.
func (c *Controller) nodeBlocks(s *state) ([]*v1alpha1.IPAllocation, error) {
	sel := k8slabels.SelectorFromSet(k8slabels.Set{external.TenantClusterLabel: s.tc.Name, external.TenantClusterNamespaceLabel: s.tc.Namespace})
	all, err := c.allocations.IPAllocations(s.in.Provider.Namespace).List(sel)
	if err != nil {
		return nil, err
	}
	var blocks []*v1alpha1.IPAllocation
	for _, a := range all {
		if a.Spec.Type == v1alpha1.IPAllocationNodes && blockIndex(s, a.Name) >= 0 {
			blocks = append(blocks, a)
		}
	}
	sort.Slice(blocks, func(i, j int) bool { return blockIndex(s, blocks[i].Name) < blockIndex(s, blocks[j].Name) })
	return blocks, nil
}

// blockIndex is 0 for <ns>-nodes, n for <ns>-nodes-<n>, -1 for another name.
func blockIndex(s *state, name string) int {
	base := allocationName(s, nodesSuffix)
	if name == base {
		return 0
	}
	var n int
	if rest, ok := strings.CutPrefix(name, base+"-"); ok {
		if _, err := fmt.Sscanf(rest, "%d", &n); err == nil && n > 0 && fmt.Sprint(n) == rest {
			return n
		}
	}
	return -1
}

// releaseUnusedBlocks gives back, newest first, blocks of at most surplus addresses that no
// machine of the cluster has an address in. Only once every machine has its address: one being
// made could still be handed an address of any block.
func (c *Controller) releaseUnusedBlocks(ctx context.Context, s *state, blocks []*v1alpha1.IPAllocation, surplus int32) error {
	used, settled, err := c.machineAddresses(ctx, s)
	if err != nil || !settled {
		return err
	}
	for i := len(blocks) - 1; i >= 0; i-- {
		b := blocks[i]
		n := ptr.Deref(b.Spec.Count, 0)
		if n > surplus || inBlock(b, used) {
			continue
		}
		if err := c.releaseAllocation(ctx, b.Namespace, b.Name); err != nil {
			return err
		}
		klog.FromContext(ctx).V(2).Info("Released a block of node addresses no machine uses", "ipallocation", b.Name, "count", n)
		surplus -= n
		s.allocationRefs = slices.DeleteFunc(s.allocationRefs, func(r v1alpha1.LocalObjectReference) bool { return r.Name == b.Name })
		s.in.Allocations = slices.DeleteFunc(s.in.Allocations, func(a v1alpha1.IPAllocation) bool { return a.Name == b.Name })
	}
	return nil
}

// machineAddresses are the addresses of the cluster's Cluster API Machines; settled says every
// machine has one.
func (c *Controller) machineAddresses(ctx context.Context, s *state) ([]netip.Addr, bool, error) {
	list, err := c.objects.dyn.Resource(external.MachineGVR).Namespace(s.namespace).List(ctx,
		metav1.ListOptions{LabelSelector: clusterv1.ClusterNameLabel + "=" + s.tc.Name})
	if err != nil {
		return nil, false, err
	}
	var used []netip.Addr
	settled := true
	for i := range list.Items {
		m, err := external.FromUnstructured[clusterv1.Machine](&list.Items[i])
		if err != nil {
			return nil, false, err
		}
		found := false
		for _, a := range m.Status.Addresses {
			if ip, err := netip.ParseAddr(a.Address); err == nil {
				used, found = append(used, ip), true
			}
		}
		settled = settled && found
	}
	return used, settled, nil
}

func inBlock(b *v1alpha1.IPAllocation, used []netip.Addr) bool {
	start, err1 := netip.ParseAddr(b.Status.StartAddress)
	end, err2 := netip.ParseAddr(b.Status.EndAddress)
	if err1 != nil || err2 != nil {
		return true // not known: keep it
	}
	for _, ip := range used {
		if start.Compare(ip) <= 0 && ip.Compare(end) <= 0 {
			return true
		}
	}
	return false
}
