package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Figures measured by a Go test or benchmark that writes its pairs to a file, which -pairs
// turns into the figure: P3 by BenchmarkAllocationRateVsServiceClusterIPs on the e2e plane
// (test/e2e/plane), P11 and P11r by TestSnapshotFigures (pkg/snapshot).

func p3(pairs int) figure {
	return figure{
		ID:    "P3",
		Title: "Addresses allocated per second by butler's IPAM, against ClusterIPs allocated per second by kube-apiserver's Services.",
		What: "single addresses allocated (networkpools/allocate, one address each) by 32 concurrent clients through the plane's " +
			"kube-apiserver, aggregated to its butler-apiserver; rate over the pair's share of b.N",
		Baseline: "Services of type ClusterIP created (each allocates one ClusterIP) by 32 concurrent clients through the same " +
			"kube-apiserver onto the same etcd, in the same namespace and plane, the same number as the allocations",
		Subject: "allocations/s", Base: "ClusterIPs/s", Unit: "/s", Better: "higher",
		Command: fmt.Sprintf("make bench-report ONLY=P3 (P3_PAIRS=%d go test -run '^$' -bench AllocationRate -benchtime 3000x ./test/e2e/plane/)", pairs),
		Notes: []string{"Both sides run on one e2e plane, one after the other in each pair (the pool and the Services accumulate " +
			"over the pairs, equally on both sides). Before issue 40 the allocations went straight to two standalone " +
			"butler-apiservers on an empty etcd of their own, the Services through the busy e2e plane, once, in a fixed order."},
	}
}

// p11 is the tenant's snapshot against etcd's own snapshot of the whole datastore, measured by
// pkg/snapshot's TestSnapshotFigures, which writes its pairs to a file.
func p11(pairs, n int) figure {
	return figure{
		ID:    "P11",
		Title: fmt.Sprintf("A tenant's snapshot of %d keys against etcd's own snapshot of the whole datastore.", n),
		What: fmt.Sprintf("the tenant's snapshot (snapshot.Take of its prefix, paged, gzip'd, into a discarded stream) on one embedded etcd "+
			"holding the tenant's %d keys among 9 other tenants of %d keys each; every value incompressible (450 random bytes, base64'd, "+
			"about a small Kubernetes object)", n, n/9),
		Baseline: "etcd's snapshot of the whole datastore (Maintenance.Snapshot, what etcdctl snapshot save streams) into a discarded " +
			"stream, on the same etcd: not the same work (it holds every tenant, and etcd's history), what backing up one tenant " +
			"costs without butler",
		Subject: "tenant snapshot", Base: "whole datastore", Unit: "ms", Better: "lower",
		Command: fmt.Sprintf("make bench-report ONLY=P11 BENCH_P11_N=%d (SNAPSHOT_BENCH=1 SNAPSHOT_PAIRS=%d go test -run '^TestSnapshotFigures$' ./pkg/snapshot/)", n, pairs),
		Notes: []string{"Both sides run in one test process, on one embedded etcd, one after the other in each pair. Before issue 40 " +
			"every value was 600 copies of one character, which gzip shrinks to nearly nothing."},
	}
}

// p11r is the restore's write of that snapshot against plain writes of the same keys.
func p11r(pairs, n int) figure {
	return figure{
		ID:    "P11r",
		Title: fmt.Sprintf("A tenant's restore of %d keys against plain writes of the same keys.", n),
		What: "the restore's write of P11's snapshot (snapshot.RestoreInto: read the stream, write it in batches of 100) into a fresh prefix " +
			"of the same etcd, after P11's pairs (its writes would grow the whole datastore's snapshot)",
		Baseline: "plain writes of the same keys and values, 100 a transaction, into another fresh prefix",
		Subject:  "restore", Base: "plain writes", Unit: "ms", Better: "lower",
		Command: fmt.Sprintf("make bench-report ONLY=P11 BENCH_P11_N=%d (SNAPSHOT_BENCH=1 SNAPSHOT_PAIRS=%d go test -run '^TestSnapshotFigures$' ./pkg/snapshot/)", n, pairs),
		Notes:   []string{"Both sides run in one test process, on one embedded etcd, one after the other in each pair."},
	}
}

