package main

import (
	"fmt"
	"math"
	"slices"
)

// The arithmetic of every figure: percentiles, the median and spread of all runs, and the
// ratios of alternating pairs. Kept apart from the measuring so its tests need no plane.

// percentile is the nearest-rank percentile p (0-100) of xs: the smallest value with at least
// p% of the values at or below it (p <= 0 is the least, 100 the greatest). 0 when xs is empty.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(float64(len(s)) * p / 100))
	return s[max(0, min(rank-1, len(s)-1))]
}

// median is the middle value of xs, the mean of the two middle ones when their number is even
// (unlike percentile(xs, 50), which picks the lower). 0 when xs is empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}

// summary is what a figure reports of its runs: how many, the median, and the spread of all of
// them (least and greatest), never a chosen subset.
type summary struct {
	N                int
	Median, Min, Max float64
}

func summarize(xs []float64) summary {
	if len(xs) == 0 {
		return summary{}
	}
	return summary{N: len(xs), Median: median(xs), Min: slices.Min(xs), Max: slices.Max(xs)}
}

// spread is the width of the runs' range as a share of their median (0.25: the runs span 25%
// of the median). 0 when the median is 0.
func (s summary) spread() float64 {
	if s.Median == 0 {
		return 0
	}
	return (s.Max - s.Min) / math.Abs(s.Median)
}

// wide is a spread at which a figure wants 5 pairs rather than 3.
const wide = 0.25

// pairRatios divides each subject run by the baseline run of its pair: the pairs ran back to
// back on equally fresh planes, so each ratio compares like with like, where a ratio of two
// medians would mix runs of different moments.
func pairRatios(subject, baseline []float64) ([]float64, error) {
	if len(subject) != len(baseline) {
		return nil, fmt.Errorf("%d subject runs against %d baseline runs: a ratio needs pairs", len(subject), len(baseline))
	}
	out := make([]float64, len(subject))
	for i := range subject {
		if baseline[i] <= 0 {
			// A baseline at or below 0 is one within its measurement's noise (a memory growth read
			// at one moment): a ratio against it says nothing, and its sign flips.
			return nil, fmt.Errorf("a baseline run of %v, not above 0: no ratio", baseline[i])
		}
		out[i] = subject[i] / baseline[i]
	}
	return out, nil
}

// pairOrder says which side runs first in pair i: they alternate, so a drift of the machine
// over the pairs (a build starting, caches warming) weighs on both sides alike.
func pairOrder(i int) (subjectFirst bool) { return i%2 == 1 }
