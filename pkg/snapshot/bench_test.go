package snapshot

import (
	"context"
	"fmt"
	"io"
	"os"
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
		t.Logf("N=%d: tenant snapshot %s (%d keys, %d bytes compressed); whole datastore snapshot %s (%d bytes): ratio %.2f; range read of the prefix %s: ratio %.2f; heap in use above the baseline at most %.1f MiB (GC target 5%%; the embedded etcd serving the pages included)",
			n, takeTook.Round(time.Millisecond), stats.Objects, out.n, wholeTook.Round(time.Millisecond), whole,
			float64(takeTook)/float64(wholeTook), rangeTook.Round(time.Millisecond), float64(takeTook)/float64(rangeTook), float64(held)/(1<<20))
	}
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }
