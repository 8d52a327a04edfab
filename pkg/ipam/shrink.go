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
