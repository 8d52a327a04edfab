package ipam

import (
	"errors"
	"slices"
	"testing"
)

func TestStranded(t *testing.T) {
	live := rgs(t, "10.0.0.10-10.0.0.19", "10.0.0.200-10.0.0.210", "10.0.0.254")
	cases := []struct {
		name string
		spec Spec
		want []string
	}{
		{"unchanged", Spec{CIDR: "10.0.0.0/24"}, nil},
		{"grown cidr", Spec{CIDR: "10.0.0.0/23"}, nil},
		{"grown cidr moves the broadcast address", Spec{CIDR: "10.0.0.0/16"}, nil},
		{"shrunk cidr", Spec{CIDR: "10.0.0.0/25"}, []string{"10.0.0.200-10.0.0.210", "10.0.0.254"}},
		{"ranges cut through an allocation", Spec{CIDR: "10.0.0.0/24", Ranges: []AddressRange{{"10.0.0.1", "10.0.0.205"}}}, []string{"10.0.0.200-10.0.0.210", "10.0.0.254"}},
		{"ranges with a gap under an allocation", Spec{CIDR: "10.0.0.0/24", Ranges: []AddressRange{{"10.0.0.1", "10.0.0.14"}, {"10.0.0.16", "10.0.0.254"}}}, []string{"10.0.0.10-10.0.0.19"}},
		{"new reserved CIDR over an allocation", Spec{CIDR: "10.0.0.0/24", Reserved: []string{"10.0.0.16/28"}}, []string{"10.0.0.10-10.0.0.19"}},
		{"address becomes a broadcast address", Spec{CIDR: "10.0.0.0/25"}, []string{"10.0.0.200-10.0.0.210", "10.0.0.254"}},
		{"other family", Spec{CIDR: "2001:db8::/64"}, []string{"10.0.0.10-10.0.0.19", "10.0.0.200-10.0.0.210", "10.0.0.254"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := MustNewPool(tc.spec)
			got := rangeStrings(Stranded(p, live))
			if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Fatalf("Stranded = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStrandedErrorMessage(t *testing.T) {
	_, err := NewAllocator(MustNewPool(Spec{CIDR: "10.0.0.0/25"}), rgs(t, "10.0.0.1", "10.0.0.200-10.0.0.210", "10.0.0.254"))
	const want = "2 allocated range(s) would fall outside the allocatable addresses of pool 10.0.0.0/25: 10.0.0.200-10.0.0.210, 10.0.0.254"
	var se *StrandedError
	if !errors.As(err, &se) || err.Error() != want {
		t.Fatalf("NewAllocator = %v, want %q", err, want)
	}
}
