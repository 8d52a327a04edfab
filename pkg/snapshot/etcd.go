package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultPageSize is how many keys one range read of a snapshot returns.
const DefaultPageSize = 500

// Take writes every object under prefix, as of one revision, to w: the keys from prefix up to
// prefix+"~" (no key kube-apiserver writes has "~" after its prefix; the local provider keeps a
// restore's fresh data under it, package datastore's generations). The first page fixes the
// revision (the datastore's current one) and every later page is read at it, so the stream holds
// all writes up to that revision and none after, one page in memory at a time. The caller holds
// off the datastore's compaction until Take returns (a compaction past the revision would fail
// the later pages with ErrCompacted).
func Take(ctx context.Context, kv clientv3.KV, prefix string, h Header, pageSize int64, w io.Writer) (Stats, error) {
	if !strings.HasPrefix(prefix, "/") || !strings.HasSuffix(prefix, "/") || len(prefix) < 3 {
		return Stats{}, fmt.Errorf("prefix %q is not a tenant's /<schema>/", prefix)
	}
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	end := prefix + "~"
	opts := func(rev int64) []clientv3.OpOption {
		o := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(pageSize)}
		if rev > 0 {
			o = append(o, clientv3.WithRev(rev))
		}
		return o
	}
	first, err := kv.Get(ctx, prefix, opts(0)...)
	if err != nil {
		return Stats{}, err
	}
	h.Prefix, h.Revision = prefix, first.Header.Revision
	sw, err := NewWriter(w, h)
	if err != nil {
		return Stats{}, err
	}
	resp := first
	for {
		for _, item := range resp.Kvs {
			if err := sw.Write(Record{Key: strings.TrimPrefix(string(item.Key), prefix), Value: item.Value, Leased: item.Lease != 0}); err != nil {
				return Stats{}, err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		next := string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		if resp, err = kv.Get(ctx, next, opts(h.Revision)...); err != nil {
			return Stats{}, fmt.Errorf("reading at revision %d: %w", h.Revision, err)
		}
	}
	return sw.Close()
}

// RestoreOptions say how a stream is written back.
type RestoreOptions struct {
	// Keep, if set, says which records to write; the others are counted as dropped.
	Keep func(Record) bool
	// LeaseTTL is the time to live, in seconds, of the lease that keys leased at the source get
	// (default one hour: kube-apiserver's Events).
	LeaseTTL int64
	// BatchOps and BatchBytes bound one transaction (etcd's defaults: 128 operations, 1.5 MiB a request).
	BatchOps   int
	BatchBytes int
}

// RestoreStats counts what a restore wrote and dropped.
type RestoreStats struct{ Written, Dropped int64 }

// RestoreInto writes a stream under prefix, which it empties first. It is meant for a prefix
// nobody serves yet (a new cluster's, before its kube-apiserver starts): it writes in batches,
// and a restore that stops half way is finished by running it again.
func RestoreInto(ctx context.Context, c *clientv3.Client, prefix string, r *Reader, o RestoreOptions) (RestoreStats, error) {
	var st RestoreStats
	if !strings.HasPrefix(prefix, "/") || !strings.HasSuffix(prefix, "/") || len(prefix) < 3 {
		return st, fmt.Errorf("prefix %q is not a tenant's /<schema>/", prefix)
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 3600
	}
	if o.BatchOps <= 0 {
		o.BatchOps = 100
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = 1 << 20
	}
	if _, err := c.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
		return st, err
	}
	var (
		lease clientv3.LeaseID
		ops   []clientv3.Op
		bytes int
	)
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		if _, err := c.Txn(ctx).Then(ops...).Commit(); err != nil {
			return err
		}
		ops, bytes = ops[:0], 0
		return nil
	}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, err
		}
		if o.Keep != nil && !o.Keep(rec) {
			st.Dropped++
			continue
		}
		var opts []clientv3.OpOption
		if rec.Leased {
			if lease == 0 {
				l, err := c.Grant(ctx, o.LeaseTTL)
				if err != nil {
					return st, err
				}
				lease = l.ID
			}
			opts = append(opts, clientv3.WithLease(lease))
		}
		size := len(prefix) + len(rec.Key) + len(rec.Value)
		if len(ops) >= o.BatchOps || (len(ops) > 0 && bytes+size > o.BatchBytes) {
			if err := flush(); err != nil {
				return st, err
			}
		}
		ops = append(ops, clientv3.OpPut(prefix+rec.Key, string(rec.Value), opts...))
		bytes += size
		st.Written++
	}
	return st, flush()
}
