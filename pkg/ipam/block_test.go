package ipam

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
)

func blockStrings(seq func(func(netip.Prefix) bool)) []string {
	var out []string
	for p := range seq {
		out = append(out, p.String())
	}
	return out
}

func TestBlocksOf(t *testing.T) {
	cases := []struct {
		r    string
		bits int
		want []string
	}{
		{"10.0.255.250-10.1.0.5", 16, []string{"10.0.0.0/16", "10.1.0.0/16"}},
		{"10.0.0.1-10.0.0.4", 16, []string{"10.0.0.0/16"}},
		{"10.0.0.0-10.0.0.2", 0, []string{"10.0.0.0/32", "10.0.0.1/32", "10.0.0.2/32"}},
		{"10.0.0.255-10.0.3.0", 8, []string{"10.0.0.0/24", "10.0.1.0/24", "10.0.2.0/24", "10.0.3.0/24"}},
		{"255.255.255.250-255.255.255.255", 2, []string{"255.255.255.248/30", "255.255.255.252/30"}},
		{"2001:db8::ffff-2001:db8::1:0", 16, []string{"2001:db8::/112", "2001:db8::1:0/112"}},
		{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 64, []string{"ffff:ffff:ffff:ffff::/64"}},
		{"2001:db8::-2001:db8:0:1::", 64, []string{"2001:db8::/64", "2001:db8:0:1::/64"}},
	}
	for _, tc := range cases {
		r := rg(t, tc.r)
		got := blockStrings(BlocksOf(r, tc.bits))
		if !slices.Equal(got, tc.want) {
			t.Errorf("BlocksOf(%s, %d) = %v, want %v", tc.r, tc.bits, got, tc.want)
		}
		if n, ok := BlockCount(r, tc.bits); !ok || n != uint64(len(tc.want)) {
			t.Errorf("BlockCount(%s, %d) = %d, %v; want %d", tc.r, tc.bits, n, ok, len(tc.want))
		}
	}
	if n, ok := BlockCount(rg(t, "::-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), 0); ok {
		t.Errorf("BlockCount of all IPv6 addresses = %d, want overflow", n)
	}
	if n, ok := BlockCount(rg(t, "2001:db8::-2001:db8::ffff:ffff:ffff:ffff"), 0); ok {
		t.Errorf("BlockCount of a /64 in single addresses = %d, want overflow", n)
	}
	if n, ok := BlockCount(rg(t, "2001:db8::-2001:db8::ffff:ffff:ffff:fffe"), 0); !ok || n != 1<<64-1 {
		t.Errorf("BlockCount = %d, %v", n, ok)
	}
}

func TestBlockOfRejectsBadBits(t *testing.T) {
	for _, tc := range []struct {
		addr string
		bits int
	}{{"10.0.0.1", 33}, {"10.0.0.1", -1}, {"2001:db8::1", 65}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("BlockOf(%s, %d) did not panic", tc.addr, tc.bits)
				}
			}()
			BlockOf(netip.MustParseAddr(tc.addr), tc.bits)
		}()
	}
}

func seg(t testing.TB, s string, fromPrev, toNext bool) Segment {
	return Segment{Range: rg(t, s), FromPrev: fromPrev, ToNext: toNext}
}

func TestAllocatorBlock(t *testing.T) {
	a := newTestAllocator(t, Spec{CIDR: "10.0.0.0/22"}, "10.0.0.250-10.0.2.5", "10.0.2.10-10.0.2.19", "10.0.0.1-10.0.0.9")
	cases := []struct {
		block string
		want  []Segment
	}{
		{"10.0.0.0/24", []Segment{seg(t, "10.0.0.1-10.0.0.9", false, false), seg(t, "10.0.0.250-10.0.0.255", false, true)}},
		{"10.0.1.0/24", []Segment{seg(t, "10.0.1.0-10.0.1.255", true, true)}},
		{"10.0.2.0/24", []Segment{seg(t, "10.0.2.0-10.0.2.5", true, false), seg(t, "10.0.2.10-10.0.2.19", false, false)}},
		{"10.0.2.0/29", []Segment{seg(t, "10.0.2.0-10.0.2.5", true, false)}},
		{"10.0.3.0/24", nil},
		{"10.0.8.0/24", nil},
		{"10.0.0.0/16", []Segment{seg(t, "10.0.0.1-10.0.0.9", false, false), seg(t, "10.0.0.250-10.0.2.5", false, false), seg(t, "10.0.2.10-10.0.2.19", false, false)}},
	}
	var blocks []Block
	for _, tc := range cases {
		b, err := a.Block(mustPrefix(t, tc.block))
		if err != nil {
			t.Fatalf("Block(%s): %v", tc.block, err)
		}
		if !slices.Equal(b.Segments, tc.want) {
			t.Errorf("Block(%s) = %v, want %v", tc.block, b.Segments, tc.want)
		}
		if tc.block != "10.0.2.0/29" && tc.block != "10.0.0.0/16" {
			blocks = append(blocks, b)
		}
	}
	// Stitched back in any order, the blocks give the allocations.
	slices.Reverse(blocks)
	got, err := JoinBlocks(blocks)
	if err != nil || !slices.Equal(got, a.Allocations()) {
		t.Fatalf("JoinBlocks = %v, %v; want %v", got, err, a.Allocations())
	}
	for _, bad := range []string{"10.0.0.1/24", "2001:db8::/64", "2001:db8::/63"} {
		if _, err := a.Block(netip.MustParsePrefix(bad)); err == nil {
			t.Errorf("Block(%s) did not fail", bad)
		}
	}
}

