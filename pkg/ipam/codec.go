package ipam

import (
	"encoding/binary"
	"net/netip"
	"slices"
)

// The encoding of a Block, version 1, all integers unsigned varints unless sized:
//
//	byte     version (1)
//	byte     family (4 or 6)
//	4|16     the block's network address
//	byte     the block's prefix length
//	byte     flags: 1 = the first segment continues from the previous block,
//	               2 = the last segment continues into the next block
//	uvarint  number of segments
//	per segment, with cursor starting at the block's first address:
//	uvarint  gap: segment.First - cursor
//	uvarint  segment size - 1;  then cursor = segment.Last + 1
//
// Gaps and sizes are offsets inside the block, which MaxBlockBits keeps to 64 bits. The
// encoding is deterministic: a block has exactly one, so stored bytes change only when the
// allocations do, and equal states compare equal byte for byte. A segment costs two bytes
// at best (adjacent small allocations) and twenty at worst (two 64-bit varints), however
// large the block or the allocations.

const blockVersion = 1

const (
	flagFromPrev = 1 << iota
	flagToNext
)

// rawBlock is a block as the encoding holds it: segments in offsets from the block's first
// address. Encoding, decoding and rebuilding go through it rather than Block so that no
// per-segment netip conversions or checks are paid on a store's hot paths.
type rawBlock struct {
	prefix netip.Prefix
	segs   []span // sorted, disjoint
	// fromPrev: the first segment continues an allocation from the previous block;
	// toNext: the last goes on into the next.
	fromPrev, toNext bool
}

// raw converts a checked Block.
func (b Block) raw() rawBlock {
	base := u128Of(b.Prefix.Addr())
	rb := rawBlock{prefix: b.Prefix, segs: make([]span, len(b.Segments))}
	for i, s := range b.Segments {
		rb.segs[i] = span{u128Of(s.First).sub(base).lo, u128Of(s.Last).sub(base).lo}
	}
	if n := len(b.Segments); n > 0 {
		rb.fromPrev, rb.toNext = b.Segments[0].FromPrev, b.Segments[n-1].ToNext
	}
	return rb
}

func (rb rawBlock) block() Block {
	base, is4 := u128Of(rb.prefix.Addr()), rb.prefix.Addr().Is4()
	b := Block{Prefix: rb.prefix}
	if len(rb.segs) > 0 {
		b.Segments = make([]Segment, len(rb.segs))
	}
	for i, s := range rb.segs {
		b.Segments[i] = Segment{Range: Range{First: base.addU64(s.lo).addr(is4), Last: base.addU64(s.hi).addr(is4)}}
	}
	if n := len(rb.segs); n > 0 {
		b.Segments[0].FromPrev, b.Segments[n-1].ToNext = rb.fromPrev, rb.toNext
	}
	return b
}

func (rb rawBlock) appendTo(out []byte) []byte {
	addr := rb.prefix.Addr()
	out = slices.Grow(out, 24+4*len(rb.segs))
	out = append(out, blockVersion)
	if addr.Is4() {
		out = append(out, 4)
	} else {
		out = append(out, 6)
	}
	out = append(out, addr.AsSlice()...)
	out = append(out, byte(rb.prefix.Bits()))
	var flags byte
	if rb.fromPrev {
		flags |= flagFromPrev
	}
	if rb.toNext {
		flags |= flagToNext
	}
	out = append(out, flags)
	out = binary.AppendUvarint(out, uint64(len(rb.segs)))
	var cursor uint64
	for _, s := range rb.segs {
		out = binary.AppendUvarint(out, s.lo-cursor)
		out = binary.AppendUvarint(out, s.hi-s.lo)
		cursor = s.hi + 1 // wraps only after the last address of a 2^64 block, which ends the list
	}
	return out
}

