package ipam

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
)

func TestNewPoolErrors(t *testing.T) {
	cases := []struct {
		name  string
		spec  Spec
		field string
	}{
		{"not a CIDR", Spec{CIDR: "10.0.0.0"}, "cidr"},
		{"host bits set", Spec{CIDR: "10.0.0.1/24"}, "cidr"},
		{"IPv6 wider than /64", Spec{CIDR: "2001:db8::/63"}, "cidr"},
		{"bad range start", Spec{CIDR: "10.0.0.0/24", Ranges: []AddressRange{{"10.0.0.1", "10.0.0.9"}, {"x", "10.0.0.9"}}}, "ranges[1].start"},
		{"range end outside the cidr", Spec{CIDR: "10.0.0.0/24", Ranges: []AddressRange{{"10.0.0.1", "10.0.1.9"}}}, "ranges[0].end"},
		{"range of the other family", Spec{CIDR: "10.0.0.0/24", Ranges: []AddressRange{{"2001:db8::1", "2001:db8::2"}}}, "ranges[0].start"},
		{"range start after end", Spec{CIDR: "10.0.0.0/24", Ranges: []AddressRange{{"10.0.0.9", "10.0.0.1"}}}, "ranges[0]"},
		{"reserved not a CIDR", Spec{CIDR: "10.0.0.0/24", Reserved: []string{"10.0.0.5"}}, "reserved[0].cidr"},
		{"reserved host bits set", Spec{CIDR: "10.0.0.0/24", Reserved: []string{"10.0.0.0/30", "10.0.0.5/30"}}, "reserved[1].cidr"},
		{"reserved outside", Spec{CIDR: "10.0.0.0/24", Reserved: []string{"10.0.1.0/30"}}, "reserved[0].cidr"},
		{"reserved wider than the pool", Spec{CIDR: "10.0.0.0/24", Reserved: []string{"10.0.0.0/23"}}, "reserved[0].cidr"},
		{"reserved of the other family", Spec{CIDR: "10.0.0.0/24", Reserved: []string{"2001:db8::/126"}}, "reserved[0].cidr"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewPool(tc.spec)
			var se *SpecError
			if !errors.As(err, &se) || se.Field != tc.field {
				t.Fatalf("NewPool = %v, want a SpecError on %s", err, tc.field)
			}
		})
	}
}

func TestPoolShape(t *testing.T) {
	cases := []struct {
		spec   Spec
		total  uint64
		ranges []string
	}{
		{Spec{CIDR: "10.0.0.0/8"}, 1<<24 - 2, []string{"10.0.0.1-10.255.255.254"}},
		{Spec{CIDR: "10.0.0.0/24", Reserved: []string{"10.0.0.0/28", "10.0.0.8/29"}}, 254 - 15, []string{"10.0.0.1-10.0.0.254"}},
		{Spec{CIDR: "10.0.0.0/30"}, 2, []string{"10.0.0.1-10.0.0.2"}},
		{Spec{CIDR: "10.0.0.0/31"}, 2, []string{"10.0.0.0-10.0.0.1"}},
		{Spec{CIDR: "10.0.0.5/32"}, 1, []string{"10.0.0.5"}},
		{Spec{CIDR: "10.0.0.0/24", Ranges: []AddressRange{{"10.0.0.200", "10.0.0.255"}, {"10.0.0.0", "10.0.0.10"}, {"10.0.0.5", "10.0.0.20"}}},
			20 + 55, []string{"10.0.0.1-10.0.0.20", "10.0.0.200-10.0.0.254"}},
		{Spec{CIDR: "2001:db8::/64"}, 1<<64 - 1, []string{"2001:db8::1-2001:db8::ffff:ffff:ffff:ffff"}},
		{Spec{CIDR: "2001:db8::/120", Reserved: []string{"2001:db8::f0/124"}}, 255 - 16, []string{"2001:db8::1-2001:db8::ff"}},
		{Spec{CIDR: "2001:db8::/127"}, 2, []string{"2001:db8::-2001:db8::1"}},
		{Spec{CIDR: "2001:db8::1/128"}, 1, []string{"2001:db8::1"}},
		{Spec{CIDR: "10.0.0.0/24", Ranges: []AddressRange{{"10.0.0.0", "10.0.0.0"}}}, 0, []string{}},
	}
	for _, tc := range cases {
		p, err := NewPool(tc.spec)
		if err != nil {
			t.Fatalf("NewPool(%+v): %v", tc.spec, err)
		}
		if p.Total() != tc.total || !slices.Equal(rangeStrings(p.Ranges()), tc.ranges) {
			t.Errorf("%+v: total %d, ranges %v; want %d, %v", tc.spec, p.Total(), rangeStrings(p.Ranges()), tc.total, tc.ranges)
		}
	}
}

func TestPoolReservedOrder(t *testing.T) {
	p := MustNewPool(Spec{CIDR: "10.0.0.0/24", Reserved: []string{"10.0.0.64/27", "10.0.0.0/30", "10.0.0.64/26"}})
	want := []netip.Prefix{mustPrefix(t, "10.0.0.0/30"), mustPrefix(t, "10.0.0.64/26"), mustPrefix(t, "10.0.0.64/27")}
	if got := p.Reserved(); !slices.Equal(got, want) {
		t.Fatalf("Reserved() = %v, want %v", got, want)
	}
}
