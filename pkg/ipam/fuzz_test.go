package ipam

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
)

// The fuzz test drives an Allocator and a deliberately naive model side by side: a pool
// seen through a window of 256 addresses, one slot per address, searched linearly. Every
// result, error and status figure must agree after every step. The window is wide enough
// for the allocator's B-trees to grow past one node.

const window = 256

// fuzzPools are the pools the fuzz input picks from, each with the window the model covers
// and the window offsets that are network or broadcast addresses.
var fuzzPools = []struct {
	cidr  string
	base  string // the window's first address
	edges []int
	// needRanges: the pool is wider than the window, so the spec must confine it.
	needRanges bool
}{
	{"10.0.0.0/24", "10.0.0.0", []int{0, 255}, false},
	{"2001:db8::/120", "2001:db8::", []int{0}, false},
	{"2001:db8::/64", "2001:db8::ffff:ffff:ffff:ff00", nil, true}, // offsets near 2^64
	{"255.255.255.0/24", "255.255.255.0", []int{0, 255}, false},   // the top of IPv4
}

type fuzzBytes struct{ data []byte }

func (f *fuzzBytes) next() int {
	if len(f.data) == 0 {
		return 0
	}
	b := f.data[0]
	f.data = f.data[1:]
	return int(b)
}

type modelAlloc struct{ lo, hi int }

type model struct {
	base      netip.Addr
	inRange   [window]bool // inside one allocatable range (network/broadcast excluded)
	reserved  [window]bool
	owner     [window]int // 0 free, else an allocation id
	allocs    map[int]modelAlloc
	reservedC []netip.Prefix
	nextID    int
}

func (m *model) clone() *model {
	c := *m
	c.allocs = make(map[int]modelAlloc, len(m.allocs))
	for k, v := range m.allocs {
		c.allocs[k] = v
	}
	return &c
}

func (m *model) addr(i int) netip.Addr { return u128Of(m.base).addU64(uint64(i)).addr(m.base.Is4()) }
func (m *model) rng(lo, hi int) Range  { return Range{First: m.addr(lo), Last: m.addr(hi)} }

func (m *model) free(i int) bool { return m.inRange[i] && !m.reserved[i] && m.owner[i] == 0 }

// runs returns the free runs in address order.
func (m *model) runs() []modelAlloc {
	var out []modelAlloc
	for i := 0; i < window; i++ {
		if !m.free(i) {
			continue
		}
		j := i
		for j+1 < window && m.free(j+1) {
			j++
		}
		out = append(out, modelAlloc{i, j})
		i = j
	}
	return out
}

func (m *model) bestFit(count int) (modelAlloc, bool) {
	best, ok := modelAlloc{}, false
	for _, r := range m.runs() {
		if n := r.hi - r.lo + 1; n >= count && (!ok || n < best.hi-best.lo+1) {
			best, ok = r, true
		}
	}
	return modelAlloc{best.lo, best.lo + count - 1}, ok
}

func (m *model) take(lo, hi int) Range {
	m.nextID++
	for i := lo; i <= hi; i++ {
		m.owner[i] = m.nextID
	}
	m.allocs[m.nextID] = modelAlloc{lo, hi}
	return m.rng(lo, hi)
}

func (m *model) status() Status {
	var s Status
	for i := 0; i < window; i++ {
		if m.inRange[i] && !m.reserved[i] {
			s.TotalIPs++
			if m.owner[i] != 0 {
				s.AllocatedIPs++
			}
		}
	}
	s.AvailableIPs = s.TotalIPs - s.AllocatedIPs
	s.AllocationCount = int32(len(m.allocs))
	for _, r := range m.runs() {
		s.LargestFreeBlock = max(s.LargestFreeBlock, int64(r.hi-r.lo+1))
	}
	if s.AvailableIPs > 0 {
		s.FragmentationPercent = int32(100 - s.LargestFreeBlock*100/s.AvailableIPs)
	}
	return s
}

func (m *model) allocations() []Range {
	var out []Range
	for _, a := range m.allocs {
		out = append(out, m.rng(a.lo, a.hi))
	}
	slices.SortFunc(out, func(x, y Range) int { return x.First.Compare(y.First) })
	return out
}

func (m *model) freeRanges() []Range {
	var out []Range
	for _, r := range m.runs() {
		out = append(out, m.rng(r.lo, r.hi))
	}
	return out
}