// decodeRawBlock decodes and checks one encoded block; any malformed input is a
// *CorruptError.
func decodeRawBlock(data []byte) (rawBlock, error) {
	d := decoder{data: data}
	if v := d.byte(); v != blockVersion {
		return rawBlock{}, corrupt("block encoding version %d, want %d", v, blockVersion)
	}
	var addr netip.Addr
	switch fam := d.byte(); fam {
	case 4:
		addr, _ = netip.AddrFromSlice(d.bytes(4))
	case 6:
		addr, _ = netip.AddrFromSlice(d.bytes(16))
	default:
		return rawBlock{}, corrupt("block address family %d", fam)
	}
	bitsLen := int(d.byte())
	flags := d.byte()
	n := d.uvarint()
	if d.err {
		return rawBlock{}, corrupt("block header truncated")
	}
	prefix := netip.PrefixFrom(addr, bitsLen)
	if err := checkBlockPrefix(prefix); err != nil {
		return rawBlock{}, corrupt("%v", err)
	}
	if flags&^(flagFromPrev|flagToNext) != 0 || (n == 0 && flags != 0) {
		return rawBlock{}, corrupt("block %s: bad flags %#x", prefix, flags)
	}
	// Each segment takes at least two bytes; refuse counts the data cannot hold before
	// allocating for them.
	if n > uint64(len(d.data))/2 {
		return rawBlock{}, corrupt("block %s: %d segments in %d bytes", prefix, n, len(d.data))
	}
	blockLast := lowMask(addr.BitLen() - bitsLen).lo
	rb := rawBlock{prefix: prefix, segs: make([]span, 0, n), fromPrev: flags&flagFromPrev != 0, toNext: flags&flagToNext != 0}
	var cursor uint64
	atEnd := false // the previous segment ended at the block's last address
	for i := uint64(0); i < n; i++ {
		gap, size1 := d.uvarint(), d.uvarint()
		if d.err {
			return rawBlock{}, corrupt("block %s: segment %d truncated", prefix, i)
		}
		if atEnd {
			return rawBlock{}, corrupt("block %s: segment %d after the block's last address", prefix, i)
		}
		if gap > blockLast-cursor {
			return rawBlock{}, corrupt("block %s: segment %d starts outside the block", prefix, i)
		}
		first := cursor + gap
		if size1 > blockLast-first {
			return rawBlock{}, corrupt("block %s: segment %d ends outside the block", prefix, i)
		}
		rb.segs = append(rb.segs, span{first, first + size1})
		atEnd = first+size1 == blockLast
		cursor = first + size1 + 1 // wraps to 0 only when atEnd
	}
	if len(d.data) != 0 {
		return rawBlock{}, corrupt("block %s: %d trailing bytes", prefix, len(d.data))
	}
	if rb.fromPrev && rb.segs[0].lo != 0 {
		return rawBlock{}, corrupt("block %s: the first segment continues an earlier block but does not start the block", prefix)
	}
	if rb.toNext && rb.segs[n-1].hi != blockLast {
		return rawBlock{}, corrupt("block %s: the last segment continues into the next block but does not end the block", prefix)
	}
	return rb, nil
}

// MarshalBinary encodes b as described above.
func (b Block) MarshalBinary() ([]byte, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	return b.raw().appendTo(nil), nil
}

// UnmarshalBinary decodes what MarshalBinary wrote; any malformed input is a *CorruptError.
func (b *Block) UnmarshalBinary(data []byte) error {
	rb, err := decodeRawBlock(data)
	if err != nil {
		return err
	}
	*b = rb.block()
	return nil
}

// MarshalBinary encodes all of the allocator's allocations as one Block over the pool's
// CIDR: the state for a store that keeps one key per pool. The pool's spec is not in it;
// it lives in the NetworkPool.
func (a *Allocator) MarshalBinary() ([]byte, error) { return a.MarshalBlock(a.pool.prefix) }

// UnmarshalAllocator rebuilds an allocator for p from what Allocator.MarshalBinary wrote,
// even under an earlier cidr of the pool, since blocks hold addresses, not offsets.
func UnmarshalAllocator(p *Pool, data []byte) (*Allocator, error) {
	return NewAllocatorFromBlocks(p, data)
}

// NewAllocatorFromBlocks rebuilds an allocator for p from encoded blocks, as a store reads
// them back: it decodes them, stitches allocations that span blocks (JoinBlocks) and
// builds the allocator (NewAllocator), with the errors of each. The blocks may come in any
// order; they must include every block that holds part of an allocation.
func NewAllocatorFromBlocks(p *Pool, blocks ...[]byte) (*Allocator, error) {
	raws := make([]rawBlock, len(blocks))
	for i, data := range blocks {
		rb, err := decodeRawBlock(data)
		if err != nil {
			return nil, err
		}
		raws[i] = rb
	}
	var spans []span
	var stranded []Range
	poolLast := lowMask(p.prefix.Addr().BitLen() - p.prefix.Bits()).lo
	err := stitch(raws, func(lo, hi u128, is4 bool) {
		if is4 == p.is4 && !lo.less(p.base) {
			if d := hi.sub(p.base); d.hi == 0 && d.lo <= poolLast {
				spans = append(spans, span{lo.sub(p.base).lo, d.lo})
				return
			}
		}
		stranded = append(stranded, Range{First: lo.addr(is4), Last: hi.addr(is4)})
	})
	if err != nil {
		return nil, err
	}
	return newAllocatorFromSpans(p, spans, stranded)
}

// decoder reads the encoding; the first short read sets err and yields zeros from then on.
type decoder struct {
	data []byte
	err  bool
}

func (d *decoder) byte() byte {
	if len(d.data) < 1 {
		d.err = true
		return 0
	}
	b := d.data[0]
	d.data = d.data[1:]
	return b
}

func (d *decoder) bytes(n int) []byte {
	if len(d.data) < n {
		d.err = true
		d.data = nil
		return make([]byte, n)
	}
	b := d.data[:n]
	d.data = d.data[n:]
	return b
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.data)
	if n <= 0 {
		d.err = true
		d.data = nil
		return 0
	}
	d.data = d.data[n:]
	return v
}