// TestBlocksPerRequest shows what a store writes for one request: the blocks the range
// overlaps, each re-encoded, and nothing else.
func TestBlocksPerRequest(t *testing.T) {
	a := newTestAllocator(t, Spec{CIDR: "10.0.0.0/8"})
	// About 420,000 addresses in 60,000 allocations: seven blocks of 2^16.
	for i := 0; i < 60000; i++ {
		if _, err := a.Allocate(uint64(1 + i%13)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := a.Allocate(70000)
	if err != nil {
		t.Fatal(err)
	}
	var written int
	var touched []netip.Prefix
	for p := range BlocksOf(r, DefaultBlockBits) {
		b, err := a.Block(p)
		if err != nil {
			t.Fatal(err)
		}
		data, err := b.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		written += len(data)
		touched = append(touched, p)
	}
	if len(touched) != 2 {
		t.Fatalf("an allocation of 70000 touched blocks %v", touched)
	}
	whole, _ := a.MarshalBinary()
	t.Logf("%d allocations: %d bytes for the whole pool, %d bytes rewritten in %d blocks for the last one", a.Count(), len(whole), written, len(touched))
	if written*4 >= len(whole) {
		t.Fatalf("block writes (%d bytes) are not under a quarter of the whole state (%d bytes)", written, len(whole))
	}
}

func TestJoinBlocksCorrupt(t *testing.T) {
	b0 := Block{Prefix: mustPrefix(t, "10.0.0.0/24"), Segments: []Segment{seg(t, "10.0.0.250-10.0.0.255", false, true)}}
	b1 := Block{Prefix: mustPrefix(t, "10.0.1.0/24"), Segments: []Segment{seg(t, "10.0.1.0-10.0.1.255", true, true)}}
	b2 := Block{Prefix: mustPrefix(t, "10.0.2.0/24"), Segments: []Segment{seg(t, "10.0.2.0-10.0.2.5", true, false)}}
	empty1 := Block{Prefix: mustPrefix(t, "10.0.1.0/24")}
	if got, err := JoinBlocks([]Block{b2, b0, b1}); err != nil || !slices.Equal(got, rgs(t, "10.0.0.250-10.0.2.5")) {
		t.Fatalf("JoinBlocks = %v, %v", got, err)
	}
	cases := map[string][]Block{
		"missing middle block":         {b0, b2},
		"empty middle block":           {b0, empty1, b2},
		"dangling at the end":          {b0, b1},
		"continuation without a start": {b1, b2},
		"overlapping blocks":           {b0, {Prefix: mustPrefix(t, "10.0.0.0/23")}},
		"segment outside its block":    {{Prefix: mustPrefix(t, "10.0.0.0/24"), Segments: []Segment{seg(t, "10.0.1.1", false, false)}}},
		"segments out of order":        {{Prefix: mustPrefix(t, "10.0.0.0/24"), Segments: []Segment{seg(t, "10.0.0.5", false, false), seg(t, "10.0.0.1", false, false)}}},
		"FromPrev not at the start":    {{Prefix: mustPrefix(t, "10.0.0.0/24"), Segments: []Segment{seg(t, "10.0.0.5", true, false)}}},
		"ToNext not at the end":        {{Prefix: mustPrefix(t, "10.0.0.0/24"), Segments: []Segment{seg(t, "10.0.0.5", false, true)}}},
		"block prefix with host bits":  {{Prefix: netip.PrefixFrom(netip.MustParseAddr("10.0.0.5"), 24)}},
	}
	for name, blocks := range cases {
		var ce *CorruptError
		if _, err := JoinBlocks(blocks); !errors.As(err, &ce) {
			t.Errorf("%s: JoinBlocks = %v, want a CorruptError", name, err)
		}
	}
}

// TestBlockWiderThanThePool covers a block that holds the whole pool with the pool not at
// its start, so that pool offsets and block offsets differ.
func TestBlockWiderThanThePool(t *testing.T) {
	a := newTestAllocator(t, Spec{CIDR: "10.0.1.0/24"}, "10.0.1.10-10.0.1.20", "10.0.1.254")
	for _, p := range []string{"10.0.0.0/16", "10.0.0.0/23", "10.0.1.0/24"} {
		b, err := a.Block(mustPrefix(t, p))
		if err != nil {
			t.Fatal(err)
		}
		want := []Segment{seg(t, "10.0.1.10-10.0.1.20", false, false), seg(t, "10.0.1.254", false, false)}
		if !slices.Equal(b.Segments, want) {
			t.Errorf("Block(%s) = %v, want %v", p, b.Segments, want)
		}
		data, err := a.MarshalBlock(mustPrefix(t, p))
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewAllocatorFromBlocks(a.Pool(), data)
		if err != nil || !slices.Equal(c.Allocations(), a.Allocations()) {
			t.Errorf("rebuilt from block %s: %v, %v", p, c, err)
		}
	}
	// A block beside the pool is empty.
	if b, err := a.Block(mustPrefix(t, "10.0.2.0/24")); err != nil || len(b.Segments) != 0 {
		t.Errorf("Block beside the pool = %v, %v", b, err)
	}
}
