package validation

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

func validNetworkPool() *butler.NetworkPool {
	return &butler.NetworkPool{
		ObjectMeta: metav1.ObjectMeta{Name: "lab", Namespace: "butler-system", ResourceVersion: "1"},
		Spec: butler.NetworkPoolSpec{
			CIDR:     "10.40.0.0/22",
			Reserved: []butler.ReservedRange{{CIDR: "10.40.0.0/28", Description: "gateways"}},
			Ranges: []butler.AddressRange{
				{Start: "10.40.0.16", End: "10.40.1.255"},
				{Start: "10.40.2.0", End: "10.40.3.254"},
			},
			Defaults: butler.PoolDefaults{NodesPerTenant: ptr.To[int32](5), LBPoolPerTenant: ptr.To[int32](8)},
		},
	}
}

func TestValidateNetworkPool(t *testing.T) {
	runCreateCases(t, validNetworkPool, ValidateNetworkPool, []createCase[butler.NetworkPool]{
		{"cluster scoped", func(o *butler.NetworkPool) { o.Namespace = "" }, []fieldErr{required("metadata.namespace")}},
		{"IPv6", func(o *butler.NetworkPool) {
			o.Spec.CIDR = "fd00:40::/64"
			o.Spec.Reserved = []butler.ReservedRange{{CIDR: "fd00:40::/120"}}
			o.Spec.Ranges = []butler.AddressRange{{Start: "fd00:40::1:0", End: "fd00:40::1:ffff"}}
		}, nil},
		{"whole CIDR", func(o *butler.NetworkPool) { o.Spec.Reserved, o.Spec.Ranges = nil, nil }, nil},
		{"single-address range", func(o *butler.NetworkPool) {
			o.Spec.Ranges = []butler.AddressRange{{Start: "10.40.0.20", End: "10.40.0.20"}}
		}, nil},

		{"no cidr", func(o *butler.NetworkPool) { o.Spec.CIDR = "" }, []fieldErr{required("spec.cidr")}},
		{"garbage cidr", func(o *butler.NetworkPool) { o.Spec.CIDR = "lab-network" }, []fieldErr{invalid("spec.cidr")}},
		{"host bits set", func(o *butler.NetworkPool) { o.Spec.CIDR = "10.40.0.5/22" }, []fieldErr{invalid("spec.cidr")}},

		{"reserved outside", func(o *butler.NetworkPool) { o.Spec.Reserved[0].CIDR = "10.41.0.0/28" }, []fieldErr{invalid("spec.reserved[0].cidr")}},
		{"reserved larger than pool", func(o *butler.NetworkPool) { o.Spec.Reserved[0].CIDR = "10.40.0.0/16" }, []fieldErr{invalid("spec.reserved[0].cidr")}},
		{"reserved other family", func(o *butler.NetworkPool) { o.Spec.Reserved[0].CIDR = "fd00::/120" }, []fieldErr{invalid("spec.reserved[0].cidr")}},
		{"reserved garbage", func(o *butler.NetworkPool) { o.Spec.Reserved = append(o.Spec.Reserved, butler.ReservedRange{}) }, []fieldErr{required("spec.reserved[1].cidr")}},

		{"range reversed", func(o *butler.NetworkPool) {
			o.Spec.Ranges[0] = butler.AddressRange{Start: "10.40.1.0", End: "10.40.0.20"}
		}, []fieldErr{invalid("spec.ranges[0].end")}},
		{"range bad address", func(o *butler.NetworkPool) { o.Spec.Ranges[1].Start = "10.40.2" }, []fieldErr{invalid("spec.ranges[1].start")}},
		{"range outside", func(o *butler.NetworkPool) { o.Spec.Ranges[1].End = "10.40.4.10" }, []fieldErr{invalid("spec.ranges[1].end")}},
		{"range wholly outside", func(o *butler.NetworkPool) {
			o.Spec.Ranges[1] = butler.AddressRange{Start: "10.50.0.1", End: "10.50.0.9"}
		}, []fieldErr{invalid("spec.ranges[1].start"), invalid("spec.ranges[1].end")}},
		{"range other family", func(o *butler.NetworkPool) { o.Spec.Ranges[1] = butler.AddressRange{Start: "fd00::1", End: "fd00::9"} }, []fieldErr{invalid("spec.ranges[1].start")}},
		{"ranges overlap", func(o *butler.NetworkPool) { o.Spec.Ranges[1].Start = "10.40.1.255" }, []fieldErr{invalid("spec.ranges[1]")}},
		{"range contained in another", func(o *butler.NetworkPool) {
			o.Spec.Ranges = append(o.Spec.Ranges, butler.AddressRange{Start: "10.40.0.100", End: "10.40.0.110"})
		}, []fieldErr{invalid("spec.ranges[2]")}},

		{"defaults below one", func(o *butler.NetworkPool) {
			o.Spec.Defaults = butler.PoolDefaults{NodesPerTenant: ptr.To[int32](0), LBPoolPerTenant: ptr.To[int32](-1)}
		}, []fieldErr{invalid("spec.defaults.nodesPerTenant"), invalid("spec.defaults.lbPoolPerTenant")}},
	})

	np := validNetworkPool()
	np.Spec.CIDR = "10.0.0.5/24"
	np.Spec.Reserved, np.Spec.Ranges = nil, nil
	expectDetail(t, ValidateNetworkPool(np), "spec.cidr", "use 10.0.0.0/24")
}

