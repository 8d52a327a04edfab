package ipam

import (
	"cmp"
	"fmt"
	"iter"
	"net/netip"
	"slices"
)

// Blocks let a store keep a pool's state under many small keys instead of one: the address
// space is cut into aligned blocks of 2^bits addresses, each stored as the allocations that
// overlap it, clipped to it (a Block). An allocation or release rewrites only the blocks its
// range overlaps (BlocksOf), so the bytes written per request do not grow with the pool, and
// requests in different blocks do not contend for one key. Blocks are aligned in the address
// space, not to the pool, so their names (their prefixes) survive a change of the pool's
// cidr.
//
// Safety under concurrency comes from writing every overlapped block: two requests that
// would share an address both rewrite the block holding it, so a compare-and-swap on the
// blocks' revisions lets only one commit. An allocation that spans blocks is cut into
// segments flagged ToNext/FromPrev, which JoinBlocks stitches back into the whole range, so
// the set of allocations (not only the set of allocated addresses) survives the round trip.
//
// Blocks bound the bytes per request; they do not by themselves spread contention. Best
// fit sends concurrent requests to the same lowest fitting run, hence the same block, so a
// store that must go faster than one compare-and-swap per request should batch several
// requests into one clone and one commit (group commit).
//
// Sizing: a block of 2^16 addresses (DefaultBlockBits) encodes in at most about 128 KiB
// (65,536 single-address allocations at two bytes each), well under etcd's request limit,
// and a request for n addresses touches at most n/65,536+2 blocks, so a transaction stays
// under etcd's default limit of 128 operations for any count up to about 8 million.

// DefaultBlockBits is a block size of 2^16 addresses; see the sizing note above.
const DefaultBlockBits = 16

// MaxBlockBits bounds a block to 2^64 addresses, so that offsets inside one fit 64 bits.
const MaxBlockBits = 64

// Block is the stored state of one aligned block: the segments of the allocations that
// overlap it, in address order.
type Block struct {
	Prefix   netip.Prefix
	Segments []Segment
}

// Segment is the part of one allocation that lies in a block.
type Segment struct {
	Range
	// FromPrev says the allocation starts in an earlier block; the segment then starts at
	// the block's first address.
	FromPrev bool
	// ToNext says the allocation goes on into the next block; the segment then ends at the
	// block's last address.
	ToNext bool
}

// BlockOf returns the aligned block of 2^bits addresses that holds a. It panics if bits is
// not in [0, min(MaxBlockBits, a.BitLen())]: the block size is a store's constant, not
// input.
func BlockOf(a netip.Addr, bits int) netip.Prefix {
	checkBits(a, bits)
	p, _ := a.Prefix(a.BitLen() - bits)
	return p
}

// BlocksOf yields, in address order, the aligned blocks of 2^bits addresses that r
// overlaps: the keys a store must rewrite when r is allocated or released.
func BlocksOf(r Range, bits int) iter.Seq[netip.Prefix] {
	return func(yield func(netip.Prefix) bool) {
		if !r.IsValid() {
			return
		}
		for b := BlockOf(r.First, bits); ; {
			if !yield(b) {
				return
			}
			last := PrefixRange(b).Last
			if last.Compare(r.Last) >= 0 {
				return
			}
			b = BlockOf(last.Next(), bits)
		}
	}
}

// BlockCount returns how many blocks of 2^bits addresses r overlaps; ok is false when the
// number does not fit a uint64. A store can refuse a request that would touch more blocks
// than one transaction may write.
func BlockCount(r Range, bits int) (n uint64, ok bool) {
	if !r.IsValid() {
		return 0, true
	}
	checkBits(r.First, bits)
	d := u128Of(r.Last).shr(bits).sub(u128Of(r.First).shr(bits))
	if d.hi != 0 || d.lo == ^uint64(0) {
		return 0, false
	}
	return d.lo + 1, true
}

func checkBits(a netip.Addr, bits int) {
	if bits < 0 || bits > MaxBlockBits || bits > a.BitLen() {
		panic(fmt.Sprintf("ipam: block bits %d out of range for %s", bits, a))
	}
}

// Block returns the state of the block b: the allocations overlapping it, clipped to it.
// b must be a valid prefix of the pool's family, written as its network address, of at
// most 2^64 addresses. A block outside the pool is empty. O(log n + segments).
func (a *Allocator) Block(b netip.Prefix) (Block, error) {
	rb, err := a.rawBlock(b)
	if err != nil {
		return Block{}, err
	}
	return rb.block(), nil
}

// MarshalBlock encodes the state of block b, byte for byte what Block(b).MarshalBinary()
// gives, without building the Block: what a store writes for each block a request
// touches.
func (a *Allocator) MarshalBlock(b netip.Prefix) ([]byte, error) {
	rb, err := a.rawBlock(b)
	if err != nil {
		return nil, err
	}
	return rb.appendTo(nil), nil
}

