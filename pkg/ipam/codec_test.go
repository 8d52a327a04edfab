package ipam

import (
	"bytes"
	"encoding/hex"
	"errors"
	"net/netip"
	"slices"
	"testing"
)

func TestBlockEncodingIsPinned(t *testing.T) {
	// The format is stored; a change to it must be deliberate (and bump the version).
	b := Block{Prefix: mustPrefix(t, "10.0.0.0/24"), Segments: []Segment{seg(t, "10.0.0.1-10.0.0.4", false, false), seg(t, "10.0.0.10", false, false)}}
	data, err := b.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	// version 1, family 4, 10.0.0.0, /24, flags 0, 2 segments, (gap 1, size-1 3), (gap 5, size-1 0)
	const want = "01040a0000001800020103" + "0500"
	if got := hex.EncodeToString(data); got != want {
		t.Fatalf("encoding %s, want %s", got, want)
	}
}

func TestBlockRoundTrip(t *testing.T) {
	blocks := []Block{
		{Prefix: mustPrefix(t, "10.0.0.0/24")},
		{Prefix: mustPrefix(t, "10.0.1.0/24"), Segments: []Segment{seg(t, "10.0.1.0-10.0.1.255", true, true)}},
		{Prefix: mustPrefix(t, "10.0.2.0/24"), Segments: []Segment{seg(t, "10.0.2.0-10.0.2.5", true, false), seg(t, "10.0.2.6", false, false), seg(t, "10.0.2.200-10.0.2.255", false, true)}},
		{Prefix: mustPrefix(t, "2001:db8::/64"), Segments: []Segment{seg(t, "2001:db8::1-2001:db8::ffff", false, false), seg(t, "2001:db8::ffff:ffff:ffff:0-2001:db8::ffff:ffff:ffff:ffff", false, true)}},
		{Prefix: mustPrefix(t, "2001:db8::/64"), Segments: []Segment{seg(t, "2001:db8::-2001:db8::ffff:ffff:ffff:ffff", true, true)}},
		{Prefix: mustPrefix(t, "255.255.255.255/32"), Segments: []Segment{seg(t, "255.255.255.255", false, false)}},
	}
	for _, b := range blocks {
		data, err := b.MarshalBinary()
		if err != nil {
			t.Fatalf("%s: %v", b.Prefix, err)
		}
		var got Block
		if err := got.UnmarshalBinary(data); err != nil {
			t.Fatalf("%s: %v", b.Prefix, err)
		}
		if got.Prefix != b.Prefix || !slices.Equal(got.Segments, b.Segments) {
			t.Fatalf("round trip of %v gave %v", b, got)
		}
		again, _ := got.MarshalBinary()
		if !bytes.Equal(again, data) {
			t.Fatalf("%s: encoding is not deterministic", b.Prefix)
		}
	}
}

