package store

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime/debug"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/ipam"
)

const (
	// maxBatch bounds the requests in one transaction; with their compares, puts and the
	// touched blocks it stays well under etcd's default limit of 128 operations.
	maxBatch = 32
	// maxAttempts bounds the retries of one batch against a pool that keeps changing.
	maxAttempts = 50
)

type operation int

const (
	opAllocate operation = iota
	opRelease
	// opRefresh only rewrites the pool's status, after a change of its spec.
	opRefresh
)

// request is one allocation or release waiting for its pool's next transaction.
type request struct {
	op    operation
	alloc *butler.IPAllocation
	done  chan result
}

type result struct {
	alloc *butler.IPAllocation
	pool  *butler.NetworkPool
	err   error
}

// batcher serializes one pool's transactions in this replica and puts every request that
// arrives while one is in flight into the next one.
type batcher struct {
	store           *Store
	namespace, pool string

	queue   chan *request
	running bool
	cache   *state // the state after this replica's last commit or read; may be stale
}

func (s *Store) batcher(namespace, pool string) *batcher {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := namespace + "/" + pool
	b, ok := s.batches[key]
	if !ok {
		b = &batcher{store: s, namespace: namespace, pool: pool, queue: make(chan *request, 4096)}
		s.batches[key] = b
	}
	return b
}

// submit queues r and, if no goroutine is draining this pool's queue, starts one.
func (s *Store) submit(ctx context.Context, r *request) (result, error) {
	b := s.batcher(r.alloc.Namespace, r.alloc.Spec.PoolRef.Name)
	select {
	case b.queue <- r:
	case <-ctx.Done():
		return result{}, ctx.Err()
	}
	s.mu.Lock()
	if !b.running {
		b.running = true
		go b.run()
	}
	s.mu.Unlock()
	select {
	case res := <-r.done:
		return res, res.err
	case <-ctx.Done():
		// The request may still commit; like any API call that times out.
		return result{}, apierrors.NewTimeoutError(fmt.Sprintf("allocation in pool %s/%s did not finish: %v", r.alloc.Namespace, r.alloc.Spec.PoolRef.Name, ctx.Err()), 1)
	}
}

// Allocate reserves what alloc asks for and creates alloc (its metadata already complete,
// validated and admitted) in one transaction. It returns the stored object.
func (s *Store) Allocate(ctx context.Context, alloc *butler.IPAllocation) (*butler.IPAllocation, error) {
	res, err := s.submit(ctx, &request{op: opAllocate, alloc: alloc, done: make(chan result, 1)})
	return res.alloc, err
}

// Release deletes alloc, as last read with its resourceVersion, and frees its addresses in
// one transaction. It returns a Conflict if alloc changed since it was read.
func (s *Store) Release(ctx context.Context, alloc *butler.IPAllocation) (*butler.IPAllocation, error) {
	res, err := s.submit(ctx, &request{op: opRelease, alloc: alloc, done: make(chan result, 1)})
	return res.alloc, err
}

// Refresh recomputes and stores a pool's status, and returns the pool.
func (s *Store) Refresh(ctx context.Context, namespace, pool string) (*butler.NetworkPool, error) {
	alloc := &butler.IPAllocation{}
	alloc.Namespace, alloc.Spec.PoolRef.Name = namespace, pool
	res, err := s.submit(ctx, &request{op: opRefresh, alloc: alloc, done: make(chan result, 1)})
	return res.pool, err
}

// DryRun says what Allocate would answer without storing anything.
func (s *Store) DryRun(ctx context.Context, alloc *butler.IPAllocation) (*butler.IPAllocation, error) {
	st, err := s.read(ctx, alloc.Namespace, alloc.Spec.PoolRef.Name)
	if err != nil {
		return nil, apiError(alloc, err)
	}
	r, err := allocate(st.allocator.Clone(), alloc)
	if err != nil {
		return nil, apiError(alloc, err)
	}
	out := alloc.DeepCopy()
	describe(out, r, time.Now())
	return out, nil
}