// rawBlock collects the allocations that overlap b, clipped to it, in offsets from b's
// first address.
func (a *Allocator) rawBlock(b netip.Prefix) (rawBlock, error) {
	if err := checkBlockPrefix(b); err != nil {
		return rawBlock{}, err
	}
	if b.Addr().Is4() != a.pool.is4 {
		return rawBlock{}, fmt.Errorf("block %s is not of the pool's family", b)
	}
	rb := rawBlock{prefix: b}
	// blo..bhi is the part of the block inside the pool, in pool offsets; a pool offset
	// off is block offset off-blo+shift.
	var blo, bhi, shift uint64
	pool := a.pool.prefix
	switch {
	case b.Bits() <= pool.Bits() && b.Contains(pool.Addr()):
		blo, bhi = 0, lowMask(pool.Addr().BitLen()-pool.Bits()).lo
		shift = a.pool.base.sub(u128Of(b.Addr())).lo
	case pool.Contains(b.Addr()):
		blo = u128Of(b.Addr()).sub(a.pool.base).lo
		bhi = blo + lowMask(b.Addr().BitLen()-b.Bits()).lo
	default:
		return rb, nil
	}
	visit := func(s span) bool {
		if s.lo > bhi {
			return false
		}
		if s.hi < blo {
			return true
		}
		c := span{max(s.lo, blo), min(s.hi, bhi)}
		rb.segs = append(rb.segs, span{c.lo - blo + shift, c.hi - blo + shift})
		rb.fromPrev = rb.fromPrev || s.lo < blo
		rb.toNext = s.hi > bhi
		return true
	}
	if f, ok := a.allocs.floor(span{lo: blo}); ok && f.lo < blo {
		visit(f)
	}
	a.allocs.ascend(span{lo: blo}, visit)
	return rb, nil
}

func checkBlockPrefix(b netip.Prefix) error {
	if !b.IsValid() || b != b.Masked() {
		return fmt.Errorf("block %s is not a prefix written as its network address", b)
	}
	if b.Addr().BitLen()-b.Bits() > MaxBlockBits {
		return fmt.Errorf("block %s holds more than 2^%d addresses", b, MaxBlockBits)
	}
	return nil
}

// check verifies what Segment's comments promise: segments of the block's family, inside
// it, in order without overlap, flagged only where they touch its edges.
func (b Block) check() error {
	if err := checkBlockPrefix(b.Prefix); err != nil {
		return corrupt("%v", err)
	}
	br := PrefixRange(b.Prefix)
	for i, s := range b.Segments {
		if !s.IsValid() || !br.Contains(s.First) || !br.Contains(s.Last) {
			return corrupt("block %s: segment %s is not inside it", b.Prefix, s.Range)
		}
		if i > 0 && s.First.Compare(b.Segments[i-1].Last) <= 0 {
			return corrupt("block %s: segment %s is not after %s", b.Prefix, s.Range, b.Segments[i-1].Range)
		}
		if s.FromPrev && (i > 0 || s.First != br.First) {
			return corrupt("block %s: segment %s continues an earlier block but does not start the block", b.Prefix, s.Range)
		}
		if s.ToNext && (i < len(b.Segments)-1 || s.Last != br.Last) {
			return corrupt("block %s: segment %s continues into the next block but does not end the block", b.Prefix, s.Range)
		}
	}
	return nil
}

// JoinBlocks stitches the segments of blocks back into whole allocations, in address
// order. The blocks may come in any order and must not overlap; a segment that continues
// into or from a block that is missing, or does not continue, makes the state corrupt.
// NewAllocatorFromBlocks does the same from the encoded blocks, faster.
func JoinBlocks(blocks []Block) ([]Range, error) {
	raws := make([]rawBlock, len(blocks))
	for i, b := range blocks {
		if err := b.check(); err != nil {
			return nil, err
		}
		raws[i] = b.raw()
	}
	var out []Range
	err := stitch(raws, func(lo, hi u128, is4 bool) {
		out = append(out, Range{First: lo.addr(is4), Last: hi.addr(is4)})
	})
	return out, err
}

// stitch calls emit with each whole allocation held by raws, in address order, joining
// the segments that continue from one block into the next. It sorts raws.
func stitch(raws []rawBlock, emit func(lo, hi u128, is4 bool)) error {
	slices.SortFunc(raws, func(x, y rawBlock) int {
		return cmp.Or(x.prefix.Addr().Compare(y.prefix.Addr()), cmp.Compare(x.prefix.Bits(), y.prefix.Bits()))
	})
	var open bool
	var olo, ohi u128
	var ois4 bool
	for i, rb := range raws {
		if i > 0 && raws[i-1].prefix.Overlaps(rb.prefix) {
			return corrupt("blocks %s and %s overlap", raws[i-1].prefix, rb.prefix)
		}
		base, is4 := u128Of(rb.prefix.Addr()), rb.prefix.Addr().Is4()
		for j, s := range rb.segs {
			lo, hi := base.addU64(s.lo), base.addU64(s.hi)
			if j == 0 && rb.fromPrev {
				if !open || ois4 != is4 || ohi.addU64(1) != lo {
					return corrupt("block %s: segment from %s continues an allocation that no adjacent block ends", rb.prefix, lo.addr(is4))
				}
				ohi = hi
			} else {
				if open {
					return corrupt("allocation from %s continues past its block, but block %s does not continue it", olo.addr(ois4), rb.prefix)
				}
				open, olo, ohi, ois4 = true, lo, hi, is4
			}
			if j < len(rb.segs)-1 || !rb.toNext {
				emit(olo, ohi, ois4)
				open = false
			}
		}
	}
	if open {
		return corrupt("allocation from %s continues past the last block", olo.addr(ois4))
	}
	return nil
}