func TestBlockDecodeCorrupt(t *testing.T) {
	good, _ := Block{Prefix: mustPrefix(t, "10.0.0.0/24"), Segments: []Segment{seg(t, "10.0.0.1-10.0.0.4", false, false), seg(t, "10.0.0.10", false, false)}}.MarshalBinary()
	mod := func(f func([]byte) []byte) []byte { return f(slices.Clone(good)) }
	cases := map[string][]byte{
		"empty":                                 nil,
		"version 2":                             mod(func(b []byte) []byte { b[0] = 2; return b }),
		"family 5":                              mod(func(b []byte) []byte { b[1] = 5; return b }),
		"prefix length 33":                      mod(func(b []byte) []byte { b[6] = 33; return b }),
		"address with host bits":                mod(func(b []byte) []byte { b[5] = 1; return b }),
		"unknown flag":                          mod(func(b []byte) []byte { b[7] = 4; return b }),
		"FromPrev not at start":                 mod(func(b []byte) []byte { b[7] = flagFromPrev; return b }),
		"truncated":                             good[:len(good)-1],
		"trailing byte":                         append(slices.Clone(good), 0),
		"segment starts past the block":         {1, 4, 10, 0, 0, 0, 24, 0, 2, 1, 3, 0xff, 0x01, 0},
		"segment ends past the block":           {1, 4, 10, 0, 0, 0, 24, 0, 1, 0xfa, 0x01, 10}, // first 250, last 260
		"truncated header":                      good[:5],
		"too many segments":                     mod(func(b []byte) []byte { b[8] = 0x7f; return b }),
		"flags without segments":                {1, 4, 10, 0, 0, 0, 24, flagToNext, 0},
		"segment after the end of a full block": {1, 4, 10, 0, 0, 0, 24, 0, 2, 0, 0xff, 0x01, 0, 0},
		"segment after the end of a 2^64 block": append(append([]byte{1, 6}, mustPrefix(t, "2001:db8::/64").Addr().AsSlice()...),
			64, 0, 2, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0),
		"ToNext not at the end": {1, 4, 10, 0, 0, 0, 24, flagToNext, 1, 0, 3},
	}
	for name, data := range cases {
		var b Block
		var ce *CorruptError
		err := b.UnmarshalBinary(data)
		if !errors.As(err, &ce) {
			t.Errorf("%s: UnmarshalBinary = %v, want a CorruptError", name, err)
		}
	}
}

func TestAllocatorRoundTrip(t *testing.T) {
	cases := []struct {
		spec   Spec
		counts []uint64
	}{
		{Spec{CIDR: "10.0.0.0/8", Reserved: []string{"10.1.0.0/16"}}, []uint64{1, 5, 300, 65536, 7, 1 << 20}},
		{Spec{CIDR: "2001:db8::/64", Ranges: []AddressRange{{"2001:db8::ffff:ffff:ffff:ff00", "2001:db8::ffff:ffff:ffff:ffff"}}}, []uint64{1, 2, 100, 153}},
		{Spec{CIDR: "2001:db8::/64"}, []uint64{1 << 40, 3, 1 << 62}},
		{Spec{CIDR: "10.0.0.0/24"}, nil},
	}
	for _, tc := range cases {
		a := newTestAllocator(t, tc.spec)
		var held []Range
		for _, c := range tc.counts {
			r, err := a.Allocate(c)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, r)
		}
		if len(held) > 2 {
			if err := a.Release(held[1]); err != nil {
				t.Fatal(err)
			}
		}
		data, err := a.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		b, err := UnmarshalAllocator(a.Pool(), data)
		if err != nil {
			t.Fatalf("%s: %v", tc.spec.CIDR, err)
		}
		if !slices.Equal(b.Allocations(), a.Allocations()) || !slices.Equal(b.FreeRanges(), a.FreeRanges()) || b.Status() != a.Status() {
			t.Fatalf("%s: round trip changed the state", tc.spec.CIDR)
		}
		again, _ := b.MarshalBinary()
		if !bytes.Equal(again, data) {
			t.Fatalf("%s: encoding is not deterministic", tc.spec.CIDR)
		}
		t.Logf("%s: %d allocations in %d bytes", tc.spec.CIDR, a.Count(), len(data))
	}
}

func TestUnmarshalAllocatorUnderAGrownCIDR(t *testing.T) {
	a := newTestAllocator(t, Spec{CIDR: "10.0.1.0/24"}, "10.0.1.10-10.0.1.20")
	data, _ := a.MarshalBinary()
	b, err := UnmarshalAllocator(MustNewPool(Spec{CIDR: "10.0.0.0/23"}), data)
	if err != nil || !slices.Equal(b.Allocations(), rgs(t, "10.0.1.10-10.0.1.20")) {
		t.Fatalf("UnmarshalAllocator under a grown cidr = %v, %v", b, err)
	}
	var se *StrandedError
	if _, err := UnmarshalAllocator(MustNewPool(Spec{CIDR: "10.0.1.0/28"}), data); !errors.As(err, &se) {
		t.Fatalf("UnmarshalAllocator under a shrunk cidr = %v", err)
	}
}

