package snapshot

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/butlerdotdev/butler-apiserver/pkg/etcdtest"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestSnapshotFigures (make bench-snapshot; skipped unless SNAPSHOT_BENCH=1) measures on one
// embedded etcd holding a tenant of N keys among 9 other tenants of N/9 keys each, every value
// incompressible (randomValue: about a small Kubernetes object's size, which gzip cannot shrink
// to a runs-of-one-character stream), for N = 10,000 and 100,000 (SNAPSHOT_BENCH_SIZES):
//   - P11, in SNAPSHOT_PAIRS pairs (default 1) in alternating order: a snapshot of the tenant
//     (Take into a discarded stream) against the whole datastore's snapshot (Maintenance.Snapshot,
//     what etcdctl snapshot save streams, into a discarded stream);
//   - P11r, in as many pairs after those (their writes would grow the whole snapshot): the
//     restore's write of that snapshot into a fresh prefix against plain writes of the same keys
//     and values, 100 a transaction, into another fresh prefix;
//   - once: a plain range read of the tenant's prefix (one Get), the heap the snapshot held at
//     most (sampled) and the peak RSS of separate processes that take and restore it.
//
// With SNAPSHOT_PAIRS_OUT=<dir> (one size only) it writes the pairs to <dir>/p11-pairs.tsv and
// <dir>/p11r-pairs.tsv for test/bench -pairs (make bench-report ONLY=P11).
func TestSnapshotFigures(t *testing.T) {
	if os.Getenv("SNAPSHOT_BENCH") == "" {
		t.Skip("SNAPSHOT_BENCH=1 runs it (make bench-snapshot)")
	}
	sizes := []int{10000, 100000}
	if v := os.Getenv("SNAPSHOT_BENCH_SIZES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	pairs := 1
	if v, err := strconv.Atoi(os.Getenv("SNAPSHOT_PAIRS")); err == nil && v > 0 {
		pairs = v
	}
	out := os.Getenv("SNAPSHOT_PAIRS_OUT")
	if out != "" && len(sizes) != 1 {
		t.Fatalf("SNAPSHOT_PAIRS_OUT wants one size, not %v", sizes)
	}
	for _, n := range sizes {
		ctx := context.Background()
		c := etcdtest.Client(t)
		seed(t, c, "/tenant/", n)
		for i := range 9 {
			seed(t, c, fmt.Sprintf("/other-%d/", i), n/9)
		}
		all, err := c.Get(ctx, "/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}

		start := time.Now()
		resp, err := c.Get(ctx, "/tenant/", clientv3.WithPrefix())
		if err != nil || len(resp.Kvs) != n {
			t.Fatalf("range read: %v", err)
		}
		rangeTook := time.Since(start)
		tenant := resp.Kvs // the plain writes' keys and values
		resp = nil

		var taken bytes.Buffer // the snapshot the restores write back
		stats, err := Take(ctx, c, "/tenant/", Header{}, DefaultPageSize, &taken)
		if err != nil || stats.Objects != int64(n) {
			t.Fatalf("Take: %+v, %v", stats, err)
		}
		held := snapshotHeap(t, c)
		file := t.TempDir() + "/tenant.snap"
		if err := os.WriteFile(file, taken.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		restoreRSS := childRSS(t, c, "restore", "SNAPSHOT_CHILD_FILE="+file)
		// Peak RSS of a separate process that only takes the snapshot (the embedded etcd stays
		// here), against one that connects and reads one key.
		idleRSS := childRSS(t, c, "idle")
		takeRSS := childRSS(t, c, "take")

		var snaps, restores []benchPair
		for k := range pairs {
			snaps = append(snaps, snapshotPair(t, c, n, all.Count, k%2 == 1))
		}
		for k := range pairs {
			restores = append(restores, restorePair(t, c, taken.Bytes(), tenant, k, k%2 == 1))
		}
		for _, p := range snaps {
			t.Logf("N=%d, P11 (%s first): tenant snapshot %.1f ms (%d keys, %d bytes compressed); whole datastore snapshot %.1f ms (%d keys): ratio %.2f",
				n, p.first(), p.subject, p.subjectWork, taken.Len(), p.baseline, p.baselineWork, p.subject/p.baseline)
		}
		for _, p := range restores {
			t.Logf("N=%d, P11r (%s first): restore's write of the snapshot into a fresh prefix %.1f ms; plain writes of the same keys %.1f ms: ratio %.2f",
				n, p.first(), p.subject, p.baseline, p.subject/p.baseline)
		}
		t.Logf("N=%d: range read of the tenant's prefix %s; heap in use above the baseline while snapshotting at most %.1f MiB (GC target 5%%; the embedded etcd serving the pages included)",
			n, rangeTook.Round(time.Millisecond), float64(held)/(1<<20))
		t.Logf("N=%d: peak RSS of a process taking the snapshot %.1f MiB, of one restoring it from a file %.1f MiB, of one that connects and reads one key %.1f MiB: differences %.1f and %.1f MiB",
			n, mib(takeRSS), mib(restoreRSS), mib(idleRSS), mib(takeRSS-idleRSS), mib(restoreRSS-idleRSS))
		if out != "" {
			writePairs(t, out+"/p11-pairs.tsv", "keys in the stream", snaps)
			writePairs(t, out+"/p11r-pairs.tsv", "keys written", restores)
		}
	}
}

// randomValue is an incompressible value of about a small Kubernetes object's size: 450 random
// bytes, base64'd to 600 characters (gzip takes base64 back to about its 6 bits a character, no
// further), after the key's number.
func randomValue(j int) string {
	raw := make([]byte, 450)
	if _, err := rand.Read(raw); err != nil {
		panic(err)
	}
	return fmt.Sprintf("%d-%s", j, base64.StdEncoding.EncodeToString(raw))
}

// seed writes count keys of random values under prefix, 100 a transaction.
func seed(t *testing.T, c *clientv3.Client, prefix string, count int) {
	t.Helper()
	for i := 0; i < count; i += 100 {
		var ops []clientv3.Op
		for j := i; j < i+100 && j < count; j++ {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("%sregistry/widgets/app/w-%07d", prefix, j), randomValue(j)))
		}
		if _, err := c.Txn(context.Background()).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// benchPair is one pair of P11 or P11r: milliseconds of the subject and the baseline, which ran
// first, and the keys each handled.
type benchPair struct {
	subject, baseline         float64
	subjectFirst              bool
	subjectWork, baselineWork int64
}

func (p benchPair) first() string {
	if p.subjectFirst {
		return "subject"
	}
	return "baseline"
}

// inOrder runs subject and baseline in the pair's order and returns their milliseconds.
func inOrder(subjectFirst bool, subject, baseline func()) (float64, float64) {
	timed := func(f func()) float64 {
		start := time.Now()
		f()
		return float64(time.Since(start).Microseconds()) / 1000
	}
	var s, b float64
	if subjectFirst {
		s = timed(subject)
		b = timed(baseline)
	} else {
		b = timed(baseline)
		s = timed(subject)
	}
	return s, b
}

// snapshotPair times the tenant's snapshot against the whole datastore's (total keys).
func snapshotPair(t *testing.T, c *clientv3.Client, n int, total int64, subjectFirst bool) benchPair {
	ctx := context.Background()
	var stats Stats
	s, b := inOrder(subjectFirst, func() {
		var err error
		if stats, err = Take(ctx, c, "/tenant/", Header{}, DefaultPageSize, io.Discard); err != nil || stats.Objects != int64(n) {
			t.Fatalf("Take: %+v, %v", stats, err)
		}
	}, func() {
		rc, err := c.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		if _, err := io.Copy(io.Discard, rc); err != nil {
			t.Fatal(err)
		}
	})
	return benchPair{subject: s, baseline: b, subjectFirst: subjectFirst, subjectWork: stats.Objects, baselineWork: total}
}

// restorePair times the restore of snapshot into /restored-<k>/ against plain writes of the
// tenant's keys and values into /plain-<k>/, 100 a transaction.
func restorePair(t *testing.T, c *clientv3.Client, snapshot []byte, tenant []*mvccpb.KeyValue, k int, subjectFirst bool) benchPair {
	ctx := context.Background()
	r, err := NewReader(bytes.NewReader(snapshot))
	if err != nil {
		t.Fatal(err)
	}
	var restored RestoreStats
	var plain int64
	s, b := inOrder(subjectFirst, func() {
		if restored, err = RestoreInto(ctx, c, fmt.Sprintf("/restored-%d/", k), r, RestoreOptions{}); err != nil {
			t.Fatal(err)
		}
	}, func() {
		to := fmt.Sprintf("/plain-%d/", k)
		for i := 0; i < len(tenant); i += 100 {
			var ops []clientv3.Op
			for _, kv := range tenant[i:min(i+100, len(tenant))] {
				ops = append(ops, clientv3.OpPut(to+strings.TrimPrefix(string(kv.Key), "/tenant/"), string(kv.Value)))
			}
			if _, err := c.Txn(ctx).Then(ops...).Commit(); err != nil {
				t.Fatal(err)
			}
			plain += int64(len(ops))
		}
	})
	return benchPair{subject: s, baseline: b, subjectFirst: subjectFirst, subjectWork: restored.Written, baselineWork: plain}
}

// writePairs writes pairs as test/bench reads them: subject, baseline, subject first, and the
// work each side did (kind, subject's count, baseline's count), tab-separated, a pair a line.
func writePairs(t *testing.T, path, kind string, pairs []benchPair) {
	var b strings.Builder
	for _, p := range pairs {
		fmt.Fprintf(&b, "%.3f\t%.3f\t%t\t%s\t%d\t%d\n", p.subject, p.baseline, p.subjectFirst, kind, p.subjectWork, p.baselineWork)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshotHeap takes the tenant's snapshot again with a low GC target and returns the most heap
// in use above what was in use before (the embedded etcd's included, which serves the pages in
// this process), sampled every 5 ms.
func snapshotHeap(t *testing.T, c *clientv3.Client) int64 {
	old := debug.SetGCPercent(5)
	defer debug.SetGCPercent(old)
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
		}
	}()
	_, err := Take(context.Background(), c, "/tenant/", Header{}, DefaultPageSize, io.Discard)
	close(done)
	if err != nil {
		t.Fatal(err)
	}
	return int64(peak.Load()) - int64(base.HeapInuse)
}

// childRSS runs this test binary again as TestSnapshotChild in mode (take: the tenant's snapshot
// into a discarded stream; idle: connect and read one key) against c's etcd and returns the
// child's peak RSS in bytes, as the child reads it (VmHWM) just before it exits. Not the
// rusage of wait4: Linux starts a process's ru_maxrss at exec with the high-water mark of the
// memory it replaced, and Go forks with the parent's memory shared (vfork), so that would be the
// parent's peak (the embedded etcd's) for any child.
func childRSS(t *testing.T, c *clientv3.Client, mode string, env ...string) int64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSnapshotChild$", "-test.count=1", "-test.v")
	cmd.Env = append(append(os.Environ(), "SNAPSHOT_CHILD_ENDPOINT="+c.Endpoints()[0], "SNAPSHOT_CHILD_MODE="+mode), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child %s: %v\n%s", mode, err, out)
	}
	_, rest, ok := strings.Cut(string(out), childHWM)
	if !ok {
		t.Fatalf("child %s reported no peak RSS:\n%s", mode, out)
	}
	kib, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
	if err != nil {
		t.Fatalf("child %s: %v", mode, err)
	}
	return kib << 10
}

// childHWM precedes the child's peak RSS in KiB in its output.
const childHWM = "SNAPSHOT_CHILD_VMHWM_KIB="

// TestSnapshotChild is childRSS's child; it does nothing unless SNAPSHOT_CHILD_ENDPOINT is set.
func TestSnapshotChild(t *testing.T) {
	endpoint := os.Getenv("SNAPSHOT_CHILD_ENDPOINT")
	if endpoint == "" {
		t.Skip("the child of TestSnapshotFigures")
	}
	ctx := context.Background()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	switch os.Getenv("SNAPSHOT_CHILD_MODE") {
	case "take":
		if _, err := Take(ctx, c, "/tenant/", Header{}, DefaultPageSize, io.Discard); err != nil {
			t.Fatal(err)
		}
	case "restore":
		f, err := os.Open(os.Getenv("SNAPSHOT_CHILD_FILE"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r, err := NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := RestoreInto(ctx, c, "/restored-child/", r, RestoreOptions{}); err != nil {
			t.Fatal(err)
		}
	default:
		if _, err := c.Get(ctx, "/tenant/", clientv3.WithPrefix(), clientv3.WithLimit(1)); err != nil {
			t.Fatal(err)
		}
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			fmt.Printf("%s%s\n", childHWM, f[1])
			return
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// P11's values must not be what gzip flatters: a tenant's worth of them compresses to no less
// than base64's 6 bits a character.
func TestBenchValuesDoNotCompress(t *testing.T) {
	var raw bytes.Buffer
	for j := range 200 {
		raw.WriteString(randomValue(j))
	}
	var packed bytes.Buffer
	zw := gzip.NewWriter(&packed)
	if _, err := zw.Write(raw.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if ratio := float64(packed.Len()) / float64(raw.Len()); ratio < 0.7 {
		t.Errorf("200 values gzip to %.2f of their size", ratio)
	}
}

func TestBenchPairsRunInTheirOrder(t *testing.T) {
	for _, subjectFirst := range []bool{false, true} {
		var ran []string
		inOrder(subjectFirst, func() { ran = append(ran, "subject") }, func() { ran = append(ran, "baseline") })
		if want := (benchPair{subjectFirst: subjectFirst}).first(); ran[0] != want {
			t.Errorf("subject first %t: ran %v", subjectFirst, ran)
		}
	}
}
