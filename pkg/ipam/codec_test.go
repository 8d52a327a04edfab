package ipam

import (
	"bytes"
	"encoding/hex"
	"errors"
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
		"segment past the block":                mod(func(b []byte) []byte { b[11] = 0xf0; b[12] = 0x01; return b }),
		"too many segments":                     mod(func(b []byte) []byte { b[8] = 0x7f; return b }),
		"flags without segments":                {1, 4, 10, 0, 0, 0, 24, flagToNext, 0},
		"segment after the end of a full block": {1, 4, 10, 0, 0, 0, 24, 0, 2, 0, 0xff, 0x01, 0, 0},
	}
	for name, data := range cases {
		var b Block
		var ce *CorruptError
		if err := b.UnmarshalBinary(data); !errors.As(err, &ce) {
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
