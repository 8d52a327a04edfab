package ipam

import (
	"math"
	"math/bits"
)

// Status holds the figures of NetworkPoolStatus, under its field names and types. The int64
// counts saturate at math.MaxInt64 (and AllocationCount at math.MaxInt32): only an IPv6
// pool of more than 2^63 addresses reaches that, and Total, Allocated, Free and
// LargestFreeBlock give the exact values.
type Status struct {
	TotalIPs             int64
	AllocatedIPs         int64
	AvailableIPs         int64
	AllocationCount      int32
	FragmentationPercent int32
	LargestFreeBlock     int64
}

// Status computes the pool's figures from the allocation state, in O(log n).
func (a *Allocator) Status() Status {
	largest := a.LargestFreeBlock()
	return Status{
		TotalIPs:             sat64(a.Total()),
		AllocatedIPs:         sat64(a.Allocated()),
		AvailableIPs:         sat64(a.Free()),
		AllocationCount:      int32(min(a.allocs.len(), math.MaxInt32)),
		FragmentationPercent: fragmentation(largest, a.Free()),
		LargestFreeBlock:     sat64(largest),
	}
}

// Total returns the number of addresses the pool may hand out.
func (a *Allocator) Total() uint64 { return a.pool.total }

// Allocated returns the number of addresses held by allocations.
func (a *Allocator) Allocated() uint64 { return a.allocated }

// Free returns the number of addresses that may still be handed out.
func (a *Allocator) Free() uint64 { return a.pool.total - a.allocated }

// Count returns the number of allocations.
func (a *Allocator) Count() int { return a.allocs.len() }

// LargestFreeBlock returns the size of the largest free run: the most one request can get.
func (a *Allocator) LargestFreeBlock() uint64 {
	if s, ok := a.bySize.max(); ok {
		return s.size()
	}
	return 0
}

// fragmentation is 100 - largest*100/free, rounded as integer division does, and 0 when
// nothing is free. The product is taken in 128 bits: largest*100 overflows 64 bits in big
// IPv6 pools.
func fragmentation(largest, free uint64) int32 {
	if free == 0 {
		return 0
	}
	hi, lo := bits.Mul64(largest, 100)
	q, _ := bits.Div64(hi, lo, free)
	return int32(100 - q)
}

func sat64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}