// expectPin returns what pinning lo..hi must do: nil, *OutOfRangeError or *ConflictError
// naming the lowest reserved CIDR (the widest among equals) or allocation in the way.
func (m *model) expectPin(lo, hi int) error {
	for i := lo; i <= hi; i++ {
		if !m.inRange[i] {
			return &OutOfRangeError{}
		}
	}
	var best *ConflictError
	for _, c := range m.reservedC {
		cr := PrefixRange(c)
		if !cr.Overlaps(m.rng(lo, hi)) {
			continue
		}
		if best == nil || cr.First.Less(best.Conflicting.First) || (cr.First == best.Conflicting.First && c.Bits() < best.Reserved.Bits()) {
			best = &ConflictError{Conflicting: cr, Reserved: c}
		}
	}
	for i := lo; i <= hi; i++ {
		if id := m.owner[i]; id != 0 {
			a := m.allocs[id]
			if best == nil || m.addr(a.lo).Less(best.Conflicting.First) {
				best = &ConflictError{Conflicting: m.rng(a.lo, a.hi)}
			}
			break
		}
	}
	if best != nil {
		return best
	}
	return nil
}

// newFuzzPool reads a pool and its model from the input.
func newFuzzPool(t *testing.T, in *fuzzBytes) (*Pool, *model) {
	fp := fuzzPools[in.next()%len(fuzzPools)]
	m := &model{base: netip.MustParseAddr(fp.base), allocs: map[int]modelAlloc{}}
	spec := Spec{CIDR: fp.cidr}
	var inSpec [window]bool
	nr := in.next() % 4
	if nr == 0 && fp.needRanges {
		nr = 1
	}
	for k := 0; k < nr; k++ {
		s := in.next() % window
		e := min(s+in.next()%window, window-1)
		if fp.needRanges && k == 0 && nr == 1 && in.next()%2 == 0 {
			s, e = 0, window-1
		}
		spec.Ranges = append(spec.Ranges, AddressRange{m.addr(s).String(), m.addr(e).String()})
		for i := s; i <= e; i++ {
			inSpec[i] = true
		}
	}
	for i := 0; i < window; i++ {
		m.inRange[i] = nr == 0 || inSpec[i]
	}
	for _, e := range fp.edges {
		m.inRange[e] = false
	}
	for k := in.next() % 3; k > 0; k-- {
		bits := in.next() % 5
		start := (in.next() % window) &^ (1<<bits - 1)
		c := netip.PrefixFrom(m.addr(start), m.base.BitLen()-bits)
		spec.Reserved = append(spec.Reserved, c.String())
		m.reservedC = append(m.reservedC, c)
		for i := start; i < start+1<<bits; i++ {
			m.reserved[i] = true
		}
	}
	p, err := NewPool(spec)
	if err != nil {
		t.Fatalf("NewPool(%+v): %v", spec, err)
	}
	return p, m
}

func checkAgainstModel(t *testing.T, step string, a *Allocator, m *model) {
	t.Helper()
	if got, want := a.Status(), m.status(); got != want {
		t.Fatalf("%s: status %+v, model %+v", step, got, want)
	}
	if got, want := a.Allocations(), m.allocations(); !slices.Equal(got, want) {
		t.Fatalf("%s: allocations %v, model %v", step, got, want)
	}
	if got, want := a.FreeRanges(), m.freeRanges(); !slices.Equal(got, want) {
		t.Fatalf("%s: free runs %v, model %v", step, got, want)
	}
}

