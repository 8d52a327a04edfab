package store

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/ipam"
)

// Repairer frees reservations that no IPAllocation holds. Allocations and releases commit
// with their IPAllocation in one transaction, so such a reservation only appears when an
// IPAllocation leaves etcd another way (its finalizers removed after a delete, or a write
// straight to etcd). A reservation is freed only after it has been seen unreferenced for
// the whole grace period, and with a compare on the pool's revision, so a pass that races
// an allocation frees nothing. An IPAllocation whose addresses the state does not hold is
// reported, never silently fixed: that would be an address that could be handed out twice.
type Repairer struct {
	store    *Store
	grace    time.Duration
	suspects map[string]time.Time // namespace/pool/range -> first seen unreferenced
}

// NewRepairer returns a repair loop over store.
func NewRepairer(store *Store, grace time.Duration) *Repairer {
	return &Repairer{store: store, grace: grace, suspects: map[string]time.Time{}}
}

// Run repairs every interval until ctx is done.
func (r *Repairer) Run(ctx context.Context, interval time.Duration) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if _, err := r.RunOnce(ctx, time.Now()); err != nil {
			klog.FromContext(ctx).Error(err, "IPAM repair pass failed")
		}
	}, interval)
}

// RepairReport is what one pass found.
type RepairReport struct {
	Pools int
	// Leaked are the reservations held by no IPAllocation, as namespace/pool/range.
	Leaked []string
	// Freed are the leaked reservations freed in this pass.
	Freed []string
	// Missing are IPAllocations whose addresses the pool state does not hold.
	Missing []string
}

// RunOnce checks every pool once at now.
func (r *Repairer) RunOnce(ctx context.Context, now time.Time) (RepairReport, error) {
	logger := klog.FromContext(ctx)
	var report RepairReport
	pools, err := r.store.client.Get(ctx, r.store.pools.Prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return report, err
	}
	seen := map[string]bool{}
	for _, kv := range pools.Kvs {
		ns, name, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), r.store.pools.Prefix), "/")
		if !ok {
			continue
		}
		report.Pools++
		if err := r.repairPool(ctx, ns, name, now, seen, &report); err != nil {
			logger.Error(err, "IPAM repair of a pool failed", "pool", ns+"/"+name)
		}
	}
	for key := range r.suspects {
		if !seen[key] {
			delete(r.suspects, key)
		}
	}
	for _, l := range report.Freed {
		logger.Info("IPAM repair freed a reservation no IPAllocation held", "reservation", l, "grace", r.grace)
	}
	for _, m := range report.Missing {
		logger.Error(nil, "IPAllocation holds addresses its pool's state does not: they could be handed out again", "ipallocation", m)
	}
	return report, nil
}

func (r *Repairer) repairPool(ctx context.Context, ns, name string, now time.Time, seen map[string]bool, report *RepairReport) error {
	st, err := r.store.read(ctx, ns, name)
	if err != nil {
		return err
	}
	// The IPAllocations of the pool at the same revision as the state.
	allocs, err := r.store.client.Get(ctx, r.store.allocations.Prefix+ns+"/", clientv3.WithPrefix(), clientv3.WithRev(st.readRev))
	if err != nil {
		return err
	}
	held := map[ipam.Range]bool{}
	for _, kv := range allocs.Kvs {
		a := &butler.IPAllocation{}
		if err := r.store.allocations.decode(ctx, string(kv.Key), kv.Value, a, kv.ModRevision); err != nil {
			return err
		}
		if a.Spec.PoolRef.Name != name {
			continue
		}
		if rng, ok := heldRange(a); ok {
			held[rng] = true
			if got, ok := st.allocator.AllocationAt(rng.First); !ok || got != rng {
				report.Missing = append(report.Missing, fmt.Sprintf("%s/%s (%s)", ns, a.Name, rng))
			}
		}
	}
	next := st.allocator.Clone()
	touched := map[netip.Prefix]bool{}
	var freed []string
	for _, rng := range st.allocator.Allocations() {
		if held[rng] {
			continue
		}
		key := fmt.Sprintf("%s/%s/%s", ns, name, rng)
		report.Leaked = append(report.Leaked, key)
		seen[key] = true
		first, ok := r.suspects[key]
		if !ok {
			r.suspects[key] = now
			continue
		}
		if now.Sub(first) < r.grace {
			continue
		}
		if err := next.Release(rng); err != nil {
			return err
		}
		r.store.touch(touched, rng)
		freed = append(freed, key)
	}
	if len(freed) == 0 {
		return nil
	}
	poolKey := r.store.pools.Key(ns, name)
	pool := poolWithStatus(st.pool, next)
	poolData, err := r.store.pools.encode(ctx, poolKey, pool)
	if err != nil {
		return err
	}
	ops, err := r.store.blockOps(ns, name, next, touched)
	if err != nil {
		return err
	}
	resp, err := r.store.client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(poolKey), "=", st.poolRev)).
		Then(append(ops, clientv3.OpPut(poolKey, poolData))...).Commit()
	if err != nil || !resp.Succeeded {
		return err // the pool moved: the next pass looks again
	}
	for _, key := range freed {
		delete(r.suspects, key)
	}
	report.Freed = append(report.Freed, freed...)
	return nil
}
