package snapshot

import (
	"bytes"
	"context"
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
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestSnapshotFigures (make bench-snapshot; skipped unless SNAPSHOT_BENCH=1) measures, in one
// run on one embedded etcd holding a tenant of N keys among 9 other tenants of N/9 keys each,
// a snapshot of the tenant (Take into a discarded stream) against the two baselines: the whole
// datastore's snapshot (Maintenance.Snapshot, what etcdctl snapshot save streams) and a plain
// range read of the tenant's prefix (one Get); and the restore's write of that snapshot into a
// fresh prefix against the plain writes that put the tenant there. It reports the ratios, the
// heap the snapshot held at most (sampled) and the peak RSS of separate processes that take and
// restore it, for N = 10,000 and 100,000 (SNAPSHOT_BENCH_SIZES).
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
	value := []byte(strings.Repeat("v", 600)) // about a small Kubernetes object
	for _, n := range sizes {
		ctx := context.Background()
		c := etcdtest.Client(t)
		put := func(prefix string, count int) {
			for i := 0; i < count; i += 100 {
				var ops []clientv3.Op
				for j := i; j < i+100 && j < count; j++ {
					v := append([]byte(fmt.Sprintf("%d-", j)), value...)
					ops = append(ops, clientv3.OpPut(fmt.Sprintf("%sregistry/widgets/app/w-%07d", prefix, j), string(v)))
				}
				if _, err := c.Txn(ctx).Then(ops...).Commit(); err != nil {
					t.Fatal(err)
				}
			}
		}
		start := time.Now()
		put("/tenant/", n)
		putTook := time.Since(start)
		for i := range 9 {
			put(fmt.Sprintf("/other-%d/", i), n/9)
		}

		start = time.Now()
		var whole int64
		rc, err := c.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		whole, _ = io.Copy(io.Discard, rc)
		rc.Close()
		wholeTook := time.Since(start)

		start = time.Now()
		resp, err := c.Get(ctx, "/tenant/", clientv3.WithPrefix())
		if err != nil || len(resp.Kvs) != n {
			t.Fatalf("range read: %v", err)
		}
		rangeTook := time.Since(start)
		resp = nil

		start = time.Now()
		var taken bytes.Buffer // compressed: under 1 MiB at 100,000 keys
		stats, err := Take(ctx, c, "/tenant/", Header{}, DefaultPageSize, &taken)
		takeTook := time.Since(start)
		if err != nil || stats.Objects != int64(n) {
			t.Fatalf("Take: %+v, %v", stats, err)
		}

		// Again for its memory, with a low GC target so the heap in use is what is live (the
		// embedded etcd's included, which serves the pages in this process).
		old := debug.SetGCPercent(5)
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
		_, err = Take(ctx, c, "/tenant/", Header{}, DefaultPageSize, io.Discard)
		close(done)
		debug.SetGCPercent(old)
		if err != nil {
			t.Fatal(err)
		}
		held := int64(peak.Load()) - int64(base.HeapInuse)

		// The restore's write: the stream back into a prefix of its own, against the plain
		// writes that put the tenant there (the same keys, the same 100 a transaction).
		file := t.TempDir() + "/tenant.snap"
		if err := os.WriteFile(file, taken.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := NewReader(bytes.NewReader(taken.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		restored, err := RestoreInto(ctx, c, "/restored/", r, RestoreOptions{})
		restoreTook := time.Since(start)
		if err != nil || restored.Written != int64(n) {
			t.Fatalf("RestoreInto: %+v, %v", restored, err)
		}
		t.Logf("N=%d: restore's write of the snapshot into a fresh prefix %s; the plain writes of the same keys %s: ratio %.2f",
			n, restoreTook.Round(time.Millisecond), putTook.Round(time.Millisecond), float64(restoreTook)/float64(putTook))
		restoreRSS := childRSS(t, c, "restore", "SNAPSHOT_CHILD_FILE="+file)
		// Peak RSS of a separate process that only takes the snapshot (the embedded etcd stays
		// here), against one that connects and reads one key.
		idleRSS := childRSS(t, c, "idle")
		takeRSS := childRSS(t, c, "take")
		t.Logf("N=%d: peak RSS of a process taking the snapshot %.1f MiB, of one restoring it from a file %.1f MiB, of one that connects and reads one key %.1f MiB: differences %.1f and %.1f MiB",
			n, mib(takeRSS), mib(restoreRSS), mib(idleRSS), mib(takeRSS-idleRSS), mib(restoreRSS-idleRSS))
		t.Logf("N=%d: tenant snapshot %s (%d keys, %d bytes compressed); whole datastore snapshot %s (%d bytes): ratio %.2f; range read of the prefix %s: ratio %.2f; heap in use above the baseline at most %.1f MiB (GC target 5%%; the embedded etcd serving the pages included)",
			n, takeTook.Round(time.Millisecond), stats.Objects, taken.Len(), wholeTook.Round(time.Millisecond), whole,
			float64(takeTook)/float64(wholeTook), rangeTook.Round(time.Millisecond), float64(takeTook)/float64(rangeTook), float64(held)/(1<<20))
	}
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
