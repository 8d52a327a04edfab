package ipam

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
)

func TestAllocateBestFit(t *testing.T) {
	v4 := Spec{CIDR: "10.0.0.0/27"}    // allocatable .1-.30
	v6 := Spec{CIDR: "2001:db8::/123"} // allocatable ::1-::1f
	type step struct {
		count uint64
		want  string // "" means exhausted
	}
	cases := []struct {
		name   string
		spec   Spec
		pinned []string
		steps  []step
	}{
		{"v4 empty pool starts at the lowest host", v4, nil,
			[]step{{4, "10.0.0.1-10.0.0.4"}, {1, "10.0.0.5"}}},
		{"v4 exact fit beats a lower-addressed first fit", v4, []string{"10.0.0.3-10.0.0.10"},
			[]step{{3, "10.0.0.11-10.0.0.13"}, {2, "10.0.0.1-10.0.0.2"}}},
		{"v4 smallest run that fits", v4, []string{"10.0.0.5", "10.0.0.12-10.0.0.14"},
			// free: .1-.4 (4), .6-.11 (6), .15-.30 (16)
			[]step{{5, "10.0.0.6-10.0.0.10"}, {4, "10.0.0.1-10.0.0.4"}, {7, "10.0.0.15-10.0.0.21"}}},
		{"v4 lowest address among equally small runs", v4, []string{"10.0.0.2", "10.0.0.6", "10.0.0.10"},
			// free: .1 (1), .3-.5 (3), .7-.9 (3), .11-.30 (20)
			[]step{{2, "10.0.0.3-10.0.0.4"}, {2, "10.0.0.7-10.0.0.8"}, {1, "10.0.0.1"}, {1, "10.0.0.5"}}},
		{"v4 network and broadcast never handed out", v4, nil,
			[]step{{30, "10.0.0.1-10.0.0.30"}, {1, ""}}},
		{"v4 whole pool plus one is exhausted", v4, nil,
			[]step{{31, ""}, {30, "10.0.0.1-10.0.0.30"}}},
		{"v4 reserved never handed out", Spec{CIDR: "10.0.0.0/27", Reserved: []string{"10.0.0.8/29"}}, nil,
			// free: .1-.7 (7), .16-.30 (15)
			[]step{{8, "10.0.0.16-10.0.0.23"}, {7, "10.0.0.1-10.0.0.7"}, {8, ""}, {7, "10.0.0.24-10.0.0.30"}}},
		{"v4 ranges restrict", Spec{CIDR: "10.0.0.0/24", Ranges: []AddressRange{{"10.0.0.20", "10.0.0.25"}}}, nil,
			[]step{{7, ""}, {6, "10.0.0.20-10.0.0.25"}}},
		{"v4 ranges lose the network address", Spec{CIDR: "10.0.0.0/24", Ranges: []AddressRange{{"10.0.0.0", "10.0.0.3"}}}, nil,
			[]step{{4, ""}, {3, "10.0.0.1-10.0.0.3"}}},
		{"v4 touching ranges merge", Spec{CIDR: "10.0.0.0/24", Ranges: []AddressRange{{"10.0.0.10", "10.0.0.19"}, {"10.0.0.20", "10.0.0.29"}}}, nil,
			[]step{{20, "10.0.0.10-10.0.0.29"}}},
		{"v4 /31 hands out both addresses", Spec{CIDR: "10.0.0.0/31"}, nil,
			[]step{{2, "10.0.0.0-10.0.0.1"}}},
		{"v4 /32 hands out its address", Spec{CIDR: "10.0.0.7/32"}, nil,
			[]step{{1, "10.0.0.7"}, {1, ""}}},
		{"v6 subnet-router anycast never handed out, top address is", v6, nil,
			[]step{{32, ""}, {31, "2001:db8::1-2001:db8::1f"}}},
		{"v6 smallest run that fits", v6, []string{"2001:db8::5", "2001:db8::c-2001:db8::e"},
			[]step{{5, "2001:db8::6-2001:db8::a"}, {4, "2001:db8::1-2001:db8::4"}}},
		{"v6 lowest address among equally small runs", v6, []string{"2001:db8::2", "2001:db8::6", "2001:db8::a"},
			[]step{{2, "2001:db8::3-2001:db8::4"}, {2, "2001:db8::7-2001:db8::8"}}},
		{"v6 reserved never handed out", Spec{CIDR: "2001:db8::/123", Reserved: []string{"2001:db8::10/124"}}, nil,
			[]step{{16, ""}, {15, "2001:db8::1-2001:db8::f"}}},
		{"v6 /64 takes 2^63 then the rest", Spec{CIDR: "2001:db8::/64"}, nil,
			[]step{{1 << 63, "2001:db8::1-2001:db8::8000:0:0:0"}, {1 << 63, ""}, {1<<63 - 1, "2001:db8::8000:0:0:1-2001:db8::ffff:ffff:ffff:ffff"}}},
		{"v6 /64 whole pool in one request", Spec{CIDR: "2001:db8::/64"}, nil,
			[]step{{^uint64(0), "2001:db8::1-2001:db8::ffff:ffff:ffff:ffff"}}},
		{"v6 /127 hands out both addresses", Spec{CIDR: "2001:db8::/127"}, nil,
			[]step{{2, "2001:db8::-2001:db8::1"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestAllocator(t, tc.spec, tc.pinned...)
			for _, s := range tc.steps {
				got, err := a.Allocate(s.count)
				if s.want == "" {
					var ex *ExhaustedError
					if !errors.As(err, &ex) {
						t.Fatalf("Allocate(%d) = %v, %v; want exhausted", s.count, got, err)
					}
					continue
				}
				if err != nil || got != rg(t, s.want) {
					t.Fatalf("Allocate(%d) = %v, %v; want %s", s.count, got, err, s.want)
				}
			}
			checkConsistent(t, a)
		})
	}
}

func TestAllocateZero(t *testing.T) {
	a := newTestAllocator(t, Spec{CIDR: "10.0.0.0/24"})
	if _, err := a.Allocate(0); !errors.Is(err, ErrZeroCount) {
		t.Fatalf("Allocate(0) = %v", err)
	}
}

func TestExhaustedMessage(t *testing.T) {
	// free: .1-.9 (9), .11-.19 (9), .21-.30 (10)
	a := newTestAllocator(t, Spec{CIDR: "10.0.0.0/27"}, "10.0.0.10", "10.0.0.20")
	_, err := a.Allocate(11)
	var ex *ExhaustedError
	if !errors.As(err, &ex) || *ex != (ExhaustedError{Requested: 11, LargestFreeBlock: 10, Free: 28}) {
		t.Fatalf("Allocate(11) = %#v", err)
	}
	const want = "pool exhausted: 11 contiguous addresses requested, the largest free block holds 10 (28 free in all)"
	if err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
}

func TestAllocateRange(t *testing.T) {
	v4 := Spec{
		CIDR:     "10.0.0.0/24",
		Ranges:   []AddressRange{{"10.0.0.10", "10.0.0.99"}, {"10.0.0.150", "10.0.0.199"}},
		Reserved: []string{"10.0.0.40/29", "10.0.0.40/30"},
	}
	v6 := Spec{CIDR: "2001:db8::/120", Reserved: []string{"2001:db8::80/125"}}
	const (
		ok       = "ok"
		outside  = "out of range"
		conflict = "conflict"
	)
	cases := []struct {
		name   string
		spec   Spec
		pin    string
		want   string
		with   string // the conflicting range
		reserv string // the conflicting reserved CIDR
	}{
		{"v4 inside a range", v4, "10.0.0.10-10.0.0.19", ok, "", ""},
		{"v4 last address of a range", v4, "10.0.0.99", ok, "", ""},
		{"v4 a whole range", v4, "10.0.0.150-10.0.0.199", ok, "", ""},
		{"v4 just before a reserved CIDR", v4, "10.0.0.30-10.0.0.39", ok, "", ""},
		{"v4 in the gap between ranges", v4, "10.0.0.100-10.0.0.105", outside, "", ""},
		{"v4 across two ranges", v4, "10.0.0.95-10.0.0.155", outside, "", ""},
		{"v4 past the end of a range", v4, "10.0.0.190-10.0.0.200", outside, "", ""},
		{"v4 outside the cidr", v4, "10.0.1.5", outside, "", ""},
		{"v4 other family", v4, "2001:db8::5", outside, "", ""},
		{"v4 overlapping reserved names the widest CIDR", v4, "10.0.0.45-10.0.0.50", conflict, "10.0.0.40-10.0.0.47", "10.0.0.40/29"},
		{"v4 overlapping an allocation", v4, "10.0.0.65-10.0.0.70", conflict, "10.0.0.60-10.0.0.69", ""},
		{"v4 the lowest conflict is named: reserved", v4, "10.0.0.38-10.0.0.62", conflict, "10.0.0.40-10.0.0.47", "10.0.0.40/29"},
		{"v4 the lowest conflict is named: allocation", v4, "10.0.0.55-10.0.0.75", conflict, "10.0.0.60-10.0.0.69", ""},
		{"v4 inside an allocation", v4, "10.0.0.61", conflict, "10.0.0.60-10.0.0.69", ""},
		{"v4 network address of the whole pool", Spec{CIDR: "10.0.0.0/24"}, "10.0.0.0", outside, "", ""},
		{"v4 broadcast address of the whole pool", Spec{CIDR: "10.0.0.0/24"}, "10.0.0.250-10.0.0.255", outside, "", ""},
		{"v6 subnet-router anycast", v6, "2001:db8::-2001:db8::3", outside, "", ""},
		{"v6 top address is allocatable", v6, "2001:db8::ff", ok, "", ""},
		{"v6 overlapping reserved", v6, "2001:db8::7f-2001:db8::81", conflict, "2001:db8::80-2001:db8::87", "2001:db8::80/125"},
		{"v6 overlapping an allocation", v6, "2001:db8::12", conflict, "2001:db8::10-2001:db8::1f", ""},
		{"v6 outside the cidr", v6, "2001:db8::1:0", outside, "", ""},
		{"v6 other family", v6, "10.0.0.1", outside, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var existing []string
			if tc.spec.CIDR == v4.CIDR && len(tc.spec.Ranges) > 0 {
				existing = []string{"10.0.0.60-10.0.0.69"}
			}
			if tc.spec.CIDR == v6.CIDR {
				existing = []string{"2001:db8::10-2001:db8::1f"}
			}
			a := newTestAllocator(t, tc.spec, existing...)
			before := a.Allocations()
			err := a.AllocateRange(rg(t, tc.pin))
			switch tc.want {
			case ok:
				if err != nil {
					t.Fatalf("AllocateRange(%s) = %v", tc.pin, err)
				}
				if got, ok := a.AllocationAt(rg(t, tc.pin).First); !ok || got != rg(t, tc.pin) {
					t.Fatalf("AllocationAt(%s) = %v, %v", tc.pin, got, ok)
				}
			case outside:
				var oe *OutOfRangeError
				if !errors.As(err, &oe) || oe.Requested != rg(t, tc.pin) {
					t.Fatalf("AllocateRange(%s) = %v, want out of range", tc.pin, err)
				}
			case conflict:
				var ce *ConflictError
				if !errors.As(err, &ce) {
					t.Fatalf("AllocateRange(%s) = %v, want conflict", tc.pin, err)
				}
				var wantReserved netip.Prefix
				if tc.reserv != "" {
					wantReserved = mustPrefix(t, tc.reserv)
				}
				if ce.Conflicting != rg(t, tc.with) || ce.Reserved != wantReserved {
					t.Fatalf("conflict with %s (reserved %s), want %s (reserved %s)", ce.Conflicting, ce.Reserved, tc.with, tc.reserv)
				}
			}
			if tc.want != ok && !slices.Equal(a.Allocations(), before) {
				t.Fatalf("a failed pin changed the allocations")
			}
			checkConsistent(t, a)
		})
	}
}

