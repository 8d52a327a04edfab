package ipam

import (
	"fmt"
	"net/netip"
)

// Range is an inclusive range of addresses of one family: what an IPAllocation holds and
// what a pinned request asks for. The zero Range is invalid.
type Range struct {
	First, Last netip.Addr
}

// ParseRange parses the start and end addresses of a range, as IPAllocation's
// pinnedRange and status carry them.
func ParseRange(start, end string) (Range, error) {
	first, err := netip.ParseAddr(start)
	if err != nil {
		return Range{}, fmt.Errorf("start address: %w", err)
	}
	last, err := netip.ParseAddr(end)
	if err != nil {
		return Range{}, fmt.Errorf("end address: %w", err)
	}
	r := Range{First: first, Last: last}
	if !r.IsValid() {
		return Range{}, fmt.Errorf("invalid range %s-%s: the addresses must be of one family, without a zone, start before end", start, end)
	}
	return r, nil
}

// PrefixRange returns the addresses of p, from its network address to its last address.
func PrefixRange(p netip.Prefix) Range {
	p = p.Masked()
	first := p.Addr()
	last := u128Of(first).or(lowMask(first.BitLen() - p.Bits())).addr(first.Is4())
	return Range{First: first, Last: last}
}

// IsValid reports whether r is a range: both ends valid, of one family, without zones, and
// First <= Last.
func (r Range) IsValid() bool {
	return r.First.IsValid() && r.Last.IsValid() && r.First.Is4() == r.Last.Is4() &&
		r.First.Zone() == "" && r.Last.Zone() == "" && r.First.Compare(r.Last) <= 0
}

// String is "first-last", or the one address of a single-address range.
func (r Range) String() string {
	if r.First == r.Last {
		return r.First.String()
	}
	return r.First.String() + "-" + r.Last.String()
}

// Count returns the number of addresses in r; ok is false when it does not fit a uint64
// (an IPv6 range wider than 2^64 - 1 addresses).
func (r Range) Count() (n uint64, ok bool) {
	d := u128Of(r.Last).sub(u128Of(r.First))
	if d.hi != 0 || d.lo == ^uint64(0) {
		return 0, false
	}
	return d.lo + 1, true
}

// Contains reports whether a is in r.
func (r Range) Contains(a netip.Addr) bool {
	return a.Is4() == r.First.Is4() && r.First.Compare(a) <= 0 && a.Compare(r.Last) <= 0
}

// Overlaps reports whether r and o share an address.
func (r Range) Overlaps(o Range) bool {
	return r.First.Is4() == o.First.Is4() && r.First.Compare(o.Last) <= 0 && o.First.Compare(r.Last) <= 0
}

// Prefix returns r as a CIDR when it is one: a power-of-two number of addresses starting at
// a multiple of that number.
func (r Range) Prefix() (netip.Prefix, bool) {
	d := u128Of(r.Last).sub(u128Of(r.First))
	// d+1 is a power of two exactly when d is all ones in its low bits.
	if !d.and(d.addU64(1)).isZero() || !u128Of(r.First).and(d).isZero() {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(r.First, r.First.BitLen()-d.onesCount()), true
}

// Addresses lists the first max addresses of r (all of them when r is smaller).
func (r Range) Addresses(max int) []netip.Addr {
	if max <= 0 {
		return nil
	}
	n := max
	if c, ok := r.Count(); ok && c < uint64(max) {
		n = int(c)
	}
	out := make([]netip.Addr, 0, n)
	for a := r.First; len(out) < n; a = a.Next() {
		out = append(out, a)
	}
	return out
}
