package datastore

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/klog/v2"
)

// Compactor compacts a datastore's history on behalf of its tenants, whose kube-apiservers run
// with --etcd-compaction-interval=0: etcd's Compact is not scoped per user (a tenant allowed to
// compact would compact everyone's history), so the datastore's owner does it. Like
// kube-apiserver's own compactor it keeps one interval of history: each pass compacts to the
// revision the previous pass saw, so a watcher that is less than an interval behind can resume.
// It holds off while a snapshot streams (Hold): a snapshot reads page by page at one revision,
// which a compaction past it would take away.
type Compactor struct {
	Client   *clientv3.Client
	Interval time.Duration

	mu    sync.Mutex // held through a pass, so a Hold waits for a pass under way
	last  int64
	holds int
}

// Hold keeps every pass from compacting until the returned release is called; it waits for a
// pass under way to end. A nil Compactor holds nothing.
func (c *Compactor) Hold() (release func()) {
	if c == nil {
		return func() {}
	}
	c.mu.Lock()
	c.holds++
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.holds--
			c.mu.Unlock()
		})
	}
}

// Run compacts every Interval until ctx ends.
func (c *Compactor) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	t := time.NewTicker(c.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if rev, err := c.Pass(ctx); err != nil {
			logger.Error(err, "Compacting the datastore failed; trying again next interval")
		} else if rev > 0 {
			logger.V(2).Info("Compacted the datastore", "revision", rev)
		}
	}
}

// Pass compacts to the revision the previous pass saw (none on the first) and remembers the
// current one; it returns the revision compacted to, 0 when none (the first pass, or one held
// off by a snapshot: it compacts nothing and remembers nothing).
func (c *Compactor) Pass(ctx context.Context) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holds > 0 {
		klog.FromContext(ctx).V(2).Info("Compaction held off: a snapshot is streaming", "snapshots", c.holds)
		return 0, nil
	}
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// A Get of any key returns the store's revision; root may read it.
	resp, err := c.Client.Get(pctx, "compact_rev_key")
	if err != nil {
		return 0, err
	}
	current, target := resp.Header.Revision, c.last
	c.last = current
	if target == 0 {
		return 0, nil
	}
	if _, err := c.Client.Compact(pctx, target); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return 0, err
	}
	return target, nil
}
