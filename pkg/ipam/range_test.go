package ipam

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
)

func TestParseRange(t *testing.T) {
	for _, bad := range [][2]string{{"10.0.0.5", "10.0.0.4"}, {"10.0.0.1", "2001:db8::1"}, {"fe80::1%eth0", "fe80::2%eth0"}, {"x", "10.0.0.1"}, {"10.0.0.1", ""}} {
		if r, err := ParseRange(bad[0], bad[1]); err == nil {
			t.Errorf("ParseRange(%q, %q) = %v, want an error", bad[0], bad[1], r)
		}
	}
	r, err := ParseRange("10.0.0.1", "10.0.0.1")
	if err != nil || r.String() != "10.0.0.1" {
		t.Fatalf("single address: %v, %v", r, err)
	}
}

func TestRangeFigures(t *testing.T) {
	cases := []struct {
		r      string
		count  uint64
		ok     bool
		prefix string
	}{
		{"10.0.0.0-10.0.0.255", 256, true, "10.0.0.0/24"},
		{"10.0.0.8-10.0.0.15", 8, true, "10.0.0.8/29"},
		{"10.0.0.7", 1, true, "10.0.0.7/32"},
		{"10.0.0.4-10.0.0.11", 8, true, ""}, // eight addresses, not aligned
		{"10.0.0.0-10.0.0.2", 3, true, ""},
		{"0.0.0.0-255.255.255.255", 1 << 32, true, "0.0.0.0/0"},
		{"2001:db8::-2001:db8::ffff:ffff:ffff:ffff", 0, false, "2001:db8::/64"},
		{"2001:db8::1-2001:db8::ffff:ffff:ffff:ffff", 1<<64 - 1, true, ""},
		{"2001:db8::-2001:db8::ffff:ffff:ffff:fffe", 1<<64 - 1, true, ""},
		{"::-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 0, false, "::/0"},
		{"2001:db8::100-2001:db8::1ff", 256, true, "2001:db8::100/120"},
	}
	for _, tc := range cases {
		r := rg(t, tc.r)
		if n, ok := r.Count(); n != tc.count || ok != tc.ok {
			t.Errorf("%s: Count() = %d, %v; want %d, %v", tc.r, n, ok, tc.count, tc.ok)
		}
		p, ok := r.Prefix()
		if (tc.prefix != "") != ok || (ok && p.String() != tc.prefix) {
			t.Errorf("%s: Prefix() = %v, %v; want %q", tc.r, p, ok, tc.prefix)
		}
		if ok && PrefixRange(p) != r {
			t.Errorf("%s: PrefixRange(%s) = %s", tc.r, p, PrefixRange(p))
		}
	}
}

func TestRangeRelations(t *testing.T) {
	r := rg(t, "10.0.0.10-10.0.0.19")
	for s, want := range map[string]bool{"10.0.0.0-10.0.0.9": false, "10.0.0.0-10.0.0.10": true, "10.0.0.19-10.0.0.30": true, "10.0.0.20": false, "10.0.0.12-10.0.0.13": true} {
		if got := r.Overlaps(rg(t, s)); got != want {
			t.Errorf("%s overlaps %s = %v", r, s, got)
		}
	}
	if r.Overlaps(rg(t, "::a-::13")) || r.Contains(netip.MustParseAddr("::a")) {
		t.Error("ranges of different families overlap")
	}
}

func TestDescribe(t *testing.T) {
	small := Describe(rg(t, "10.0.0.8-10.0.0.11"))
	if small.StartAddress != "10.0.0.8" || small.EndAddress != "10.0.0.11" || small.CIDR != "10.0.0.8/30" ||
		small.AllocatedCount != 4 || !slices.Equal(small.Addresses, []string{"10.0.0.8", "10.0.0.9", "10.0.0.10", "10.0.0.11"}) {
		t.Errorf("Describe small = %+v", small)
	}
	odd := Describe(rg(t, "10.0.0.9-10.0.0.11"))
	if odd.CIDR != "" || odd.AllocatedCount != 3 {
		t.Errorf("Describe unaligned = %+v", odd)
	}
	big := Describe(rg(t, "10.0.0.0-10.0.255.255"))
	if big.CIDR != "10.0.0.0/16" || big.AllocatedCount != 65536 || len(big.Addresses) != MaxListedAddresses ||
		big.Addresses[MaxListedAddresses-1] != fmt.Sprintf("10.0.0.%d", MaxListedAddresses-1) {
		t.Errorf("Describe /16 = %s %d, %d addresses", big.CIDR, big.AllocatedCount, len(big.Addresses))
	}
	huge := Describe(rg(t, "2001:db8::-2001:db8::ffff:ffff:ffff:ffff"))
	if huge.CIDR != "2001:db8::/64" || huge.AllocatedCount != 1<<63-1 || len(huge.Addresses) != MaxListedAddresses {
		t.Errorf("Describe /64 = %s %d, %d addresses", huge.CIDR, huge.AllocatedCount, len(huge.Addresses))
	}
}
