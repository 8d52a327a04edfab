package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func durations(ms ...int) *sample {
	s := &sample{}
	for _, m := range ms {
		s.add(time.Duration(m) * time.Millisecond)
	}
	return s
}

func testAPIRaw() apiRaw {
	return apiRaw{
		created:    990,
		createTime: map[string]time.Duration{sideAgg: 4500 * time.Millisecond, sideCRD: 3 * time.Second},
		lists: map[string]*sample{
			"agg-json": durations(30, 10, 20), "agg-protobuf": durations(8, 6), "crd-json": durations(40, 50, 45),
		},
		watches: watchResults{
			totals: map[string]*sample{sideAgg: durations(900, 1100), sideCRD: durations(1000, 1400)},
			latencies: map[string]*sample{
				sideAgg: {durations: make([]time.Duration, 2000)}, sideCRD: {durations: make([]time.Duration, 2000)},
			},
		},
		teams:           map[string]int{sideAgg: 10, sideCRD: 10},
		providerConfigs: map[string]int{sideAgg: 10, sideCRD: 10},
		listed:          map[string]int{sideAgg: 1000, sideCRD: 1000},
		stored:          map[string]int{sideAgg: 1000, sideCRD: 1000},
		refused:         map[string]int{sideAgg: 10, sideCRD: 10},
	}
}

func TestAPIPairValues(t *testing.T) {
	values, err := testAPIRaw().values()
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string][2]float64{
		"P1":  {20, 45},   // medians of the Lists, ms
		"P1p": {7, 45},    // protobuf (the mean of the two middle ones) against the CRD's JSON
		"P2":  {220, 330}, // 990 creates in 4.5 s and in 3 s
		"P2b": {1000, 1200},
	} {
		if got := values[id]; got.subject != want[0] || got.baseline != want[1] {
			t.Errorf("%s: %v against %v, want %v", id, got.subject, got.baseline, want)
		}
	}
	for _, id := range apiFigureIDs {
		if diffs := sameWork(values[id].work); len(diffs) > 0 {
			t.Errorf("%s: the sides' work differs: %v", id, diffs)
		}
	}
	if w := values["P2"].work[sideCRD]; w["creates past the quota refused (403)"] != 10 || w["TenantClusters stored at the end"] != 1000 {
		t.Errorf("P2's work %v", w)
	}
	if w := values["P2b"].work[sideAgg]; w["updates seen by the watcher"] != 2000 || w["watch rounds"] != 2 {
		t.Errorf("P2b's work %v", w)
	}
}

func TestAPIPairValuesShowDifferentWork(t *testing.T) {
	raw := testAPIRaw()
	raw.refused[sideAgg] = 9 // one create past the quota was let through
	values, err := raw.values()
	if err != nil {
		t.Fatal(err)
	}
	if diffs := sameWork(values["P2"].work); len(diffs) != 1 || !strings.Contains(diffs[0], "creates past the quota refused (403): 9 (aggregated) against 10 (CRD)") {
		t.Errorf("diffs %v", diffs)
	}
}

func TestAPIPairValuesWantBothSides(t *testing.T) {
	raw := testAPIRaw()
	delete(raw.lists, "agg-protobuf")
	if _, err := raw.values(); err == nil || !strings.Contains(err.Error(), "P1p") {
		t.Errorf("a missing side gave %v", err)
	}
	raw = testAPIRaw()
	raw.createTime[sideCRD] = 0
	if _, err := raw.values(); err == nil {
		t.Error("a side that took no time gave a rate")
	}
}

func TestInPairOrderAlternates(t *testing.T) {
	for k, want := range []string{"b s", "s b", "b s", "s b"} {
		if got := strings.Join(inPairOrder([]string{"s"}, []string{"b"}, pairOrder(k)), " "); got != want {
			t.Errorf("pair %d: %s, want %s", k+1, got, want)
		}
	}
}

// The quota of each namespace is exactly its share of the keys: one create more is past it.
func TestPerNamespaceIsEachNamespacesShare(t *testing.T) {
	for _, n := range []int{5, 10, 1003} {
		count := map[string]int{}
		for _, k := range keys(n, 10) {
			count[k.namespace]++
		}
		total := 0
		for i := range 10 {
			if got := perNamespace(n, 10, i); got != count[namespaceName(i)] {
				t.Errorf("n=%d, namespace %d: limit %d, keys %d", n, i, got, count[namespaceName(i)])
			}
			total += perNamespace(n, 10, i)
		}
		if total != n {
			t.Errorf("n=%d: the limits add up to %d", n, total)
		}
	}
}

