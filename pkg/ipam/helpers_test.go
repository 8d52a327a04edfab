package ipam

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// rg parses "a" or "a-b" into a Range.
func rg(t testing.TB, s string) Range {
	t.Helper()
	first, last, ok := strings.Cut(s, "-")
	if !ok {
		last = first
	}
	r, err := ParseRange(first, last)
	if err != nil {
		t.Fatalf("bad range %q in test: %v", s, err)
	}
	return r
}

func rgs(t testing.TB, ss ...string) []Range {
	t.Helper()
	out := make([]Range, len(ss))
	for i, s := range ss {
		out[i] = rg(t, s)
	}
	return out
}

func rangeStrings(rs []Range) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out
}

// newTestAllocator builds a pool from spec and pins the given ranges in it.
func newTestAllocator(t testing.TB, spec Spec, pinned ...string) *Allocator {
	t.Helper()
	p, err := NewPool(spec)
	if err != nil {
		t.Fatalf("NewPool(%+v): %v", spec, err)
	}
	a, err := NewAllocator(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range pinned {
		if err := a.AllocateRange(rg(t, s)); err != nil {
			t.Fatalf("pin %s: %v", s, err)
		}
	}
	return a
}

// checkConsistent checks that the allocator's views agree: free runs and allocations
// partition the free0 offsets, both free trees hold the same runs, counters add up, and
// rebuilding from the allocations gives the same state.
func checkConsistent(t testing.TB, a *Allocator) {
	t.Helper()
	free := a.FreeRanges()
	var bySize []Range
	a.bySize.all(func(s span) bool { bySize = append(bySize, a.pool.rangeOf(s)); return true })
	slices.SortFunc(bySize, func(x, y Range) int { return x.First.Compare(y.First) })
	if !slices.Equal(free, bySize) {
		t.Fatalf("free runs by start %v and by size %v differ", free, bySize)
	}
	for i := 1; i < len(free); i++ {
		if free[i-1].Last.Next() == free[i].First {
			t.Fatalf("free runs %s and %s touch but were not joined", free[i-1], free[i])
		}
	}
	var freeCount, allocCount uint64
	for _, r := range free {
		n, _ := r.Count()
		freeCount += n
	}
	allocs := a.Allocations()
	for _, r := range allocs {
		n, _ := r.Count()
		allocCount += n
	}
	if freeCount != a.Free() || allocCount != a.Allocated() || freeCount+allocCount != a.Total() {
		t.Fatalf("free %d (counted %d) + allocated %d (counted %d) != total %d", a.Free(), freeCount, a.Allocated(), allocCount, a.Total())
	}
	b, err := NewAllocator(a.pool, allocs)
	if err != nil {
		t.Fatalf("rebuild from allocations: %v", err)
	}
	if !slices.Equal(b.FreeRanges(), free) || b.Status() != a.Status() {
		t.Fatalf("rebuilt allocator differs")
	}
}

func mustPrefix(t testing.TB, s string) netip.Prefix {
	t.Helper()
	p, err := netip.ParsePrefix(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
