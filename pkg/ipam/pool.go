package ipam

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
)

// Spec is a NetworkPool's spec as the allocator needs it; its fields mirror
// NetworkPoolSpec so that SpecError.Field can name the JSON path of a bad value.
type Spec struct {
	// CIDR is the pool's prefix, IPv4 or IPv6, written as its network address. An IPv6
	// pool may hold at most 2^64 addresses (a /64 or longer), so that every offset in it
	// fits 64 bits.
	CIDR string
	// Ranges are the parts of CIDR that may be handed out; empty means all of CIDR.
	Ranges []AddressRange
	// Reserved CIDRs inside CIDR are never handed out.
	Reserved []string
}

// AddressRange is an inclusive start and end address, as in NetworkPoolSpec.ranges.
type AddressRange struct {
	Start, End string
}

// Pool is a parsed, checked Spec: which addresses may be handed out. It is immutable and
// may be shared by any number of Allocators.
//
// The network address of a pool is never handed out, nor the broadcast address of an IPv4
// pool, even when Ranges include them. For IPv6 the network address is the subnet-router
// anycast address (RFC 4291 section 2.6.1) and there is no broadcast; the reserved subnet
// anycast addresses of RFC 2526 (the top 128 of a /64) are not excluded, so list them in
// Reserved where the network uses them. A prefix of at most two addresses (IPv4 /31 and
// /32, IPv6 /127 and /128) has no network or broadcast address and hands out all of them,
// as point-to-point links do (RFC 3021, RFC 6164).
type Pool struct {
	prefix netip.Prefix
	base   u128 // the network address as a number; offsets count from it
	is4    bool
	// ranges are the allocatable ranges: Spec.Ranges (or all of CIDR), merged, less the
	// network and broadcast addresses. A pinned range must lie inside one of them.
	ranges []span
	// reserved are the Reserved CIDRs, sorted by start, kept whole to name them in errors;
	// reservedMerged is their union for overlap tests.
	reserved       []reservedSpan
	reservedMerged []span
	// free0 is what an empty allocator may hand out: ranges less reserved.
	free0 []span
	total uint64
}

type reservedSpan struct {
	span
	cidr netip.Prefix
}

// NewPool parses and checks spec. Its errors are *SpecError.
func NewPool(spec Spec) (*Pool, error) {
	prefix, err := netip.ParsePrefix(spec.CIDR)
	if err != nil {
		return nil, &SpecError{Field: "cidr", Value: spec.CIDR, Detail: "not a CIDR"}
	}
	if prefix != prefix.Masked() {
		return nil, &SpecError{Field: "cidr", Value: spec.CIDR, Detail: fmt.Sprintf("must be written as its network address, %s", prefix.Masked())}
	}
	hostBits := prefix.Addr().BitLen() - prefix.Bits()
	if hostBits > 64 {
		return nil, &SpecError{Field: "cidr", Value: spec.CIDR, Detail: "a pool may hold at most 2^64 addresses (an IPv6 /64 or a longer prefix)"}
	}
	p := &Pool{prefix: prefix, base: u128Of(prefix.Addr()), is4: prefix.Addr().Is4()}
	lastOffset := lowMask(hostBits).lo

	if len(spec.Ranges) == 0 {
		p.ranges = []span{{0, lastOffset}}
	}
	for i, ar := range spec.Ranges {
		field := fmt.Sprintf("ranges[%d]", i)
		start, err := p.parseAddr(ar.Start)
		if err != nil {
			return nil, &SpecError{Field: field + ".start", Value: ar.Start, Detail: err.Error()}
		}
		end, err := p.parseAddr(ar.End)
		if err != nil {
			return nil, &SpecError{Field: field + ".end", Value: ar.End, Detail: err.Error()}
		}
		if start > end {
			return nil, &SpecError{Field: field, Value: ar.Start + "-" + ar.End, Detail: "start is after end"}
		}
		p.ranges = append(p.ranges, span{start, end})
	}
	p.ranges = mergeSpans(p.ranges)
	if hostBits >= 2 {
		// More than two addresses: drop the network address, and an IPv4 pool's broadcast.
		edges := []span{{0, 0}}
		if p.is4 {
			edges = append(edges, span{lastOffset, lastOffset})
		}
		p.ranges = subtractSpans(p.ranges, edges)
	}

	for i, s := range spec.Reserved {
		field := fmt.Sprintf("reserved[%d].cidr", i)
		rp, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, &SpecError{Field: field, Value: s, Detail: "not a CIDR"}
		}
		if rp != rp.Masked() {
			return nil, &SpecError{Field: field, Value: s, Detail: fmt.Sprintf("must be written as its network address, %s", rp.Masked())}
		}
		if rp.Addr().Is4() != p.is4 || rp.Bits() < prefix.Bits() || !prefix.Contains(rp.Addr()) {
			return nil, &SpecError{Field: field, Value: s, Detail: fmt.Sprintf("must lie inside the pool's cidr %s", prefix)}
		}
		r := PrefixRange(rp)
		lo, _ := p.offset(r.First)
		hi, _ := p.offset(r.Last)
		p.reserved = append(p.reserved, reservedSpan{span{lo, hi}, rp})
	}
	// Sort by start, the wider CIDR first, so that a conflict names the enclosing one.
	slices.SortFunc(p.reserved, func(a, b reservedSpan) int {
		return cmp.Or(cmp.Compare(a.lo, b.lo), cmp.Compare(b.hi, a.hi))
	})
	rs := make([]span, len(p.reserved))
	for i, r := range p.reserved {
		rs[i] = r.span
	}
	p.reservedMerged = mergeSpans(rs)
	p.free0 = subtractSpans(p.ranges, p.reservedMerged)
	for _, s := range p.free0 {
		p.total += s.size()
	}
	return p, nil
}