// Both sides get the same objects: only the group differs.
func TestBothSidesCreateTheSameObjects(t *testing.T) {
	const agg, crd = "butler.butlerlabs.dev", "crd.butlerlabs.dev"
	k := key{namespace: "bench-03", name: "tc-00013"}
	for what, of := range map[string]func(group string) []byte{
		"TenantCluster":  func(g string) []byte { return tenantCluster(g, k) },
		"Team":           func(g string) []byte { return team(g, "bench-03", 100) },
		"ProviderConfig": func(g string) []byte { return providerConfig(g, "bench-03") },
	} {
		a, c := of(agg), of(crd)
		if !bytes.Contains(a, []byte(agg+"/v1alpha1")) || !bytes.Equal(bytes.ReplaceAll(a, []byte(agg), []byte(crd)), c) {
			t.Errorf("%s differs beyond the group:\n%s\n%s", what, a, c)
		}
	}
}

func TestPairsWithWorkFromATest(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p11r-pairs.tsv")
	if err := os.WriteFile(file, []byte("1700.5\t1650.0\tfalse\tkeys written\t100000\t100000\n1600\t1700\ttrue\tkeys written\t100000\t100000\n"+
		"1650\t1600\tfalse\tkeys written\t100000\t100000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := importPairs("P11r="+file, dir, "abc1234", 100000); err != nil {
		t.Fatal(err)
	}
	f, err := loadFigure(figurePath(dir, "P11r"), false, figure{ID: "P11r"})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Runs) != 3 || f.Runs[0].Subject != 1700.5 || !f.Runs[1].SubjectFirst || f.Commit != "abc1234" {
		t.Errorf("runs %+v", f.Runs)
	}
	doc := renderReport([]*figure{f}, singleRuns{}, "abc1234", "2 CPUs", "P11", time.Now(), time.Minute)
	for _, want := range []string{
		"| [P11r](#p11r) | ", "100000 keys against plain writes",
		"| keys written | 100000 | 100000 |", "(the same in every run)",
		"| P2 | creates/s", "not run in this report (ONLY=...)",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("the report lacks %q:\n%s", want, doc)
		}
	}
	if err := importPairs("P99="+file, dir, "", 1); err == nil {
		t.Error("an unknown figure was imported")
	}
}

// TestRealNodeFiguresImport: TestRealNodeFigures' two files of pairs become P13 and P13m, reported
// together (ONLY=P13 runs both).
func TestRealNodeFiguresImport(t *testing.T) {
	dir := t.TempDir()
	times, memory := filepath.Join(dir, "p13-pairs.tsv"), filepath.Join(dir, "p13m-pairs.tsv")
	if err := os.WriteFile(times, []byte("30.5\t20.1\ttrue\n28\t21\tfalse\n31\t19.5\ttrue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(memory, []byte("140\t2\ttrue\n138\t1.5\tfalse\n141\t2.5\ttrue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := importPairs("P13="+times+",P13m="+memory, dir, "abc1234", 0); err != nil {
		t.Fatal(err)
	}
	var figs []*figure
	for _, id := range []string{"P13", "P13m"} {
		f, err := loadFigure(figurePath(dir, id), false, figure{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		figs = append(figs, f)
	}
	doc := renderReport(figs, singleRuns{}, "abc1234", "2 CPUs", expandRan("P13"), time.Now(), time.Minute)
	for _, want := range []string{"| [P13](#p13) | ", "| [P13m](#p13m) | ", "| 2 real nodes | 30.50 s |", "| real node | 140.0 MiB |", "**1.52** (1.33 - 1.59)",
		"Load average when the test's pairs were read in, after the last: "} {
		if !strings.Contains(doc, want) {
			t.Errorf("the report lacks %q:\n%s", want, doc)
		}
	}
}

// P5 is each server's PSS growth, in MiB; a growth at or below zero leaves P5 out of the pair
// without failing the pair's other figures.
func TestAPIPairValuesP5(t *testing.T) {
	raw := testAPIRaw()
	raw.growth = map[string]int64{sideAgg: 30 << 20, sideCRD: 60 << 20}
	values, err := raw.values()
	if err != nil {
		t.Fatal(err)
	}
	if m := values["P5"]; m.subject != 30 || m.baseline != 60 {
		t.Fatalf("P5 = %v against %v MiB, want 30 against 60", m.subject, m.baseline)
	}
	raw.growth[sideCRD] = -1 << 20
	values, err = raw.values()
	if err != nil {
		t.Fatalf("a negative growth failed the pair: %v", err)
	}
	if _, ok := values["P5"]; ok || values["P2"].subject == 0 {
		t.Fatalf("P5 should be left out and P2 kept: %+v", values)
	}
}
