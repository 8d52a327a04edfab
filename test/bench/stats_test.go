package main

import (
	"math"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	xs := []float64{15, 20, 35, 40, 50} // the textbook example, given unsorted below
	unsorted := []float64{40, 15, 50, 20, 35}
	for _, c := range []struct{ p, want float64 }{
		{0, 15}, {5, 15}, {20, 15}, {30, 20}, {40, 20}, {50, 35}, {95, 50}, {100, 50}, {150, 50},
	} {
		if got := percentile(unsorted, c.p); got != c.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", xs, c.p, got, c.want)
		}
	}
	if unsorted[0] != 40 {
		t.Errorf("percentile sorted its argument: %v", unsorted)
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("percentile of nothing = %v, want 0", got)
	}
}

func TestMedianOddEvenEmpty(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{3}, 3}, {[]float64{9, 1, 5}, 5}, {[]float64{4, 1, 3, 2}, 2.5}, {nil, 0},
	} {
		if got := median(c.xs); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}

func TestSummaryKeepsEveryRun(t *testing.T) {
	// P9's floor as the issue quotes it: 31.6 s and 81.6 s are runs of the same work, and the
	// spread must show both.
	s := summarize([]float64{73.5, 31.6, 81.6})
	if s.N != 3 || s.Median != 73.5 || s.Min != 31.6 || s.Max != 81.6 {
		t.Fatalf("summary = %+v", s)
	}
	if got, want := s.spread(), (81.6-31.6)/73.5; math.Abs(got-want) > 1e-12 {
		t.Errorf("spread = %v, want %v", got, want)
	}
	if s.spread() <= wide {
		t.Errorf("a 2.6x range is not a wide spread")
	}
	if got := (summary{}).spread(); got != 0 {
		t.Errorf("spread of nothing = %v", got)
	}
}

func TestPairRatios(t *testing.T) {
	got, err := pairRatios([]float64{60, 50, 90}, []float64{30, 100, 90})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{2, 0.5, 1} {
		if got[i] != want {
			t.Errorf("ratio %d = %v, want %v", i, got[i], want)
		}
	}
	// The median of the ratios, not the ratio of the medians (60/90 here).
	if m := median(got); m != 1 {
		t.Errorf("median ratio = %v, want 1", m)
	}
	if _, err := pairRatios([]float64{1, 2}, []float64{1}); err == nil {
		t.Error("runs without a pair were divided")
	}
	if _, err := pairRatios([]float64{1}, []float64{0}); err == nil {
		t.Error("divided by a baseline of 0")
	}
	// P12m's first report: a kwok node's memory within the noise of the provider's PSS.
	if r, err := pairRatios([]float64{154.6, 149.0, 147.1}, []float64{1.2, -0.1, 0.1}); err == nil {
		t.Errorf("divided by a baseline below 0: %v", r)
	}
}

func TestPairOrderAlternates(t *testing.T) {
	var subjectFirst int
	for i := range 6 {
		if pairOrder(i) == pairOrder(i+1) {
			t.Fatalf("pairs %d and %d run in the same order", i, i+1)
		}
		if pairOrder(i) {
			subjectFirst++
		}
	}
	if subjectFirst != 3 {
		t.Errorf("the subject ran first in %d of 6 pairs", subjectFirst)
	}
}

func TestSamplePercentileIsTheSameArithmetic(t *testing.T) {
	var s sample
	for _, ms := range []int{40, 15, 50, 20, 35} {
		s.add(time.Duration(ms) * time.Millisecond)
	}
	if s.median() != 35*time.Millisecond || s.p95() != 50*time.Millisecond || s.percentile(30) != 20*time.Millisecond {
		t.Errorf("sample: median %v p95 %v p30 %v", s.median(), s.p95(), s.percentile(30))
	}
}

func TestPssOfSmapsRollup(t *testing.T) {
	rollup := "55a4c0000000-7ffd1a5f1000 ---p 00000000 00:00 0                          [rollup]\nRss:              102400 kB\nPss:               40960 kB\nPss_Anon:          30000 kB\n"
	if got := pssOf(rollup); got != 40960*1024 {
		t.Errorf("pss = %d", got)
	}
	if got := pssOf("Rss: 1 kB\n"); got != 0 {
		t.Errorf("pss without a Pss line = %d", got)
	}
}