func (b *batcher) run() {
	for {
		batch := make([]*request, 0, maxBatch)
	fill:
		for len(batch) < maxBatch {
			select {
			case r := <-b.queue:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		if len(batch) == 0 {
			b.store.mu.Lock()
			if len(b.queue) == 0 {
				b.running = false
				b.store.mu.Unlock()
				return
			}
			b.store.mu.Unlock()
			continue
		}
		b.commit(context.Background(), batch)
	}
}

// commit runs one batch to completion: every request gets an answer, even on a bug.
func (b *batcher) commit(ctx context.Context, batch []*request) {
	logger := klog.FromContext(ctx).WithValues("pool", b.namespace+"/"+b.pool)
	defer b.answerOnPanic(logger, batch)
	pending := batch
	for attempt := 1; len(pending) > 0; attempt++ {
		if attempt > maxAttempts {
			for _, r := range pending {
				r.done <- result{err: apierrors.NewConflict(butler.Resource("networkpools"), b.pool,
					fmt.Errorf("the pool changed under %d attempts to commit; try again", maxAttempts))}
			}
			return
		}
		st := b.cache
		// A refresh follows a write this cache has not seen: read the pool as it is now.
		if st == nil || hasRefresh(pending) {
			var err error
			if st, err = b.store.read(ctx, b.namespace, b.pool); err != nil {
				pending = b.poolUnreadable(ctx, pending, err)
				continue
			}
		}
		b.cache = nil // until this attempt commits
		t := b.prepare(ctx, logger, st, pending)
		var done bool
		if done, pending = b.apply(ctx, st, t); done {
			return
		}
	}
}

// answerOnPanic answers every request of a batch whose commit panicked (deferred by commit),
// and drops the cache it may have left half-updated.
func (b *batcher) answerOnPanic(logger klog.Logger, batch []*request) {
	p := recover()
	if p == nil {
		return
	}
	logger.Error(fmt.Errorf("%v", p), "IPAM batch panicked", "stack", string(debug.Stack()))
	b.cache = nil
	for _, r := range batch {
		select {
		case r.done <- result{err: apierrors.NewInternalError(fmt.Errorf("allocation failed: %v", p))}:
		default: // already answered
		}
	}
}

// txn is one attempt's transaction: the allocator as it leaves it, the blocks it touches, its
// compares and operations, and the requests in it with their answers.
type txn struct {
	next    *ipam.Allocator
	touched map[netip.Prefix]bool
	cmps    []clientv3.Cmp
	ops     []clientv3.Op
	inTxn   []*request
	answers []*butler.IPAllocation
}

// prepare applies the pending requests to a copy of st's allocator; a request that cannot be
// applied is answered at once and left out.
func (b *batcher) prepare(ctx context.Context, logger klog.Logger, st *state, pending []*request) *txn {
	t := &txn{next: st.allocator.Clone(), touched: map[netip.Prefix]bool{}}
	now := time.Now()
	for _, r := range pending {
		key := b.store.allocations.Key(r.alloc.Namespace, r.alloc.Name)
		out := r.alloc.DeepCopy()
		var err error
		switch r.op {
		case opAllocate:
			err = b.prepareAllocate(ctx, t, key, out, now)
		case opRelease:
			err = b.prepareRelease(logger, t, key, r.alloc.ResourceVersion, out)
		case opRefresh:
		}
		if err != nil {
			r.done <- result{err: err}
			continue
		}
		t.inTxn = append(t.inTxn, r)
		t.answers = append(t.answers, out)
	}
	return t
}

// prepareAllocate takes addresses for out and adds its create to t.
func (b *batcher) prepareAllocate(ctx context.Context, t *txn, key string, out *butler.IPAllocation, now time.Time) error {
	got, err := allocate(t.next, out)
	if err != nil {
		return apiError(out, err)
	}
	b.store.touch(t.touched, got)
	describe(out, got, now)
	out.ResourceVersion = ""
	data, err := b.store.allocations.encode(ctx, key, out)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	t.cmps = append(t.cmps, clientv3.Compare(clientv3.CreateRevision(key), "=", 0))
	t.ops = append(t.ops, clientv3.OpPut(key, data))
	return nil
}

// prepareRelease frees out's addresses and adds its delete, at resourceVersion, to t.
func (b *batcher) prepareRelease(logger klog.Logger, t *txn, key, resourceVersion string, out *butler.IPAllocation) error {
	rev, err := parseRV(resourceVersion)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if held, ok := heldRange(out); ok {
		if err := t.next.Release(held); err == nil {
			b.store.touch(t.touched, held)
		} else {
			var notHeld *ipam.NotAllocatedError
			if !errors.As(err, &notHeld) {
				return apierrors.NewInternalError(err)
			}
			// Not in the state (the repair loop freed it, or the pool changed): nothing to free.
			logger.Info("Released IPAllocation held no addresses in the pool state", "ipallocation", out.Name, "range", held)
		}
	}
	t.cmps = append(t.cmps, clientv3.Compare(clientv3.ModRevision(key), "=", rev))
	t.ops = append(t.ops, clientv3.OpDelete(key))
	return nil
}

// apply writes t with the pool's new status and blocks in one etcd transaction, and answers
// its requests. done is false when a compare failed: rest is then what to try again.
func (b *batcher) apply(ctx context.Context, st *state, t *txn) (done bool, rest []*request) {
	if len(t.inTxn) == 0 {
		b.cache = st
		return true, nil
	}
	poolKey := b.store.pools.Key(b.namespace, b.pool)
	pool := poolWithStatus(st.pool, t.next)
	if len(t.ops) == 0 && statusUnchanged(st.pool, pool) {
		// Only refreshes, and the status stands: no write, no watch event.
		for _, r := range t.inTxn {
			r.done <- result{pool: st.pool.DeepCopy()}
		}
		b.cache = st
		return true, nil
	}
	poolData, err := b.store.pools.encode(ctx, poolKey, pool)
	if err != nil {
		b.failAll(t.inTxn, apierrors.NewInternalError(err))
		return true, nil
	}
	blockOps, err := b.store.blockOps(b.namespace, b.pool, t.next, t.touched)
	if err != nil {
		b.failAll(t.inTxn, apierrors.NewInternalError(err))
		return true, nil
	}
	cmps := append(t.cmps, clientv3.Compare(clientv3.ModRevision(poolKey), "=", st.poolRev))
	ops := append(append(t.ops, blockOps...), clientv3.OpPut(poolKey, poolData))
	resp, err := b.store.client.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		b.failAll(t.inTxn, apierrors.NewInternalError(fmt.Errorf("committing allocations of pool %s/%s: %w", b.namespace, b.pool, err)))
		return true, nil
	}
	if !resp.Succeeded {
		// A compare failed: the pool moved (another replica or a spec change), or a request's
		// own object is in the way. Answer the latter; retry the rest on a fresh read.
		return false, b.answerObjectConflicts(ctx, t.inTxn)
	}
	rev := resp.Header.Revision
	pool.ResourceVersion = fmt.Sprint(rev)
	for i, r := range t.inTxn {
		out := t.answers[i]
		out.ResourceVersion = fmt.Sprint(rev)
		res := result{alloc: out}
		if r.op == opRefresh {
			res.pool = pool.DeepCopy()
		}
		r.done <- res
	}
	b.cache = &state{pool: pool, poolRev: rev, allocator: t.next}
	return true, nil
}

// answerObjectConflicts answers the requests whose own IPAllocation compare fails and
// returns the others.
func (b *batcher) answerObjectConflicts(ctx context.Context, reqs []*request) []*request {
	var rest []*request
	for _, r := range reqs {
		key := b.store.allocations.Key(r.alloc.Namespace, r.alloc.Name)
		resp, err := b.store.client.Get(ctx, key, clientv3.WithKeysOnly())
		if err != nil {
			r.done <- result{err: apierrors.NewInternalError(err)}
			continue
		}
		switch r.op {
		case opAllocate:
			if len(resp.Kvs) > 0 {
				r.done <- result{err: apierrors.NewAlreadyExists(butler.Resource("ipallocations"), r.alloc.Name)}
				continue
			}
		case opRelease:
			rev, _ := parseRV(r.alloc.ResourceVersion)
			if len(resp.Kvs) == 0 {
				r.done <- result{err: apierrors.NewNotFound(butler.Resource("ipallocations"), r.alloc.Name)}
				continue
			}
			if resp.Kvs[0].ModRevision != rev {
				r.done <- result{err: apierrors.NewConflict(butler.Resource("ipallocations"), r.alloc.Name,
					errors.New("the object has been modified; please apply your changes to the latest version and try again"))}
				continue
			}
		}
		rest = append(rest, r)
	}
	return rest
}

// poolUnreadable answers the requests that cannot proceed without the pool and returns
// those that can: a release from a deleted pool only deletes its IPAllocation.
func (b *batcher) poolUnreadable(ctx context.Context, reqs []*request, err error) []*request {
	if !apierrors.IsNotFound(err) {
		b.failAll(reqs, apierrors.NewInternalError(err))
		return nil
	}
	for _, r := range reqs {
		switch r.op {
		case opAllocate:
			r.done <- result{err: apiError(r.alloc, err)}
			continue
		case opRefresh:
			r.done <- result{err: err}
			continue
		}
		key := b.store.allocations.Key(r.alloc.Namespace, r.alloc.Name)
		rev, _ := parseRV(r.alloc.ResourceVersion)
		resp, terr := b.store.client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpDelete(key)).Commit()
		switch {
		case terr != nil:
			r.done <- result{err: apierrors.NewInternalError(terr)}
		case !resp.Succeeded:
			r.done <- result{err: apierrors.NewConflict(butler.Resource("ipallocations"), r.alloc.Name,
				errors.New("the object has been modified; please apply your changes to the latest version and try again"))}
		default:
			out := r.alloc.DeepCopy()
			out.ResourceVersion = fmt.Sprint(resp.Header.Revision)
			r.done <- result{alloc: out}
		}
	}
	return nil
}

func (b *batcher) failAll(reqs []*request, err error) {
	for _, r := range reqs {
		r.done <- result{err: err}
	}
}

func parseRV(rv string) (int64, error) {
	var n int64
	if _, err := fmt.Sscan(rv, &n); err != nil || n <= 0 {
		return 0, fmt.Errorf("invalid resourceVersion %q", rv)
	}
	return n, nil
}

func hasRefresh(reqs []*request) bool {
	for _, r := range reqs {
		if r.op == opRefresh {
			return true
		}
	}
	return false
}