func TestPinErrorMessages(t *testing.T) {
	a := newTestAllocator(t, Spec{CIDR: "10.0.0.0/24", Reserved: []string{"10.0.0.8/29"}}, "10.0.0.20-10.0.0.29")
	cases := []struct{ pin, want string }{
		{"10.0.0.25-10.0.0.30", "pinned range 10.0.0.25-10.0.0.30 overlaps allocated range 10.0.0.20-10.0.0.29"},
		{"10.0.0.9", "pinned range 10.0.0.9 overlaps reserved 10.0.0.8/29"},
		{"10.0.0.255", "pinned range 10.0.0.255 is not inside one allocatable range of pool 10.0.0.0/24 (allocatable: 10.0.0.1-10.0.0.254)"},
	}
	for _, tc := range cases {
		if err := a.AllocateRange(rg(t, tc.pin)); err == nil || err.Error() != tc.want {
			t.Errorf("AllocateRange(%s) = %v, want %q", tc.pin, err, tc.want)
		}
	}
}

func TestReleaseCoalesces(t *testing.T) {
	for _, fam := range []struct {
		spec Spec
		addr func(i int) string
	}{
		{Spec{CIDR: "10.0.0.0/27", Reserved: []string{"10.0.0.16/32"}}, func(i int) string { return netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}).String() }},
		{Spec{CIDR: "2001:db8::/123", Reserved: []string{"2001:db8::10/128"}}, func(i int) string {
			return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(i)}).String()
		}},
	} {
		t.Run(fam.spec.CIDR, func(t *testing.T) {
			r := func(lo, hi int) Range { return rg(t, fam.addr(lo)+"-"+fam.addr(hi)) }
			a := newTestAllocator(t, fam.spec)
			// .1-.4, .5-.8, .9-.12, then .13-.15 and .17-.20 on either side of reserved .16.
			for _, pin := range []Range{r(1, 4), r(5, 8), r(9, 12), r(13, 15), r(17, 20)} {
				if err := a.AllocateRange(pin); err != nil {
					t.Fatal(err)
				}
			}
			release := func(x Range, wantFree ...Range) {
				t.Helper()
				if err := a.Release(x); err != nil {
					t.Fatalf("Release(%s): %v", x, err)
				}
				if got := a.FreeRanges(); !slices.Equal(got, wantFree) {
					t.Fatalf("after releasing %s free runs are %v, want %v", x, got, wantFree)
				}
				checkConsistent(t, a)
			}
			top := 30
			if !a.pool.is4 {
				top = 31
			}
			release(r(5, 8), r(5, 8), r(21, top))
			release(r(1, 4), r(1, 8), r(21, top))
			release(r(9, 12), r(1, 12), r(21, top))
			release(r(17, 20), r(1, 12), r(17, top))
			// The reserved address keeps the runs on either side of it apart.
			release(r(13, 15), r(1, 15), r(17, top))

			var ne *NotAllocatedError
			for _, bad := range []Range{r(13, 15), r(1, 2), r(40, 40), rg(t, "192.168.0.1")} {
				if err := a.Release(bad); !errors.As(err, &ne) {
					t.Errorf("Release(%s) = %v, want not allocated", bad, err)
				}
			}
		})
	}
}

