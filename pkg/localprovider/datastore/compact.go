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
// It waits while a snapshot streams (Hold): a snapshot reads page by page at one revision,
// which a compaction past it would take away. A pass waits for the snapshots under way and
// snapshots asked for meanwhile wait for the pass, so a tenant that snapshots back to back delays
// the datastore's compaction by one snapshot, never skips it.
type Compactor struct {
	Client   *clientv3.Client
	Interval time.Duration

	mu      sync.Mutex // held through a pass's compaction, so a Hold waits for it
	changed *sync.Cond // holds or waiting changed
	last    int64
	holds   int
	waiting bool // a pass waits for the holds to end: new ones wait for it
}

// cond is the Compactor's condition on mu, made on first use. mu is held.
func (c *Compactor) cond() *sync.Cond {
	if c.changed == nil {
		c.changed = sync.NewCond(&c.mu)
	}
	return c.changed
}

// Hold keeps every pass from compacting until the returned release is called; it waits for a
// pass under way, or waiting to run, to end. A nil Compactor holds nothing.
func (c *Compactor) Hold() (release func()) {
	if c == nil {
		return func() {}
	}
	c.mu.Lock()
	for c.waiting {
		c.cond().Wait()
	}
	c.holds++
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.holds--
			c.cond().Broadcast()
			c.mu.Unlock()
		})
	}
}

// waitForHolds waits, mu held, until no snapshot streams, keeping new ones from starting; it
// gives up when ctx ends.
func (c *Compactor) waitForHolds(ctx context.Context) error {
	if c.holds == 0 {
		return nil
	}
	klog.FromContext(ctx).V(2).Info("Compaction waits: a snapshot is streaming", "snapshots", c.holds)
	c.waiting = true
	defer func() {
		c.waiting = false
		c.cond().Broadcast()
	}()
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.cond().Broadcast()
		c.mu.Unlock()
	})
	defer stop()
	for c.holds > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.cond().Wait()
	}
	return ctx.Err()
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

// Pass waits for the snapshots streaming to end (or ctx), then compacts to the revision the
// previous pass saw (none on the first) and remembers the current one; it returns the revision
// compacted to, 0 on the first pass.
func (c *Compactor) Pass(ctx context.Context) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.waitForHolds(ctx); err != nil {
		return 0, err
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
