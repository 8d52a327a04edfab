package snapshot

import (
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
	"syscall"
	"testing"
	"time"

	"github.com/butlerdotdev/butler-apiserver/pkg/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestSnapshotFigures (make bench-snapshot; skipped unless SNAPSHOT_BENCH=1) measures, in one
// run on one embedded etcd holding a tenant of N keys among 9 other tenants of N/9 keys each,
// a snapshot of the tenant (Take into a discarded stream) against the two baselines: the whole
// datastore's snapshot (Maintenance.Snapshot, what etcdctl snapshot save streams) and a plain
// range read of the tenant's prefix (one Get). It reports the ratios and the heap the snapshot
// held at most (sampled), for N = 10,000 and 100,000 (SNAPSHOT_BENCH_SIZES).
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
		put("/tenant/", n)
		for i := range 9 {
			put(fmt.Sprintf("/other-%d/", i), n/9)
		}

		start := time.Now()
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
		var out countWriter
		stats, err := Take(ctx, c, "/tenant/", Header{}, DefaultPageSize, &out)
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
		// Peak RSS of a separate process that only takes the snapshot (the embedded etcd stays
		// here), against one that connects and reads one key.
		idleRSS := childRSS(t, c, "idle")
		takeRSS := childRSS(t, c, "take")
		t.Logf("N=%d: peak RSS of a process taking the snapshot %.1f MiB; of one that connects and reads one key %.1f MiB; difference %.1f MiB",
			n, float64(takeRSS)/(1<<20), float64(idleRSS)/(1<<20), float64(takeRSS-idleRSS)/(1<<20))
		t.Logf("N=%d: tenant snapshot %s (%d keys, %d bytes compressed); whole datastore snapshot %s (%d bytes): ratio %.2f; range read of the prefix %s: ratio %.2f; heap in use above the baseline at most %.1f MiB (GC target 5%%; the embedded etcd serving the pages included)",
			n, takeTook.Round(time.Millisecond), stats.Objects, out.n, wholeTook.Round(time.Millisecond), whole,
			float64(takeTook)/float64(wholeTook), rangeTook.Round(time.Millisecond), float64(takeTook)/float64(rangeTook), float64(held)/(1<<20))
	}
}

// childRSS runs this test binary again as TestSnapshotChild in mode (take: the tenant's snapshot
// into a discarded stream; idle: connect and read one key) against c's etcd and returns the
// child's peak RSS in bytes.
func childRSS(t *testing.T, c *clientv3.Client, mode string) int64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSnapshotChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SNAPSHOT_CHILD_ENDPOINT="+c.Endpoints()[0], "SNAPSHOT_CHILD_MODE="+mode)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child %s: %v\n%s", mode, err, out)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatal("no rusage for the child")
	}
	return ru.Maxrss << 10 // KiB on Linux
}

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
	if os.Getenv("SNAPSHOT_CHILD_MODE") == "take" {
		if _, err := Take(ctx, c, "/tenant/", Header{}, DefaultPageSize, io.Discard); err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := c.Get(ctx, "/tenant/", clientv3.WithPrefix(), clientv3.WithLimit(1)); err != nil {
		t.Fatal(err)
	}
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }
