package ipam

import (
	"cmp"
	"slices"
)

// span is an inclusive run of offsets from a pool's network address. Offsets are 64 bits
// because a pool holds at most 2^64 addresses (see Spec); a span's size is hi-lo+1, which
// fits too because offset 0 of a pool that large is never allocatable.
type span struct{ lo, hi uint64 }

// size returns hi-lo+1; callers only ask for it on spans of allocatable offsets, which never
// cover all 2^64 offsets.
func (s span) size() uint64 { return s.hi - s.lo + 1 }

func (s span) contains(o span) bool { return s.lo <= o.lo && o.hi <= s.hi }
func (s span) overlaps(o span) bool { return s.lo <= o.hi && o.lo <= s.hi }

func compareLo(a, b span) int { return cmp.Compare(a.lo, b.lo) }

// mergeSpans sorts spans and joins the ones that overlap or touch.
func mergeSpans(in []span) []span {
	s := slices.Clone(in)
	slices.SortFunc(s, compareLo)
	out := s[:0]
	for _, x := range s {
		if n := len(out); n > 0 && (x.lo <= out[n-1].hi || x.lo-1 == out[n-1].hi) {
			out[n-1].hi = max(out[n-1].hi, x.hi)
			continue
		}
		out = append(out, x)
	}
	return out
}

// subtractSpans returns the offsets of from that are in no span of cut. Both are sorted by
// lo; from's spans do not overlap one another, cut's may touch but not overlap.
func subtractSpans(from, cut []span) []span {
	var out []span
	j := 0
	for _, f := range from {
		for j < len(cut) && cut[j].hi < f.lo {
			j++
		}
		lo, covered := f.lo, false
		for k := j; k < len(cut) && cut[k].lo <= f.hi; k++ {
			if cut[k].lo > lo {
				out = append(out, span{lo, cut[k].lo - 1})
			}
			if cut[k].hi >= f.hi {
				covered = true
				break
			}
			lo = max(lo, cut[k].hi+1)
		}
		if !covered {
			out = append(out, span{lo, f.hi})
		}
	}
	return out
}

// containing returns the index of the span of sorted, disjoint spans that holds all of x,
// or -1.
func containing(spans []span, x span) int {
	i, _ := slices.BinarySearchFunc(spans, x.lo, func(s span, lo uint64) int {
		if s.hi < lo {
			return -1
		}
		if s.lo > lo {
			return 1
		}
		return 0
	})
	if i < len(spans) && spans[i].contains(x) {
		return i
	}
	return -1
}

// overlapsAny reports whether x shares an offset with one of sorted, disjoint spans.
func overlapsAny(spans []span, x span) bool {
	i, _ := slices.BinarySearchFunc(spans, x.lo, func(s span, lo uint64) int { return cmp.Compare(s.hi, lo) })
	return i < len(spans) && spans[i].lo <= x.hi
}