// p7m is an awake tenant's memory with the provider's Go settings against Go's defaults,
// measured by pkg/localprovider/controlplane's TestTenantFootprint, which writes its pairs to a
// file; n is the tenants awake at once.
func p7m(pairs, n int) figure {
	return figure{
		ID:    "P7m",
		Title: fmt.Sprintf("Memory of an awake local tenant, %d awake at once: the provider's Go settings against Go's defaults.", n),
		What: fmt.Sprintf("%d tenant control planes started as the local provider starts them (its supervisor, command lines, "+
			"environment and credentials; the join objects applied) on one datastore as it starts one (TLS, auth, a user per "+
			"tenant), idle for 2 minutes; per tenant the PSS (smaps_rollup) of its kube-apiserver, kube-controller-manager and "+
			"kube-scheduler plus 1/%d of the datastore's PSS growth since before the tenants started; the mean of the %d", n, n, n),
		Baseline: "the same tenants, processes and command lines with Go's default runtime settings (GOGC=100), as before issue 40",
		Subject:  "provider's settings", Base: "Go's defaults", Unit: "MiB", Better: "lower",
		Command: fmt.Sprintf("make bench-report ONLY=P7m (BUTLER_FOOTPRINT_BIN=_output/bin BUTLER_FOOTPRINT_N=%d BUTLER_FOOTPRINT_PAIRS=%d "+
			"go test -run '^TestTenantFootprint$' ./pkg/localprovider/controlplane/)", n, pairs),
		Notes: []string{"Both sides run in one test process, one after the other in each pair, each on a fresh datastore. " +
			"PSS divides a page shared by k processes among them: the binaries' pages (about 200 MiB for the three) count " +
			"1/" + fmt.Sprint(n) + " per tenant here, about 1/100 with 100 tenants, the same on both sides."},
	}
}

// p12 is create -> control plane Ready on the real Steward against the local provider, in
// alternating pairs run by the Steward stage with STEWARD_PAIRS (hack/lib/steward.sh, steward_pairs).
func p12(pairs, _ int) figure {
	return figure{
		ID:    "P12",
		Title: "Create -> control plane Ready of a TenantCluster on the real Steward, against the local provider, alternating in one one-node cluster.",
		What: "a TenantCluster at v1.35.4 without workers in steward-demo (Steward and its Cluster API provider from source-built images, its " +
			"DataStore a host etcd): its creationTimestamp to its ControlPlaneReady lastTransitionTime (True), both the API server's clock, " +
			"1 s resolution; includes the stage's DNS alias roll of Steward and butler-apiserver (no cluster DNS in the one-node cluster)",
		Baseline: "the same TenantCluster in pairs-local on the stand-in (butler-localprovider), same clock and condition; Steward and its " +
			"provider at 0 replicas meanwhile (they would take its control plane objects)",
		Subject: "Steward", Base: "local", Unit: "s", Better: "lower",
		Command: "make bench-report ONLY=P12 THIRD_PARTY_DIR=... (TEST_STEWARD=only STEWARD_PAIRS=<pairs> hack/test-cluster.sh, " +
			"then bench -pairs P12=_output/bench/p12-pairs.tsv)",
		Notes: []string{fmt.Sprintf("%d pair(s), the order alternating (Steward first in odd pairs); each cluster is deleted and gone, "+
			"and Steward and its provider running and leading (or at 0), before the next starts. _output/bench/steward-pairs.md says "+
			"where each Steward cluster's time went (TenantControlPlane, Deployment, the DNS alias roll).", pairs)},
	}
}