func TestValidateNetworkPoolUpdate(t *testing.T) {
	runUpdateCases(t, validNetworkPool, ValidateNetworkPoolUpdate, []updateCase[butler.NetworkPool]{
		{"grow", func(o *butler.NetworkPool) { o.Spec.CIDR = "10.40.0.0/21" }, nil},
		{"shrink (checked by IPAM, not here)", func(o *butler.NetworkPool) {
			o.Spec.CIDR = "10.40.0.0/23"
			o.Spec.Ranges = o.Spec.Ranges[:1]
		}, nil},
		{"change family", func(o *butler.NetworkPool) {
			o.Spec.CIDR = "fd00:40::/64"
			o.Spec.Reserved, o.Spec.Ranges = nil, nil
		}, []fieldErr{invalid("spec.cidr")}},
		{"spec rules apply", func(o *butler.NetworkPool) { o.Spec.CIDR = "10.40.0.0/24" }, []fieldErr{invalid("spec.ranges[0].end"), invalid("spec.ranges[1].start"), invalid("spec.ranges[1].end")}},
	})
}

func TestValidateNetworkPoolStatusUpdate(t *testing.T) {
	runUpdateCases(t, validNetworkPool, ValidateNetworkPoolStatusUpdate, []updateCase[butler.NetworkPool]{
		{"computed", func(o *butler.NetworkPool) {
			o.Status = butler.NetworkPoolStatus{TotalIPs: 1008, AllocatedIPs: 13, AvailableIPs: 995, AllocationCount: 2, FragmentationPercent: 1, LargestFreeBlock: 984}
		}, nil},
		{"negative", func(o *butler.NetworkPool) {
			o.Status = butler.NetworkPoolStatus{TotalIPs: -1, AllocatedIPs: -1, AvailableIPs: -1, AllocationCount: -1, LargestFreeBlock: -1}
		}, []fieldErr{
			invalid("status.totalIPs"), invalid("status.allocatedIPs"), invalid("status.availableIPs"),
			invalid("status.allocationCount"), invalid("status.largestFreeBlock"),
		}},
		{"fragmentation above 100", func(o *butler.NetworkPool) { o.Status.FragmentationPercent = 101 }, []fieldErr{invalid("status.fragmentationPercent")}},
	})
}

func validIPAllocation() *butler.IPAllocation {
	return &butler.IPAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: "prod-nodes", Namespace: "butler-system", ResourceVersion: "1"},
		Spec: butler.IPAllocationSpec{
			PoolRef:          butler.LocalObjectReference{Name: "lab"},
			TenantClusterRef: &butler.NamespacedObjectReference{Name: "prod", Namespace: "team-a"},
			Type:             butler.IPAllocationNodes,
			Count:            ptr.To[int32](5),
		},
	}
}

func pinned(start, end string) func(*butler.IPAllocation) {
	return func(o *butler.IPAllocation) {
		o.Spec.Count = nil
		o.Spec.PinnedRange = &butler.PinnedRange{StartAddress: start, EndAddress: end}
	}
}

