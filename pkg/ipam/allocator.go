package ipam

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
)

// Allocator hands out the addresses of one Pool. Its state is two views of the free runs
// (by address, to coalesce on release and check pinned ranges; by size, for best fit) and
// the allocations by address, all in copy-on-write B-trees: memory and time grow with the
// number of runs, never with the size of the pool.
//
// An Allocator is not safe for concurrent changes. Clone and the read-only methods may run
// concurrently with one another; a store keeps one allocator per pool as a cache and clones
// it for each attempt, so that a failed compare-and-swap simply drops the clone.
type Allocator struct {
	pool      *Pool
	free      tree // free runs by start
	bySize    tree // the same runs by size, then start
	allocs    tree // allocations by start
	allocated uint64
}

func newAllocator(p *Pool) *Allocator {
	a := &Allocator{pool: p}
	a.free.init(byStart)
	a.bySize.init(bySize)
	a.allocs.init(byStart)
	return a
}

// NewAllocator returns an allocator for p holding the given allocations, as read back from
// stored IPAllocations or blocks. It fails with *StrandedError if an allocation is not
// allocatable in p (see Stranded) and with *OverlapError if two allocations share an
// address: either means the stored state breaks an invariant, which a caller must surface
// rather than paper over. It costs O(n log n) for n allocations.
func NewAllocator(p *Pool, allocated []Range) (*Allocator, error) {
	spans := make([]span, 0, len(allocated))
	var stranded []Range
	for _, r := range allocated {
		s, ok := p.spanOf(r)
		if !ok {
			stranded = append(stranded, r)
			continue
		}
		spans = append(spans, s)
	}
	return newAllocatorFromSpans(p, spans, stranded)
}

// newAllocatorFromSpans builds an allocator holding spans, offsets inside p's CIDR, after
// checking that each is allocatable and that none overlap. stranded are allocations
// already found outside the CIDR. It may reorder spans.
func newAllocatorFromSpans(p *Pool, spans []span, stranded []Range) (*Allocator, error) {
	for _, s := range spans {
		if !p.allocatable(s) {
			stranded = append(stranded, p.rangeOf(s))
		}
	}
	if len(stranded) > 0 {
		slices.SortFunc(stranded, func(x, y Range) int { return x.First.Compare(y.First) })
		return nil, &StrandedError{Pool: p.prefix, Ranges: stranded}
	}
	// Stored allocations usually come back in address order; sorting is then skipped.
	if !slices.IsSortedFunc(spans, compareLo) {
		slices.SortFunc(spans, compareLo)
	}
	var total uint64
	for i, s := range spans {
		if i > 0 && s.lo <= spans[i-1].hi {
			return nil, &OverlapError{A: p.rangeOf(spans[i-1]), B: p.rangeOf(s)}
		}
		total += s.size()
	}
	free := subtractSpans(p.free0, spans)
	a := newAllocator(p)
	a.allocs.build(spans)
	a.free.build(free)
	slices.SortFunc(free, compareSize)
	a.bySize.build(free)
	a.allocated = total
	return a, nil
}

// compareSize is the bySize order as a comparison function.
func compareSize(x, y span) int {
	if sx, sy := x.hi-x.lo, y.hi-y.lo; sx != sy {
		if sx < sy {
			return -1
		}
		return 1
	}
	return cmp.Compare(x.lo, y.lo)
}

// Pool returns the pool the allocator hands out.
func (a *Allocator) Pool() *Pool { return a.pool }

// Clone returns an independent copy in O(1): the copy and the original share their tree
// nodes until either changes one, and then only the nodes on the changed paths are copied.
func (a *Allocator) Clone() *Allocator {
	c := &Allocator{pool: a.pool, allocated: a.allocated}
	a.free.cloneInto(&c.free)
	a.bySize.cloneInto(&c.bySize)
	a.allocs.cloneInto(&c.allocs)
	return c
}

// ErrZeroCount is returned for a request of no addresses.
var ErrZeroCount = errors.New("count must be at least 1")

// Allocate reserves count contiguous addresses by best fit: in the smallest free run that
// holds count, the lowest such run among equally small ones, at the run's lowest addresses.
// Taking the low end of the tightest run keeps large runs whole for large requests. When no
// run is large enough it returns *ExhaustedError. O(log n) in the number of runs.
func (a *Allocator) Allocate(count uint64) (Range, error) {
	if count == 0 {
		return Range{}, ErrZeroCount
	}
	// bySize orders by hi-lo = size-1, then lo: the first run at or after (size count,
	// offset 0) is the best fit.
	run, ok := a.bySize.ceil(span{0, count - 1})
	if !ok {
		return Range{}, &ExhaustedError{Requested: count, LargestFreeBlock: a.LargestFreeBlock(), Free: a.Free()}
	}
	got := span{run.lo, run.lo + count - 1}
	a.take(run, got)
	return a.pool.rangeOf(got), nil
}