func TestMarshalBlockMatchesBlock(t *testing.T) {
	a, _ := fragmentedPool(t, Spec{CIDR: "10.0.0.0/12"}, 2000)
	for _, bits := range []int{8, 12, 16, 20, 24} {
		for p := range BlocksOf(PrefixRange(a.Pool().Prefix()), bits) {
			fast, err := a.MarshalBlock(p)
			if err != nil {
				t.Fatal(err)
			}
			b, err := a.Block(p)
			if err != nil {
				t.Fatal(err)
			}
			slow, err := b.MarshalBinary()
			if err != nil || !bytes.Equal(fast, slow) {
				t.Fatalf("block %s: MarshalBlock and Block.MarshalBinary differ (%v)", p, err)
			}
		}
	}
}

func TestNewAllocatorFromBlocks(t *testing.T) {
	a, _ := fragmentedPool(t, Spec{CIDR: "10.0.0.0/12"}, 3000)
	var blocks [][]byte
	for p := range BlocksOf(PrefixRange(a.Pool().Prefix()), 16) {
		data, err := a.MarshalBlock(p)
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, data)
	}
	slices.Reverse(blocks)
	b, err := NewAllocatorFromBlocks(a.Pool(), blocks...)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.Allocations(), a.Allocations()) || b.Status() != a.Status() {
		t.Fatal("rebuilding from blocks changed the state")
	}
	// An allocation that spans blocks, with one of its blocks missing.
	c := newTestAllocator(t, Spec{CIDR: "10.0.0.0/22"}, "10.0.0.250-10.0.2.5")
	var parts [][]byte
	for _, p := range []string{"10.0.0.0/24", "10.0.2.0/24"} {
		data, _ := c.MarshalBlock(mustPrefix(t, p))
		parts = append(parts, data)
	}
	var ce *CorruptError
	if _, err := NewAllocatorFromBlocks(c.Pool(), parts...); !errors.As(err, &ce) {
		t.Fatalf("missing block: %v", err)
	}
	// Blocks of a pool whose cidr has since shrunk.
	whole, _ := c.MarshalBinary()
	var se *StrandedError
	if _, err := NewAllocatorFromBlocks(MustNewPool(Spec{CIDR: "10.0.0.0/23"}), whole); !errors.As(err, &se) ||
		!slices.Equal(rangeStrings(se.Ranges), []string{"10.0.0.250-10.0.2.5"}) {
		t.Fatalf("shrunk cidr: %v", err)
	}
	if _, err := NewAllocatorFromBlocks(MustNewPool(Spec{CIDR: "2001:db8::/64"}), whole); !errors.As(err, &se) {
		t.Fatalf("other family: %v", err)
	}
}

// FuzzDecodeBlock feeds arbitrary bytes to the decoder, as a corrupted store might: it
// must fail cleanly or return a block that encodes back to a canonical form decoding to
// itself.
func FuzzDecodeBlock(f *testing.F) {
	for _, b := range []Block{
		{Prefix: netip.MustParsePrefix("10.0.0.0/24"), Segments: []Segment{{Range: Range{netip.MustParseAddr("10.0.0.0"), netip.MustParseAddr("10.0.0.4")}, FromPrev: true}}},
		{Prefix: netip.MustParsePrefix("2001:db8::/64"), Segments: []Segment{{Range: Range{netip.MustParseAddr("2001:db8::5"), netip.MustParseAddr("2001:db8::ffff:ffff:ffff:ffff")}, ToNext: true}}},
		{Prefix: netip.MustParsePrefix("10.0.0.0/16")},
	} {
		data, err := b.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var b Block
		if err := b.UnmarshalBinary(data); err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a CorruptError", err)
			}
			return
		}
		again, err := b.MarshalBinary()
		if err != nil {
			t.Fatalf("a decoded block does not encode: %v", err)
		}
		var c Block
		if err := c.UnmarshalBinary(again); err != nil || c.Prefix != b.Prefix || !slices.Equal(c.Segments, b.Segments) {
			t.Fatalf("re-encoding changed the block: %v", err)
		}
	})
}
