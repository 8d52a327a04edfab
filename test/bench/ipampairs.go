package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// P3 is measured by a Go benchmark on the e2e plane (BenchmarkAllocationRateVsServiceClusterIPs
// in test/e2e), which writes its pairs to a file; -p3-pairs turns that file into the figure.

func p3(pairs int) figure {
	return figure{
		ID:    "P3",
		Title: "Addresses allocated per second by butler's IPAM, against ClusterIPs allocated per second by kube-apiserver's Services.",
		What: "single addresses allocated (networkpools/allocate, one address each) by 32 concurrent clients through the plane's " +
			"kube-apiserver, aggregated to its butler-apiserver; rate over the pair's share of b.N",
		Baseline: "Services of type ClusterIP created (each allocates one ClusterIP) by 32 concurrent clients through the same " +
			"kube-apiserver onto the same etcd, in the same namespace and plane, the same number as the allocations",
		Subject: "allocations/s", Base: "ClusterIPs/s", Unit: "/s", Better: "higher",
		Command: fmt.Sprintf("make bench-report ONLY=P3 (P3_PAIRS=%d go test -run '^$' -bench AllocationRate -benchtime 3000x ./test/e2e/)", pairs),
		Notes: []string{"Both sides run on one e2e plane, one after the other in each pair (the pool and the Services accumulate " +
			"over the pairs, equally on both sides). Before issue 40 the allocations went straight to two standalone " +
			"butler-apiservers on an empty etcd of their own, the Services through the busy e2e plane, once, in a fixed order."},
	}
}

// readPairs parses the benchmark's file: a pair a line, "subject<TAB>baseline<TAB>subjectFirst".
func readPairs(path string) ([]pair, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []pair
	for n, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			return nil, fmt.Errorf("%s:%d: %q is not subject, baseline, subject first", path, n+1, line)
		}
		s, err1 := strconv.ParseFloat(f[0], 64)
		b, err2 := strconv.ParseFloat(f[1], 64)
		first, err3 := strconv.ParseBool(f[2])
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("%s:%d: %q: not numbers", path, n+1, line)
		}
		out = append(out, pair{Subject: s, Baseline: b, SubjectFirst: first, Load: loadavg()})
	}
	return out, nil
}

// importP3 makes figure P3 of the benchmark's pairs file.
func importP3(pairsFile, out, commit string) error {
	runs, err := readPairs(pairsFile)
	if err != nil {
		return err
	}
	f := p3(len(runs))
	f.Runs, f.Commit, f.Machine = runs, commit, machine()
	f.Notes = append(f.Notes, "The load average given for each pair is the one when the benchmark had ended.")
	return f.save(figurePath(out, "P3"))
}