// AllocateRange reserves exactly r, a pinned range. r must lie inside one allocatable range
// of the pool (*OutOfRangeError otherwise) and be entirely free (*ConflictError naming the
// lowest reserved CIDR or allocation it overlaps otherwise).
func (a *Allocator) AllocateRange(r Range) error {
	s, ok := a.pool.spanOf(r)
	if !ok || containing(a.pool.ranges, s) < 0 {
		return &OutOfRangeError{Requested: r, Pool: a.pool.prefix, Ranges: a.pool.Ranges()}
	}
	if run, ok := a.free.floor(span{lo: s.lo}); ok && run.contains(s) {
		a.take(run, s)
		return nil
	}
	return a.conflict(r, s)
}

// take moves got, which lies inside the free run run, from free to allocated.
func (a *Allocator) take(run, got span) {
	a.removeFree(run)
	if got.lo > run.lo {
		a.addFree(span{run.lo, got.lo - 1})
	}
	if got.hi < run.hi {
		a.addFree(span{got.hi + 1, run.hi})
	}
	a.allocs.insert(got)
	a.allocated += got.size()
}

func (a *Allocator) addFree(s span) {
	a.free.insert(s)
	a.bySize.insert(s)
}

func (a *Allocator) removeFree(s span) {
	a.free.delete(s)
	a.bySize.delete(s)
}

// conflict explains why s, inside one allocatable range, is not free.
func (a *Allocator) conflict(r Range, s span) error {
	var best *ConflictError
	var bestLo uint64
	for _, rs := range a.pool.reserved {
		if rs.overlaps(s) {
			best, bestLo = &ConflictError{Requested: r, Conflicting: a.pool.rangeOf(rs.span), Reserved: rs.cidr}, rs.lo
			break
		}
	}
	if al, ok := a.firstAllocation(s); ok && (best == nil || al.lo < bestLo) {
		best = &ConflictError{Requested: r, Conflicting: a.pool.rangeOf(al)}
	}
	if best == nil {
		return fmt.Errorf("internal error: %s is in range and not free, yet overlaps nothing", r)
	}
	return best
}

// firstAllocation returns the lowest allocation that overlaps s.
func (a *Allocator) firstAllocation(s span) (span, bool) {
	if f, ok := a.allocs.floor(span{lo: s.lo}); ok && f.hi >= s.lo {
		return f, true
	}
	if c, ok := a.allocs.ceil(span{lo: s.lo}); ok && c.lo <= s.hi {
		return c, true
	}
	return span{}, false
}

// Release returns the addresses of r, which must be exactly one allocation (as stored in an
// IPAllocation), and joins them with free neighbours. Anything else is *NotAllocatedError:
// releasing part of an allocation, or one twice, is a caller's bug to report, not to absorb.
func (a *Allocator) Release(r Range) error {
	s, ok := a.pool.spanOf(r)
	if !ok {
		return &NotAllocatedError{Range: r}
	}
	if got, ok := a.allocs.get(s); !ok || got != s {
		return &NotAllocatedError{Range: r}
	}
	a.allocs.delete(s)
	a.allocated -= s.size()
	merged := s
	if s.lo > 0 {
		if l, ok := a.free.floor(span{lo: s.lo - 1}); ok && l.hi == s.lo-1 {
			a.removeFree(l)
			merged.lo = l.lo
		}
	}
	if s.hi < ^uint64(0) {
		if h, ok := a.free.get(span{lo: s.hi + 1}); ok {
			a.removeFree(h)
			merged.hi = h.hi
		}
	}
	a.addFree(merged)
	return nil
}

// AllocationAt returns the allocation that holds addr.
func (a *Allocator) AllocationAt(addr netip.Addr) (Range, bool) {
	off, ok := a.pool.offset(addr)
	if !ok {
		return Range{}, false
	}
	if f, ok := a.allocs.floor(span{lo: off}); ok && f.hi >= off {
		return a.pool.rangeOf(f), true
	}
	return Range{}, false
}

// Allocations returns the allocations in address order.
func (a *Allocator) Allocations() []Range { return a.collect(&a.allocs) }

// FreeRanges returns the free runs in address order.
func (a *Allocator) FreeRanges() []Range { return a.collect(&a.free) }

func (a *Allocator) collect(t *tree) []Range {
	out := make([]Range, 0, t.len())
	t.all(func(s span) bool {
		out = append(out, a.pool.rangeOf(s))
		return true
	})
	return out
}
