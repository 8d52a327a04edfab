package ipam

import (
	"math"
	"testing"
)

func TestStatus(t *testing.T) {
	cases := []struct {
		name   string
		spec   Spec
		pinned []string
		want   Status
	}{
		{"empty v4 pool: one free block, no fragmentation", Spec{CIDR: "10.0.0.0/27"}, nil,
			Status{TotalIPs: 30, AvailableIPs: 30, LargestFreeBlock: 30}},
		{"three free blocks", Spec{CIDR: "10.0.0.0/27"}, []string{"10.0.0.10", "10.0.0.20"},
			// free .1-.9, .11-.19, .21-.30: 100 - 10*100/28 = 100 - 35
			Status{TotalIPs: 30, AllocatedIPs: 2, AvailableIPs: 28, AllocationCount: 2, FragmentationPercent: 65, LargestFreeBlock: 10}},
		{"full pool", Spec{CIDR: "10.0.0.0/30"}, []string{"10.0.0.1", "10.0.0.2"},
			Status{TotalIPs: 2, AllocatedIPs: 2, AllocationCount: 2}},
		{"reserved addresses count in neither total nor free", Spec{CIDR: "10.0.0.0/24", Reserved: []string{"10.0.0.0/25"}}, []string{"10.0.0.128-10.0.0.191"},
			Status{TotalIPs: 127, AllocatedIPs: 64, AvailableIPs: 63, AllocationCount: 1, LargestFreeBlock: 63}},
		{"v6 /120", Spec{CIDR: "2001:db8::/120"}, []string{"2001:db8::80-2001:db8::81"},
			// free ::1-::7f (127), ::82-::ff (126): 100 - 12700/253 = 100 - 50
			Status{TotalIPs: 255, AllocatedIPs: 2, AvailableIPs: 253, AllocationCount: 1, FragmentationPercent: 50, LargestFreeBlock: 127}},
		{"v6 /64 saturates the int64 figures", Spec{CIDR: "2001:db8::/64"}, []string{"2001:db8::8000:0:0:0"},
			// free 2^63-1 below and 2^63-1 above: largest*100/free overflows 64 bits.
			Status{TotalIPs: math.MaxInt64, AllocatedIPs: 1, AvailableIPs: math.MaxInt64, AllocationCount: 1, FragmentationPercent: 50, LargestFreeBlock: math.MaxInt64}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestAllocator(t, tc.spec, tc.pinned...)
			if got := a.Status(); got != tc.want {
				t.Fatalf("Status() = %+v\nwant       %+v", got, tc.want)
			}
		})
	}
}

func TestStatusExactFiguresForHugePools(t *testing.T) {
	a := newTestAllocator(t, Spec{CIDR: "2001:db8::/64"}, "2001:db8::8000:0:0:0")
	if a.Total() != 1<<64-1 || a.Free() != 1<<64-2 || a.LargestFreeBlock() != 1<<63-1 || a.Count() != 1 {
		t.Fatalf("total %d free %d largest %d count %d", a.Total(), a.Free(), a.LargestFreeBlock(), a.Count())
	}
}

func TestFragmentation(t *testing.T) {
	for _, tc := range []struct {
		largest, free uint64
		want          int32
	}{
		{0, 0, 0}, {10, 10, 0}, {1, 3, 67}, {2, 3, 34}, {1, 100, 99}, {1<<64 - 1, 1<<64 - 1, 0}, {1 << 62, 1<<64 - 1, 75},
	} {
		if got := fragmentation(tc.largest, tc.free); got != tc.want {
			t.Errorf("fragmentation(%d, %d) = %d, want %d", tc.largest, tc.free, got, tc.want)
		}
	}
}