// MustNewPool is NewPool for specs known to be good, such as in tests; it panics on error.
func MustNewPool(spec Spec) *Pool {
	p, err := NewPool(spec)
	if err != nil {
		panic(err)
	}
	return p
}

// Prefix returns the pool's CIDR.
func (p *Pool) Prefix() netip.Prefix { return p.prefix }

// Total returns the number of addresses the pool may hand out: its ranges less network,
// broadcast and reserved addresses.
func (p *Pool) Total() uint64 { return p.total }

// Ranges returns the allocatable ranges in address order: Spec.Ranges (or the whole CIDR)
// merged where they touch, less the network and broadcast addresses. Reserved addresses
// are still inside them.
func (p *Pool) Ranges() []Range { return p.rangesOf(p.ranges) }

// Reserved returns the reserved CIDRs in address order.
func (p *Pool) Reserved() []netip.Prefix {
	out := make([]netip.Prefix, len(p.reserved))
	for i, r := range p.reserved {
		out[i] = r.cidr
	}
	return out
}

// Allocatable reports whether r could be held by an allocation in this pool: it lies inside
// one allocatable range and holds no reserved address. It says nothing about other
// allocations.
func (p *Pool) Allocatable(r Range) bool {
	s, ok := p.spanOf(r)
	return ok && p.allocatable(s)
}

func (p *Pool) allocatable(s span) bool {
	return containing(p.ranges, s) >= 0 && !overlapsAny(p.reservedMerged, s)
}

// parseAddr parses an address inside the pool and returns its offset.
func (p *Pool) parseAddr(s string) (uint64, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return 0, fmt.Errorf("not an IP address")
	}
	off, ok := p.offset(a)
	if !ok {
		return 0, fmt.Errorf("not inside the pool's cidr %s", p.prefix)
	}
	return off, nil
}

// offset returns a's offset from the network address, if a is inside the pool.
func (p *Pool) offset(a netip.Addr) (uint64, bool) {
	if a.Zone() != "" || !p.prefix.Contains(a) {
		return 0, false
	}
	// The pool holds at most 2^64 addresses, so the offset is in the low word.
	return u128Of(a).sub(p.base).lo, true
}

// addr returns the address at offset off.
func (p *Pool) addr(off uint64) netip.Addr { return p.base.addU64(off).addr(p.is4) }

// spanOf converts a valid range inside the pool's CIDR to offsets.
func (p *Pool) spanOf(r Range) (span, bool) {
	if !r.IsValid() {
		return span{}, false
	}
	lo, ok1 := p.offset(r.First)
	hi, ok2 := p.offset(r.Last)
	return span{lo, hi}, ok1 && ok2
}

func (p *Pool) rangeOf(s span) Range { return Range{First: p.addr(s.lo), Last: p.addr(s.hi)} }

func (p *Pool) rangesOf(spans []span) []Range {
	out := make([]Range, len(spans))
	for i, s := range spans {
		out[i] = p.rangeOf(s)
	}
	return out
}
