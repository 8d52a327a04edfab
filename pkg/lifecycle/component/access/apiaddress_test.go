package access

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"regexp"
	"strings"
	"testing"

	netutils "k8s.io/utils/net"
)

// addressForms matches a text exactly when the kube-apiserver's parser of spec.clusterIP(s)
// (netutils.ParseIPSloppy) reads it as the address: the address and its neighbours, each in
// random texts of the forms that parser takes (leading zeros, either case, "::" for any run of
// zero groups, an IPv4 tail, IPv4-mapped IPv6).
func TestAddressFormsAreTheParsersReading(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, api := range []string{"10.96.0.1", "172.20.0.1", "10.0.0.1", "192.168.128.1", "fd00::1", "2001:db8:0:0:1::1", "fd00:10:96::1"} {
		a := netip.MustParseAddr(api)
		re := regexp.MustCompile(addressForms(a))
		others := []netip.Addr{a.Next(), a.Prev(), a.Next().Next().Next().Next().Next().Next().Next().Next().Next()}
		for range 20 {
			others = append(others, flip(a, rng.IntN(a.BitLen())))
		}
		if a.Is4() {
			others = append(others, netip.AddrFrom16(a.As16())) // ::ffff:a as IPv6 of its own: 4in6 is still a
		}
		for _, x := range append(others, a) {
			for range 200 {
				text := randomText(rng, x)
				ip := netutils.ParseIPSloppy(text)
				if ip == nil {
					t.Fatalf("%q (for %s) is not an address to the parser", text, x)
				}
				if got, want := re.MatchString(text), ip.Equal(a.AsSlice()); got != want {
					t.Errorf("%s: %q (%s) matched %v, want %v", api, text, ip, got, want)
				}
			}
		}
	}
}

// flip is a with bit i (from the left) flipped.
func flip(a netip.Addr, i int) netip.Addr {
	b := a.AsSlice()
	b[i/8] ^= 0x80 >> (i % 8)
	x, _ := netip.AddrFromSlice(b)
	return x
}

// randomText writes a in one of the texts ParseIPSloppy reads as it, chosen at random.
func randomText(rng *rand.Rand, a netip.Addr) string {
	zeros := func() string { return strings.Repeat("0", rng.IntN(3)) }
	dotted := func(b []byte) string {
		parts := make([]string, len(b))
		for i, v := range b {
			parts[i] = zeros() + fmt.Sprint(v)
		}
		return strings.Join(parts, ".")
	}
	if a.Is4() && rng.IntN(2) == 0 {
		return dotted(a.AsSlice())
	}
	b := a.As16()
	n := 8
	if rng.IntN(2) == 0 {
		n = 6 // the last 32 bits as IPv4
	}
	groups := make([]string, n)
	for i := range groups {
		g := fmt.Sprintf("%x", uint16(b[2*i])<<8|uint16(b[2*i+1]))
		if rng.IntN(2) == 0 {
			g = strings.ToUpper(g)
		}
		groups[i] = zeros() + g
	}
	if n == 6 {
		groups = append(groups, dotted(b[12:]))
	}
	// "::" for a random run of zero groups, if any.
	var runs [][2]int
	for s := range n {
		for e := s + 1; e <= n && strings.Trim(groups[e-1], "0") == ""; e++ {
			runs = append(runs, [2]int{s, e})
		}
	}
	if len(runs) == 0 || rng.IntN(4) == 0 {
		return strings.Join(groups, ":")
	}
	r := runs[rng.IntN(len(runs))]
	return strings.Join(groups[:r[0]], ":") + "::" + strings.Join(groups[r[1]:], ":")
}