func TestValidateIPAllocation(t *testing.T) {
	runCreateCases(t, validIPAllocation, ValidateIPAllocation, []createCase[butler.IPAllocation]{
		{"cluster scoped", func(o *butler.IPAllocation) { o.Namespace = "" }, []fieldErr{required("metadata.namespace")}},
		{"pinned range", pinned("10.40.0.100", "10.40.0.107"), nil},
		{"pinned IPv6 range", pinned("fd00::10", "fd00::1f"), nil},
		{"load balancer without tenant", func(o *butler.IPAllocation) {
			o.Spec.Type, o.Spec.TenantClusterRef = butler.IPAllocationLoadBalancer, nil
		}, nil},
		{"no pool", func(o *butler.IPAllocation) { o.Spec.PoolRef.Name = "" }, []fieldErr{required("spec.poolRef.name")}},
		{"bad pool name", func(o *butler.IPAllocation) { o.Spec.PoolRef.Name = "Lab Pool" }, []fieldErr{invalid("spec.poolRef.name")}},
		{"no type", func(o *butler.IPAllocation) { o.Spec.Type = "" }, []fieldErr{required("spec.type")}},
		{"unknown type", func(o *butler.IPAllocation) { o.Spec.Type = "pods" }, []fieldErr{notSupp("spec.type")}},
		{"count and pinned range", func(o *butler.IPAllocation) {
			o.Spec.PinnedRange = &butler.PinnedRange{StartAddress: "10.40.0.100", EndAddress: "10.40.0.107"}
		}, []fieldErr{forbidden("spec")}},
		{"neither count nor pinned range", func(o *butler.IPAllocation) { o.Spec.Count = nil }, []fieldErr{required("spec")}},
		{"zero count", func(o *butler.IPAllocation) { o.Spec.Count = ptr.To[int32](0) }, []fieldErr{invalid("spec.count")}},
		{"pinned reversed", pinned("10.40.0.107", "10.40.0.100"), []fieldErr{invalid("spec.pinnedRange.endAddress")}},
		{"pinned mixed family", pinned("10.40.0.100", "fd00::1"), []fieldErr{invalid("spec.pinnedRange.endAddress")}},
		{"pinned bad addresses", pinned("10.40.0", ""), []fieldErr{invalid("spec.pinnedRange.startAddress"), required("spec.pinnedRange.endAddress")}},
		{"tenant without name", func(o *butler.IPAllocation) { o.Spec.TenantClusterRef.Name = "" }, []fieldErr{required("spec.tenantClusterRef.name")}},
	})
}

func TestValidateIPAllocationUpdate(t *testing.T) {
	runUpdateCases(t, validIPAllocation, ValidateIPAllocationUpdate, []updateCase[butler.IPAllocation]{
		{"labels may change", func(o *butler.IPAllocation) { o.Labels = map[string]string{"tenant": "prod"} }, nil},
		{"count", func(o *butler.IPAllocation) { o.Spec.Count = ptr.To[int32](6) }, []fieldErr{forbidden("spec")}},
		{"pool", func(o *butler.IPAllocation) { o.Spec.PoolRef.Name = "other" }, []fieldErr{forbidden("spec")}},
		{"tenant", func(o *butler.IPAllocation) { o.Spec.TenantClusterRef = nil }, []fieldErr{forbidden("spec")}},
	})
	obj, old := validIPAllocation(), validIPAllocation()
	obj.Spec.Type = butler.IPAllocationLoadBalancer
	expectDetail(t, ValidateIPAllocationUpdate(obj, old), "spec", "spec is immutable")
}

func TestValidateIPAllocationStatusUpdate(t *testing.T) {
	forbidden := []fieldErr{{field.ErrorTypeForbidden, "status"}}
	runUpdateCases(t, validIPAllocation, ValidateIPAllocationStatusUpdate, []updateCase[butler.IPAllocation]{
		{"message", func(o *butler.IPAllocation) { o.Status.Message = "held for the prod load balancer" }, nil},
		{"addresses", func(o *butler.IPAllocation) {
			o.Status = butler.IPAllocationStatus{Phase: butler.IPAllocationAllocated, StartAddress: "10.40.0.16", EndAddress: "10.40.0.20",
				Addresses: []string{"10.40.0.16"}, AllocatedCount: 5}
		}, forbidden},
		{"phase", func(o *butler.IPAllocation) { o.Status.Phase = butler.IPAllocationReleased }, forbidden},
		{"count", func(o *butler.IPAllocation) { o.Status.AllocatedCount = 7 }, forbidden},
	})
}
