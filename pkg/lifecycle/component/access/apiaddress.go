package access

import (
	"net/netip"
	"strconv"
	"strings"
)

// addressForms is a regular expression (RE2, as CEL's matches()) of every text the
// kube-apiserver reads as the address a in a Service's spec.clusterIP(s) or spec.externalIPs:
// it parses them with netutils.ParseIPSloppy (Go's net.ParseIP before 1.17), which takes leading
// zeros, either case, "::" for any run of zero groups, an IPv4 tail in IPv6, and an IPv4
// address in IPv4-mapped IPv6. A comparison of text with a.String() alone would let
// "010.096.000.001" through. The tenant's kube-apiserver before 1.31 compiles a new policy
// without CEL's ip() library, hence text.
func addressForms(a netip.Addr) string {
	var forms []string
	if a.Is4() {
		forms = append(forms, dotted(a.As4()))
	}
	b := a.As16() // an IPv4 address as ::ffff:a.b.c.d
	var g [8]uint16
	for i := range g {
		g[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
	}
	tail := dotted([4]byte(b[12:]))
	for _, n := range []int{8, 6} { // eight groups, or six and the last 32 bits as IPv4
		end := ""
		if n == 6 {
			end = tail
		}
		forms = append(forms, groups(g[:n], end, ":"))
		// "::" for the zero groups s to e-1 (at least one).
		for s := 0; s < n; s++ {
			for e := s + 1; e <= n && g[e-1] == 0; e++ {
				forms = append(forms, strings.Join([]string{groups(g[:s], "", ":"), groups(g[e:n], end, ":")}, "::"))
			}
		}
	}
	return "^(?i:" + strings.Join(forms, "|") + ")$"
}

// groups is the regular expression of hex groups g joined by sep, then end.
func groups(g []uint16, end, sep string) string {
	parts := make([]string, 0, len(g)+1)
	for _, v := range g {
		parts = append(parts, leadingZeros(strconv.FormatUint(uint64(v), 16)))
	}
	if end != "" {
		parts = append(parts, end)
	}
	return strings.Join(parts, sep)
}

// dotted is the regular expression of an IPv4 address in dotted decimal.
func dotted(a [4]byte) string {
	parts := make([]string, 4)
	for i, v := range a {
		parts[i] = leadingZeros(strconv.Itoa(int(v)))
	}
	return strings.Join(parts, "[.]")
}

// leadingZeros is the regular expression of the number n (digits, no leading zero) with any
// number of leading zeros.
func leadingZeros(n string) string {
	if n == "0" {
		return "0+"
	}
	return "0*" + n
}
