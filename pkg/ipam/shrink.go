package ipam

// Stranded returns the allocations that p could not hold: those outside one of its
// allocatable ranges (including a network or broadcast address, or of the other family)
// or overlapping one of its reserved CIDRs. An update of a NetworkPool's cidr, ranges or
// reserved list is safe exactly when Stranded of the new pool and the live allocations is
// empty.
func Stranded(p *Pool, allocated []Range) []Range {
	var out []Range
	for _, r := range allocated {
		if !p.Allocatable(r) {
			out = append(out, r)
		}
	}
	return out
}

// CheckShrink returns a *StrandedError naming the allocations a new pool spec would strand,
// or nil when it strands none.
func CheckShrink(p *Pool, allocated []Range) error {
	if s := Stranded(p, allocated); len(s) > 0 {
		return &StrandedError{Pool: p.prefix, Ranges: s}
	}
	return nil
}