func runFuzzSequence(t *testing.T, data []byte) {
	in := &fuzzBytes{data: data}
	p, m := newFuzzPool(t, in)
	a, err := NewAllocator(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	type kept struct {
		a *Allocator
		m *model
	}
	var snapshots []kept
	for step := 0; len(in.data) > 0; step++ {
		var desc string
		switch op := in.next() % 10; op {
		case 0, 1, 2: // allocate
			count := 1 + in.next()%6
			if c := in.next(); c%4 == 0 {
				count += c // sometimes large, up to more than a window holds
			}
			desc = fmt.Sprintf("step %d: Allocate(%d)", step, count)
			got, err := a.Allocate(uint64(count))
			want, ok := m.bestFit(count)
			if !ok {
				st := m.status()
				var ex *ExhaustedError
				if !errors.As(err, &ex) || ex.Requested != uint64(count) || ex.LargestFreeBlock != uint64(st.LargestFreeBlock) || ex.Free != uint64(st.AvailableIPs) {
					t.Fatalf("%s = %v, %v; model: exhausted, largest %d", desc, got, err, st.LargestFreeBlock)
				}
				break
			}
			if wr := m.take(want.lo, want.hi); err != nil || got != wr {
				t.Fatalf("%s = %v, %v; model %v", desc, got, err, wr)
			}
		case 3, 4: // pin
			lo := in.next() % window
			hi := min(lo+in.next()%16, window-1)
			r := m.rng(lo, hi)
			desc = fmt.Sprintf("step %d: AllocateRange(%s)", step, r)
			err := a.AllocateRange(r)
			switch want := m.expectPin(lo, hi).(type) {
			case nil:
				if err != nil {
					t.Fatalf("%s = %v; model: ok", desc, err)
				}
				m.take(lo, hi)
			case *OutOfRangeError:
				var oe *OutOfRangeError
				if !errors.As(err, &oe) {
					t.Fatalf("%s = %v; model: out of range", desc, err)
				}
			case *ConflictError:
				var ce *ConflictError
				if !errors.As(err, &ce) || ce.Conflicting != want.Conflicting || ce.Reserved != want.Reserved {
					t.Fatalf("%s = %v; model: conflict with %s (reserved %s)", desc, err, want.Conflicting, want.Reserved)
				}
			}
		case 5, 6: // release a live allocation
			if len(m.allocs) == 0 {
				continue
			}
			ids := make([]int, 0, len(m.allocs))
			for id := range m.allocs {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			id := ids[in.next()%len(ids)]
			al := m.allocs[id]
			desc = fmt.Sprintf("step %d: Release(%s)", step, m.rng(al.lo, al.hi))
			if err := a.Release(m.rng(al.lo, al.hi)); err != nil {
				t.Fatalf("%s = %v", desc, err)
			}
			for i := al.lo; i <= al.hi; i++ {
				m.owner[i] = 0
			}
			delete(m.allocs, id)
		case 7: // release an arbitrary range: only an exact allocation may go
			lo := in.next() % window
			hi := min(lo+in.next()%8, window-1)
			desc = fmt.Sprintf("step %d: Release(%s)", step, m.rng(lo, hi))
			err := a.Release(m.rng(lo, hi))
			id := m.owner[lo]
			if id != 0 && m.allocs[id] == (modelAlloc{lo, hi}) {
				if err != nil {
					t.Fatalf("%s = %v; model: ok", desc, err)
				}
				for i := lo; i <= hi; i++ {
					m.owner[i] = 0
				}
				delete(m.allocs, id)
			} else {
				var ne *NotAllocatedError
				if !errors.As(err, &ne) {
					t.Fatalf("%s = %v; model: not allocated", desc, err)
				}
			}
		case 8: // go on with a clone; the original must keep its state
			desc = fmt.Sprintf("step %d: continue on a clone", step)
			snapshots = append(snapshots, kept{a, m.clone()})
			a = a.Clone()
		case 9: // keep a clone; changes to the original must not reach it
			desc = fmt.Sprintf("step %d: keep a clone", step)
			snapshots = append(snapshots, kept{a.Clone(), m.clone()})
		}
		checkAgainstModel(t, desc, a, m)
	}

	for i, s := range snapshots {
		checkAgainstModel(t, fmt.Sprintf("snapshot %d", i), s.a, s.m)
	}
	checkConsistent(t, a)

	// The state survives encoding, whole and in blocks of 16 addresses.
	data, err = a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	b, err := UnmarshalAllocator(p, data)
	if err != nil {
		t.Fatalf("UnmarshalAllocator: %v", err)
	}
	checkAgainstModel(t, "after a round trip", b, m)
	var blocks []Block
	var encoded [][]byte
	for p := range BlocksOf(m.rng(0, window-1), 4) {
		blk, err := a.Block(p)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := blk.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if fast, err := a.MarshalBlock(p); err != nil || !bytes.Equal(fast, enc) {
			t.Fatalf("block %s: MarshalBlock differs from Block.MarshalBinary (%v)", p, err)
		}
		var dec Block
		if err := dec.UnmarshalBinary(enc); err != nil {
			t.Fatalf("block %s: %v", p, err)
		}
		blocks = append(blocks, dec)
		encoded = append(encoded, enc)
	}
	joined, err := JoinBlocks(blocks)
	if err != nil || !slices.Equal(joined, m.allocations()) {
		t.Fatalf("JoinBlocks = %v, %v; model %v", joined, err, m.allocations())
	}
	c, err := NewAllocatorFromBlocks(p, encoded...)
	if err != nil {
		t.Fatalf("NewAllocatorFromBlocks: %v", err)
	}
	checkAgainstModel(t, "rebuilt from blocks", c, m)
}

func FuzzAllocator(f *testing.F) {
	// Hand-written seeds: each pool with no spec extras, then one with ranges and
	// reserved CIDRs, each followed by a mix of operations.
	ops := []byte{0, 5, 0, 0, 1, 9, 0, 2, 3, 4, 2, 20, 10, 7, 0, 30, 0, 3, 1, 4, 0, 6, 0, 8, 0, 5, 9, 3, 0, 3, 1, 0, 24, 1}
	for pool := byte(0); pool < byte(len(fuzzPools)); pool++ {
		f.Add(append([]byte{pool, 0, 0}, ops...))
		f.Add(append([]byte{pool, 2, 4, 20, 40, 10, 2, 1, 8, 2, 33}, ops...))
	}
	// And pseudo-random ones, so that a plain `go test` runs long mixed sequences.
	r := rand.New(rand.NewPCG(4, 4))
	for i := 0; i < 48; i++ {
		seed := make([]byte, 64+r.IntN(512))
		for j := range seed {
			seed[j] = byte(r.Uint32())
		}
		f.Add(seed)
	}
	f.Fuzz(runFuzzSequence)
}
