package ipam

import (
	"encoding/binary"
	"net/netip"
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

// MarshalBinary encodes b as described above.
func (b Block) MarshalBinary() ([]byte, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	addr := b.Prefix.Addr()
	out := make([]byte, 0, 24+4*len(b.Segments))
	out = append(out, blockVersion)
	if addr.Is4() {
		out = append(out, 4)
	} else {
		out = append(out, 6)
	}
	out = append(out, addr.AsSlice()...)
	out = append(out, byte(b.Prefix.Bits()))
	var flags byte
	if n := len(b.Segments); n > 0 {
		if b.Segments[0].FromPrev {
			flags |= flagFromPrev
		}
		if b.Segments[n-1].ToNext {
			flags |= flagToNext
		}
	}
	out = append(out, flags)
	out = binary.AppendUvarint(out, uint64(len(b.Segments)))
	base := u128Of(addr)
	var cursor uint64
	for _, s := range b.Segments {
		first := u128Of(s.First).sub(base).lo
		last := u128Of(s.Last).sub(base).lo
		out = binary.AppendUvarint(out, first-cursor)
		out = binary.AppendUvarint(out, last-first)
		cursor = last + 1 // wraps only after the last address of a 2^64 block, which ends the list
	}
	return out, nil
}

// UnmarshalBinary decodes what MarshalBinary wrote; any malformed input is a *CorruptError.
func (b *Block) UnmarshalBinary(data []byte) error {
	d := decoder{data: data}
	if v := d.byte(); v != blockVersion {
		return corrupt("block encoding version %d, want %d", v, blockVersion)
	}
	var addr netip.Addr
	switch fam := d.byte(); fam {
	case 4:
		addr, _ = netip.AddrFromSlice(d.bytes(4))
	case 6:
		addr, _ = netip.AddrFromSlice(d.bytes(16))
	default:
		return corrupt("block address family %d", fam)
	}
	bitsLen := int(d.byte())
	flags := d.byte()
	n := d.uvarint()
	if d.err {
		return corrupt("block header truncated")
	}
	prefix := netip.PrefixFrom(addr, bitsLen)
	if err := checkBlockPrefix(prefix); err != nil {
		return corrupt("%v", err)
	}
	if flags&^(flagFromPrev|flagToNext) != 0 || (n == 0 && flags != 0) {
		return corrupt("block %s: bad flags %#x", prefix, flags)
	}
	// Each segment takes at least two bytes; refuse counts the data cannot hold before
	// allocating for them.
	if n > uint64(len(d.data))/2 {
		return corrupt("block %s: %d segments in %d bytes", prefix, n, len(d.data))
	}
	blockLast := lowMask(addr.BitLen() - bitsLen).lo
	base := u128Of(addr)
	segs := make([]Segment, 0, n)
	var cursor uint64
	for i := uint64(0); i < n; i++ {
		gap, size1 := d.uvarint(), d.uvarint()
		if d.err {
			return corrupt("block %s: segment %d truncated", prefix, i)
		}
		if i > 0 && cursor == 0 {
			return corrupt("block %s: segment %d after the block's last address", prefix, i)
		}
		if gap > blockLast-cursor {
			return corrupt("block %s: segment %d starts outside the block", prefix, i)
		}
		first := cursor + gap
		if size1 > blockLast-first {
			return corrupt("block %s: segment %d ends outside the block", prefix, i)
		}
		last := first + size1
		segs = append(segs, Segment{Range: Range{First: base.addU64(first).addr(addr.Is4()), Last: base.addU64(last).addr(addr.Is4())}})
		cursor = last + 1
	}
	if len(d.data) != 0 {
		return corrupt("block %s: %d trailing bytes", prefix, len(d.data))
	}
	if n > 0 {
		segs[0].FromPrev = flags&flagFromPrev != 0
		segs[n-1].ToNext = flags&flagToNext != 0
	}
	out := Block{Prefix: prefix, Segments: segs}
	if err := out.check(); err != nil {
		return err
	}
	*b = out
	return nil
}

// MarshalBinary encodes all of the allocator's allocations as one Block over the pool's
// CIDR: the state for a store that keeps one key per pool. The pool's spec is not in it;
// it lives in the NetworkPool.
func (a *Allocator) MarshalBinary() ([]byte, error) {
	b, err := a.Block(a.pool.prefix)
	if err != nil {
		return nil, err
	}
	return b.MarshalBinary()
}

// UnmarshalAllocator rebuilds an allocator for p from what Allocator.MarshalBinary wrote,
// even under an earlier cidr of the pool, since blocks hold addresses, not offsets.
func UnmarshalAllocator(p *Pool, data []byte) (*Allocator, error) {
	var b Block
	if err := b.UnmarshalBinary(data); err != nil {
		return nil, err
	}
	ranges, err := JoinBlocks([]Block{b})
	if err != nil {
		return nil, err
	}
	return NewAllocator(p, ranges)
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
