package tenantcluster

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	butlerfake "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned/fake"
	listers "github.com/butlerdotdev/butler-apiserver/pkg/generated/listers/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/componenttest"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/infra"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// TestNodeAddressesFollowTheWorkers: a Proxmox cluster in ipam mode scaled 2 -> 5 -> 2. The
// nodes' addresses grow to workers + 1 (a rollout's surge) before the workers may scale (the
// network step is not done until the new block is allocated), every machine's address — given,
// as CAPMOX gives it, from the ProxmoxCluster's ipv4Config pool — lies in the cluster's blocks
// and no two machines share one, and after the scale-down (the newest machines removed) the
// block no machine uses is given back.
func TestNodeAddressesFollowTheWorkers(t *testing.T) {
	ctx := context.Background()
	butler := butlerfake.NewSimpleClientset()
	idx := indexer()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{external.MachineGVR: "MachineList"})
	c := &Controller{butler: butler, allocations: listers.NewIPAllocationLister(idx), objects: &objects{dyn: dyn}}
	pc := componenttest.Provider(v1alpha1.ProviderProxmox)
	tc := cluster()

	// The allocator's side: pending IPAllocations get the next free addresses of 10.0.0.0/24,
	// and the informer sees what the store holds.
	next := netip.MustParseAddr("10.0.0.10")
	settle := func() {
		list, err := butler.ButlerV1alpha1().IPAllocations(pc.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range idx.List() {
			_ = idx.Delete(o)
		}
		for i := range list.Items {
			a := list.Items[i].DeepCopy()
			if a.Status.Phase != v1alpha1.IPAllocationAllocated {
				a.Status.Phase, a.Status.StartAddress, a.Status.AllocatedCount = v1alpha1.IPAllocationAllocated, next.String(), int64(*a.Spec.Count)
				for range *a.Spec.Count - 1 {
					next = next.Next()
				}
				a.Status.EndAddress, next = next.String(), next.Next()
				if _, err := butler.ButlerV1alpha1().IPAllocations(pc.Namespace).UpdateStatus(ctx, a, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			_ = idx.Add(a)
		}
	}
	network := func(replicas int32) (steps.Result, *state) {
		t.Helper()
		tc.Spec.Workers.Replicas = replicas
		s := c.newState(tc)
		s.in.Provider = pc
		r, err := c.ensureNetwork(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		return r, s
	}
	held := func() (n int64) {
		list, _ := butler.ButlerV1alpha1().IPAllocations(pc.Namespace).List(ctx, metav1.ListOptions{})
		for _, a := range list.Items {
			if a.Spec.Type == v1alpha1.IPAllocationNodes {
				n += int64(*a.Spec.Count)
			}
		}
		return n
	}
	// CAPMOX's side: a new machine takes the lowest address of the pool no machine has.
	machines := 0
	var addresses []string
	addMachine := func(s *state) {
		t.Helper()
		in := componenttest.Input(v1alpha1.ProviderProxmox)
		in.Allocations = s.in.Allocations
		pmc, _, err := infra.ForProvider(in)
		if err != nil {
			t.Fatal(err)
		}
		ranges, _, _ := unstructured.NestedStringSlice(pmc.Object, "spec", "ipv4Config", "addresses")
		for _, r := range ranges {
			from, to, _ := strings.Cut(r, "-")
			for ip := netip.MustParseAddr(from); ip.Compare(netip.MustParseAddr(to)) <= 0; ip = ip.Next() {
				if slices.Contains(addresses, ip.String()) {
					continue
				}
				m := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
					"metadata": map[string]any{"name": fmt.Sprintf("prod-workers-%d", machines), "namespace": s.namespace,
						"labels": map[string]any{"cluster.x-k8s.io/cluster-name": "prod"}},
					"status": map[string]any{"addresses": []any{map[string]any{"type": "InternalIP", "address": ip.String()}}},
				}}
				if _, err := dyn.Resource(external.MachineGVR).Namespace(s.namespace).Create(ctx, m, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				machines++
				addresses = append(addresses, ip.String())
				return
			}
		}
		t.Fatalf("machine %d: no free address in the ProxmoxCluster's pool %v (machines have %v)", machines, ranges, addresses)
	}
	removeNewest := func(s *state) {
		machines--
		if err := dyn.Resource(external.MachineGVR).Namespace(s.namespace).Delete(ctx, fmt.Sprintf("prod-workers-%d", machines), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		addresses = addresses[:len(addresses)-1]
	}
	ready := func(replicas int32) *state {
		t.Helper()
		if r, _ := network(replicas); r.Done {
			t.Fatalf("%d workers: network done before the new addresses are allocated: %+v", replicas, r)
		}
		settle()
		r, s := network(replicas)
		if !r.Done {
			t.Fatalf("%d workers: %+v", replicas, r)
		}
		return s
	}

	s := ready(2)
	if held() != 3 {
		t.Errorf("2 workers: %d node addresses held, want 3", held())
	}
	addMachine(s)
	addMachine(s)

	s = ready(5)
	if held() != 6 {
		t.Errorf("5 workers: %d node addresses held, want 6", held())
	}
	for range 3 {
		addMachine(s)
	}
	// A rollout's extra machine also finds an address.
	addMachine(s)
	removeNewest(s)

	// Scaled down: nothing is given back while the machines still hold addresses of the block.
	r, _ := network(2)
	if !r.Done || held() != 6 {
		t.Errorf("2 workers, 5 machines left: %+v, %d held", r, held())
	}
	for range 3 {
		removeNewest(s)
	}
	r, _ = network(2)
	if !r.Done || held() != 3 {
		t.Errorf("2 workers, 2 machines: %+v, %d held; want the unused block given back", r, held())
	}
	settle()
	if _, s = network(2); len(s.allocationRefs) != 2 {
		t.Errorf("allocationRefs %v, want the first nodes block and the load balancer's", s.allocationRefs)
	}
	// Every machine's address is in a block the cluster holds, and the ProxmoxCluster's pool.
	in := componenttest.Input(v1alpha1.ProviderProxmox)
	in.Allocations = s.in.Allocations
	pmc, _, err := infra.ForProvider(in)
	if err != nil {
		t.Fatal(err)
	}
	ranges, _, _ := unstructured.NestedStringSlice(pmc.Object, "spec", "ipv4Config", "addresses")
	for _, a := range addresses {
		ip, ok := netip.MustParseAddr(a), false
		for _, r := range ranges {
			from, to, _ := strings.Cut(r, "-")
			ok = ok || (netip.MustParseAddr(from).Compare(ip) <= 0 && ip.Compare(netip.MustParseAddr(to)) <= 0)
		}
		if !ok {
			t.Errorf("machine address %s is outside the pool %v", a, ranges)
		}
	}
	if len(addresses) != 2 || addresses[0] == addresses[1] {
		t.Errorf("machine addresses %v", addresses)
	}
}
