package main

import (
	"strings"
	"testing"
	"time"
)

// TestDensityPerClusterIsEachReadLessTheMedianBefore: P8's figure is each read with all asleep
// less the median read before, shared over the clusters asleep (not those created).
func TestDensityPerClusterIsEachReadLessTheMedianBefore(t *testing.T) {
	f := densityFigure{Clusters: 1000, Created: 1002,
		PSSBefore: []int64{900 << 20, 1000 << 20, 1100 << 20},
		PSSAfter:  []int64{11000 << 20, 13000 << 20, 12000 << 20}}
	got := f.perCluster()
	want := []float64{10, 12, 11}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("per cluster %v, want %v", got, want)
		}
	}
	if cell := f.cell(); !strings.Contains(cell, "**11.00 MiB** a cluster (10.00 - 12.00 over 3 reads of one run of 1000)") {
		t.Errorf("the row reads %q", cell)
	}
}

// TestReportRendersP8: a P8 run is its row and section, and leaves the not-reproduced list.
func TestReportRendersP8(t *testing.T) {
	f := &densityFigure{Clusters: 1000, Created: 1000, PSSBefore: []int64{1 << 30}, PSSAfter: []int64{2 << 30},
		ProcessGrowth: map[string]int64{"kube-apiserver": 512 << 10}, Wakes: []time.Duration{2500 * time.Millisecond},
		Commit: "abc1234", Idle: time.Minute}
	doc := renderReport(nil, singleRuns{p8: f}, "abc1234", "2 CPUs", "P8", time.Now(), time.Hour)
	for _, want := range []string{"| [P8](#p8) | ", "**1.02 MiB** a cluster", "| 1 run |", "## P8", "kube-apiserver 0.50", "| kubectl through a wake, afterwards (each; failed) | 2.50 s; 0 |"} {
		if !strings.Contains(doc, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if _, notYet, _ := strings.Cut(doc, "## Not yet reproduced"); strings.Contains(notYet, "| P8 |") {
		t.Errorf("P8 is listed as not reproduced though it ran")
	}
}
