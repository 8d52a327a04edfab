// Package store keeps NetworkPool allocation state in etcd and commits every allocation and
// release together with the IPAllocation it belongs to, in one etcd transaction.
//
// The state of a pool is its allocations, cut into aligned blocks (ipam.BlocksOf), one etcd
// key per non-empty block under <prefix>/ipamblocks/<namespace>/<pool>/. Every transaction
// that changes a pool's state also rewrites the NetworkPool object with the status computed
// from the new state, and compares the pool's mod revision first. The pool's revision is
// therefore the version of the whole state: a replica can cache the state, and two replicas
// (or two batches) that raced see one commit and one failed compare, re-read, and retry. An
// IPAllocation is created with a compare that its key does not exist, in the same
// transaction as the blocks that reserve its addresses, so an address is never held without
// its IPAllocation and never by two. Concurrent requests for one pool in one replica share a
// transaction (group commit), which is what makes a pool faster than one compare-and-swap
// per request.
package store

import (
	"context"
	"fmt"
	"net/netip"
	"path"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/value"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/ipam"
)

// Codec encodes and decodes one resource's objects exactly as its generic store does, so
// that objects this package writes are read back by the store, the watch cache and clients.
type Codec struct {
	Codec       runtime.Codec
	Transformer value.Transformer
	// Prefix is the etcd key prefix of all the resource's objects, ending in a slash.
	Prefix string
}

// Key is the full etcd key of the object namespace/name.
func (c Codec) Key(namespace, name string) string { return c.Prefix + namespace + "/" + name }

func (c Codec) encode(ctx context.Context, key string, obj runtime.Object) (string, error) {
	data, err := runtime.Encode(c.Codec, obj)
	if err != nil {
		return "", err
	}
	out, err := c.Transformer.TransformToStorage(ctx, data, value.DefaultContext(key))
	return string(out), err
}

func (c Codec) decode(ctx context.Context, key string, data []byte, into runtime.Object, rev int64) error {
	plain, _, err := c.Transformer.TransformFromStorage(ctx, data, value.DefaultContext(key))
	if err != nil {
		return err
	}
	if _, _, err := c.Codec.Decode(plain, nil, into); err != nil {
		return err
	}
	return storage.APIObjectVersioner{}.UpdateObject(into, uint64(rev))
}

// Store is the allocation state of every pool, as one replica sees it.
type Store struct {
	client      *clientv3.Client
	blockPrefix string
	blockBits   int
	pools       Codec
	allocations Codec

	mu      sync.Mutex
	batches map[string]*batcher // by namespace/pool
}

// New returns a store on client. prefix is butler-apiserver's etcd prefix; the block keys
// live under it.
func New(client *clientv3.Client, prefix string, pools, allocations Codec) *Store {
	return &Store{
		client:      client,
		blockPrefix: path.Join("/", prefix, "ipamblocks"),
		blockBits:   ipam.DefaultBlockBits,
		pools:       pools,
		allocations: allocations,
		batches:     map[string]*batcher{},
	}
}

// poolBlocksPrefix is where the blocks of one pool live (with a trailing slash, so that pool
// "a" does not see the blocks of pool "ab").
func (s *Store) poolBlocksPrefix(namespace, pool string) string {
	return path.Join(s.blockPrefix, namespace, pool) + "/"
}

func (s *Store) blockKey(namespace, pool string, block netip.Prefix) string {
	return s.poolBlocksPrefix(namespace, pool) + strings.ReplaceAll(block.String(), "/", "_")
}

// state is one pool's allocations at one revision of the pool object.
type state struct {
	pool      *butler.NetworkPool
	poolRev   int64 // mod revision of the pool key
	readRev   int64 // the etcd revision the state was read at (0 after a commit)
	allocator *ipam.Allocator
}

// PoolSpec turns a NetworkPool's spec into the allocator's.
func PoolSpec(spec *butler.NetworkPoolSpec) ipam.Spec {
	out := ipam.Spec{CIDR: spec.CIDR}
	for _, r := range spec.Ranges {
		out.Ranges = append(out.Ranges, ipam.AddressRange{Start: r.Start, End: r.End})
	}
	for _, r := range spec.Reserved {
		out.Reserved = append(out.Reserved, r.CIDR)
	}
	return out
}

// read loads a pool and its blocks at one etcd revision.
func (s *Store) read(ctx context.Context, namespace, name string) (*state, error) {
	poolKey := s.pools.Key(namespace, name)
	resp, err := s.client.Get(ctx, poolKey)
	if err != nil {
		return nil, err
	}
	if len(resp.Kvs) == 0 {
		return nil, apierrors.NewNotFound(butler.Resource("networkpools"), name)
	}
	kv := resp.Kvs[0]
	pool := &butler.NetworkPool{}
	if err := s.pools.decode(ctx, poolKey, kv.Value, pool, kv.ModRevision); err != nil {
		return nil, err
	}
	blocks, err := s.client.Get(ctx, s.poolBlocksPrefix(namespace, name), clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision))
	if err != nil {
		return nil, err
	}
	p, err := ipam.NewPool(PoolSpec(&pool.Spec))
	if err != nil {
		return nil, fmt.Errorf("pool %s/%s: %w", namespace, name, err)
	}
	values := make([][]byte, 0, len(blocks.Kvs))
	for _, b := range blocks.Kvs {
		values = append(values, b.Value)
	}
	allocator, err := ipam.NewAllocatorFromBlocks(p, values...)
	if err != nil {
		return nil, fmt.Errorf("allocation state of pool %s/%s: %w", namespace, name, err)
	}
	return &state{pool: pool, poolRev: kv.ModRevision, readRev: resp.Header.Revision, allocator: allocator}, nil
}

// Allocator returns a pool's current allocation state and the pool it was read with.
func (s *Store) Allocator(ctx context.Context, namespace, name string) (*ipam.Allocator, *butler.NetworkPool, error) {
	st, err := s.read(ctx, namespace, name)
	if err != nil {
		return nil, nil, err
	}
	return st.allocator, st.pool, nil
}

// blockOps are the puts and deletes that store the given blocks of next.
func (s *Store) blockOps(namespace, pool string, next *ipam.Allocator, touched map[netip.Prefix]bool) ([]clientv3.Op, error) {
	ops := make([]clientv3.Op, 0, len(touched))
	for block := range touched {
		key := s.blockKey(namespace, pool, block)
		b, err := next.Block(block)
		if err != nil {
			return nil, err
		}
		if len(b.Segments) == 0 {
			ops = append(ops, clientv3.OpDelete(key))
			continue
		}
		data, err := b.MarshalBinary()
		if err != nil {
			return nil, err
		}
		ops = append(ops, clientv3.OpPut(key, string(data)))
	}
	return ops, nil
}

func (s *Store) touch(touched map[netip.Prefix]bool, r ipam.Range) {
	for b := range ipam.BlocksOf(r, s.blockBits) {
		touched[b] = true
	}
}

// poolWithStatus is pool with its status computed from allocator.
func poolWithStatus(pool *butler.NetworkPool, allocator *ipam.Allocator) *butler.NetworkPool {
	out := pool.DeepCopy()
	out.ResourceVersion = ""
	SetStatus(&out.Status, allocator)
	out.Status.ObservedGeneration = out.Generation
	return out
}