// p12m is the memory of one Steward control plane Pod against a local tenant's control plane,
// read in the same pairs as P12.
func p12m(pairs, _ int) figure {
	return figure{
		ID:    "P12m",
		Title: "Memory of one control plane on the real Steward (its Pod) against one of the local provider (host processes).",
		What: "the RSS of the Steward cluster's Pod's kube-apiserver, kube-controller-manager and kube-scheduler, summed " +
			"(/proc/<pid>/status VmRSS, the processes found in the Pod's memory cgroup), 15 s after ControlPlaneReady, no workers",
		Baseline: "the RSS of the local cluster's same three processes, summed, 15 s after its ControlPlaneReady; the datastore is " +
			"apart on both sides. RSS, not PSS: like for like with a Pod that is the only one of its image",
		Subject: "Steward Pod", Base: "local processes", Unit: "MiB", Better: "lower",
		Command: "make bench-report ONLY=P12 (the same run as P12), then bench -pairs P12m=_output/bench/p12m-pairs.tsv",
		Notes:   []string{fmt.Sprintf("%d pair(s), read once each, alternating (see P12).", pairs)},
	}
}

// pairFigures are the figures made of a file of pairs (-pairs), by ID: the number of pairs and
// the figure's N give the definition.
var pairFigures = map[string]func(pairs, n int) figure{
	"P3":   func(pairs, _ int) figure { return p3(pairs) },
	"P6":   p6,
	"P6c":  p6c,
	"P10":  p10,
	"P7m":  p7m,
	"P11":  p11,
	"P11r": p11r,
	"P12":  p12,
	"P12m": p12m,
	"P13":  func(pairs, _ int) figure { return p13(pairs) },
	"P13m": func(pairs, _ int) figure { return p13m(pairs) },
}

// readPairs parses a benchmark's file: a pair a line, "subject<TAB>baseline<TAB>subjectFirst",
// optionally followed by "<TAB>kind<TAB>subject's count<TAB>baseline's count", the work each side
// did; work is then each side's counts of every line (nil without them).
func readPairs(path string) (runs []pair, work []map[string]map[string]int, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	for n, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 && len(f) != 6 {
			return nil, nil, fmt.Errorf("%s:%d: %q is not subject, baseline, subject first (and kind, subject's and baseline's counts)", path, n+1, line)
		}
		s, err1 := strconv.ParseFloat(f[0], 64)
		b, err2 := strconv.ParseFloat(f[1], 64)
		first, err3 := strconv.ParseBool(f[2])
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, nil, fmt.Errorf("%s:%d: %q: not numbers", path, n+1, line)
		}
		runs = append(runs, pair{Subject: s, Baseline: b, SubjectFirst: first, Load: loadavg()})
		if len(f) == 6 {
			sw, err1 := strconv.Atoi(f[4])
			bw, err2 := strconv.Atoi(f[5])
			if err1 != nil || err2 != nil {
				return nil, nil, fmt.Errorf("%s:%d: %q: counts are not numbers", path, n+1, line)
			}
			work = append(work, map[string]map[string]int{"subject": {f[3]: sw}, "baseline": {f[3]: bw}})
		}
	}
	return runs, work, nil
}

// importPairs makes each figure of spec ("P3=file,P11=file") of its file of pairs, with N n.
func importPairs(spec, dir, commit string, n int) error {
	for item := range strings.SplitSeq(spec, ",") {
		id, file, ok := strings.Cut(item, "=")
		def := pairFigures[id]
		if !ok || def == nil {
			return fmt.Errorf("-pairs %q: want ID=file with ID one of P3, P6, P6c, P7m, P10, P11, P11r, P12, P12m, P13, P13m", item)
		}
		runs, work, err := readPairs(file)
		if err != nil {
			return err
		}
		f := def(len(runs), n)
		f.Runs, f.Commit, f.Machine = runs, commit, machine()
		for _, w := range work {
			f.addWork(f.Subject, w["subject"])
			f.addWork(f.Base, w["baseline"])
		}
		f.Notes = append(f.Notes, "The load average given for each pair is the one when the benchmark had ended.")
		if err := f.save(figurePath(dir, id)); err != nil {
			return err
		}
	}
	return nil
}