func TestReleasePartOfAnAllocationFails(t *testing.T) {
	a := newTestAllocator(t, Spec{CIDR: "10.0.0.0/24"}, "10.0.0.10-10.0.0.19")
	err := a.Release(rg(t, "10.0.0.10-10.0.0.14"))
	if err == nil || err.Error() != "10.0.0.10-10.0.0.14 is not an allocation of this pool" {
		t.Fatalf("Release of a part = %v", err)
	}
	if got := a.Allocations(); !slices.Equal(got, rgs(t, "10.0.0.10-10.0.0.19")) {
		t.Fatalf("allocations %v", got)
	}
}

func TestNewAllocatorFromRanges(t *testing.T) {
	p := MustNewPool(Spec{CIDR: "10.0.0.0/24", Reserved: []string{"10.0.0.128/25"}})
	a, err := NewAllocator(p, rgs(t, "10.0.0.50-10.0.0.59", "10.0.0.1", "10.0.0.2-10.0.0.9"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rangeStrings(a.Allocations()), []string{"10.0.0.1", "10.0.0.2-10.0.0.9", "10.0.0.50-10.0.0.59"}; !slices.Equal(got, want) {
		t.Fatalf("allocations %v, want %v", got, want)
	}
	if got, want := rangeStrings(a.FreeRanges()), []string{"10.0.0.10-10.0.0.49", "10.0.0.60-10.0.0.127"}; !slices.Equal(got, want) {
		t.Fatalf("free %v, want %v", got, want)
	}
	checkConsistent(t, a)

	var oe *OverlapError
	if _, err := NewAllocator(p, rgs(t, "10.0.0.1-10.0.0.9", "10.0.0.9-10.0.0.12")); !errors.As(err, &oe) ||
		err.Error() != "allocations 10.0.0.1-10.0.0.9 and 10.0.0.9-10.0.0.12 overlap" {
		t.Fatalf("overlapping allocations: %v", err)
	}
	if _, err := NewAllocator(p, rgs(t, "10.0.0.5", "10.0.0.5")); !errors.As(err, &oe) {
		t.Fatalf("one range twice: %v", err)
	}
	var se *StrandedError
	if _, err := NewAllocator(p, rgs(t, "10.0.1.7", "10.0.0.120-10.0.0.130", "10.0.0.5", "10.0.0.0-10.0.0.3")); !errors.As(err, &se) ||
		!slices.Equal(rangeStrings(se.Ranges), []string{"10.0.0.0-10.0.0.3", "10.0.0.120-10.0.0.130", "10.0.1.7"}) {
		t.Fatalf("stranded allocations: %v", err)
	}
}

func TestCloneIsIndependent(t *testing.T) {
	a := newTestAllocator(t, Spec{CIDR: "10.0.0.0/16"})
	var held []Range
	for i := 0; i < 2000; i++ {
		r, err := a.Allocate(uint64(1 + i%7))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, r)
	}
	for i := 0; i < len(held); i += 3 {
		if err := a.Release(held[i]); err != nil {
			t.Fatal(err)
		}
	}
	beforeAllocs, beforeFree, beforeStatus := a.Allocations(), a.FreeRanges(), a.Status()

	c := a.Clone()
	for i := 0; i < 500; i++ {
		if _, err := c.Allocate(uint64(1 + i%5)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i < len(held); i += 3 {
		if err := c.Release(held[i]); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(a.Allocations(), beforeAllocs) || !slices.Equal(a.FreeRanges(), beforeFree) || a.Status() != beforeStatus {
		t.Fatal("changing the clone changed the original")
	}
	cloneAllocs := c.Allocations()
	// And the other way round: the original's changes leave the clone alone.
	for i := 2; i < len(held); i += 3 {
		if err := a.Release(held[i]); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(c.Allocations(), cloneAllocs) {
		t.Fatal("changing the original changed the clone")
	}
	checkConsistent(t, a)
	checkConsistent(t, c)
}

func TestAllocationAt(t *testing.T) {
	a := newTestAllocator(t, Spec{CIDR: "10.0.0.0/24"}, "10.0.0.10-10.0.0.19")
	for addr, want := range map[string]bool{"10.0.0.9": false, "10.0.0.10": true, "10.0.0.15": true, "10.0.0.19": true, "10.0.0.20": false, "10.1.0.15": false} {
		if got, ok := a.AllocationAt(netip.MustParseAddr(addr)); ok != want || (ok && got != rg(t, "10.0.0.10-10.0.0.19")) {
			t.Errorf("AllocationAt(%s) = %v, %v", addr, got, ok)
		}
	}
}

// TestConcurrentClones is how a store uses a cached allocator: many requests clone it at
// once, read it, and change only their clones. Run with -race.
func TestConcurrentClones(t *testing.T) {
	shared := newTestAllocator(t, Spec{CIDR: "10.0.0.0/16"})
	for i := 0; i < 3000; i++ {
		if _, err := shared.Allocate(uint64(1 + i%4)); err != nil {
			t.Fatal(err)
		}
	}
	want := shared.Status()
	done := make(chan error)
	for g := 0; g < 8; g++ {
		go func() {
			var err error
			for i := 0; i < 50 && err == nil; i++ {
				c := shared.Clone()
				_ = shared.Status()
				_, err = c.Allocate(uint64(1 + g))
				if err == nil {
					err = c.Release(c.Allocations()[i])
				}
			}
			done <- err
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got := shared.Status(); got != want {
		t.Fatalf("clones changed the shared allocator: %+v, want %+v", got, want)
	}
}
