package ipam

import (
	"math/rand/v2"
	"testing"
)

// benchSizes is a mix of request sizes: mostly small node and load-balancer blocks, a few
// large ones.
var benchSizes = []uint64{1, 1, 1, 2, 3, 4, 5, 5, 8, 8, 16, 32, 64, 256, 1024}

// fragmentedPool returns an allocator for spec holding live allocations of varied sizes,
// made by allocating twice as many and releasing a random half, so that the free space is
// cut into thousands of holes of many sizes.
func fragmentedPool(tb testing.TB, spec Spec, live int) (*Allocator, []Range) {
	tb.Helper()
	a := newTestAllocator(tb, spec)
	r := rand.New(rand.NewPCG(1, 2))
	held := make([]Range, 0, 2*live)
	for len(held) < 2*live {
		got, err := a.Allocate(benchSizes[r.IntN(len(benchSizes))])
		if err != nil {
			tb.Fatal(err)
		}
		held = append(held, got)
	}
	r.Shuffle(len(held), func(i, j int) { held[i], held[j] = held[j], held[i] })
	for _, x := range held[live:] {
		if err := a.Release(x); err != nil {
			tb.Fatal(err)
		}
	}
	return a, a.Allocations()
}

var slash8 = Spec{CIDR: "10.0.0.0/8"}

func reportShape(b *testing.B, a *Allocator) {
	b.ReportMetric(float64(a.Count()), "allocations")
	b.ReportMetric(float64(a.free.len()), "free-runs")
}

// BenchmarkAllocateReleaseSlash8With10kLive is one best-fit allocation and its release in a
// /8 holding 10,000 live allocations; the release joins the block back, so every iteration
// starts from the same state.
func BenchmarkAllocateReleaseSlash8With10kLive(b *testing.B) {
	a, _ := fragmentedPool(b, slash8, 10000)
	i := 0
	for b.Loop() {
		got, err := a.Allocate(benchSizes[i%len(benchSizes)])
		if err != nil {
			b.Fatal(err)
		}
		if err := a.Release(got); err != nil {
			b.Fatal(err)
		}
		i++
	}
	reportShape(b, a)
}

// BenchmarkAllocateReleaseIPv6Slash64With10kLive is the same in an IPv6 /64.
func BenchmarkAllocateReleaseIPv6Slash64With10kLive(b *testing.B) {
	a, _ := fragmentedPool(b, Spec{CIDR: "2001:db8::/64"}, 10000)
	i := 0
	for b.Loop() {
		got, err := a.Allocate(benchSizes[i%len(benchSizes)])
		if err != nil {
			b.Fatal(err)
		}
		if err := a.Release(got); err != nil {
			b.Fatal(err)
		}
		i++
	}
	reportShape(b, a)
}

// BenchmarkPinReleaseSlash8With10kLive pins a free range and releases it.
func BenchmarkPinReleaseSlash8With10kLive(b *testing.B) {
	a, _ := fragmentedPool(b, slash8, 10000)
	free := a.FreeRanges()
	i := 0
	for b.Loop() {
		f := free[i%len(free)]
		pin := Range{First: f.First, Last: f.First}
		if err := a.AllocateRange(pin); err != nil {
			b.Fatal(err)
		}
		if err := a.Release(pin); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkCloneSlash8With10kLive is Clone alone: O(1), whatever the state.
func BenchmarkCloneSlash8With10kLive(b *testing.B) {
	a, _ := fragmentedPool(b, slash8, 10000)
	for b.Loop() {
		_ = a.Clone()
	}
}

// BenchmarkCloneAllocateSlash8With10kLive is what a store does per attempt: clone the cached
// allocator and allocate in the clone, which copies the tree nodes on the changed paths.
func BenchmarkCloneAllocateSlash8With10kLive(b *testing.B) {
	a, _ := fragmentedPool(b, slash8, 10000)
	i := 0
	for b.Loop() {
		c := a.Clone()
		if _, err := c.Allocate(benchSizes[i%len(benchSizes)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkRebuildSlash8With10kLive is NewAllocator from the 10,000 allocated ranges, as a
// store does after reading them back from IPAllocations.
func BenchmarkRebuildSlash8With10kLive(b *testing.B) {
	a, allocs := fragmentedPool(b, slash8, 10000)
	for b.Loop() {
		if _, err := NewAllocator(a.Pool(), allocs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMarshalSlash8With10kLive encodes the whole state as one block.
func BenchmarkMarshalSlash8With10kLive(b *testing.B) {
	a, _ := fragmentedPool(b, slash8, 10000)
	var n int
	for b.Loop() {
		data, err := a.MarshalBinary()
		if err != nil {
			b.Fatal(err)
		}
		n = len(data)
	}
	b.ReportMetric(float64(n), "state-bytes")
}

// BenchmarkRebuildFromBlocksSlash8With10kLive rebuilds from the pool's blocks of 2^16
// addresses, as a block store does after reading them back.
func BenchmarkRebuildFromBlocksSlash8With10kLive(b *testing.B) {
	a, _ := fragmentedPool(b, slash8, 10000)
	var blocks [][]byte
	for p := range BlocksOf(PrefixRange(a.Pool().Prefix()), DefaultBlockBits) {
		if rb, _ := a.rawBlock(p); len(rb.segs) == 0 {
			continue // a store keeps no key for an empty block
		}
		data, err := a.MarshalBlock(p)
		if err != nil {
			b.Fatal(err)
		}
		blocks = append(blocks, data)
	}
	for b.Loop() {
		if _, err := NewAllocatorFromBlocks(a.Pool(), blocks...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(blocks)), "blocks")
}

// BenchmarkUnmarshalSlash8With10kLive decodes the whole state and rebuilds the allocator.
func BenchmarkUnmarshalSlash8With10kLive(b *testing.B) {
	a, _ := fragmentedPool(b, slash8, 10000)
	data, err := a.MarshalBinary()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := UnmarshalAllocator(a.Pool(), data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBlockWritesSlash8With10kLive is an allocation plus encoding the blocks of 2^16
// addresses it touches, as a block store would write them, and the release.
func BenchmarkBlockWritesSlash8With10kLive(b *testing.B) {
	a, _ := fragmentedPool(b, slash8, 10000)
	i := 0
	var written, blocks int
	for b.Loop() {
		got, err := a.Allocate(benchSizes[i%len(benchSizes)])
		if err != nil {
			b.Fatal(err)
		}
		for p := range BlocksOf(got, DefaultBlockBits) {
			data, err := a.MarshalBlock(p)
			if err != nil {
				b.Fatal(err)
			}
			written += len(data)
			blocks++
		}
		if err := a.Release(got); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(written)/float64(i), "bytes-written/op")
	b.ReportMetric(float64(blocks)/float64(i), "blocks/op")
}
