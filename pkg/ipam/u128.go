package ipam

import (
	"encoding/binary"
	"math/bits"
	"net/netip"
)

// u128 is an address as a 128-bit number. Ranges that are not tied to a pool (Range.Count,
// Range.Prefix, blocks) may span more than 2^64 IPv6 addresses, so they cannot use the
// allocator's 64-bit offsets.
type u128 struct{ hi, lo uint64 }

// u128Of returns a as a number; an IPv4 address is its 32-bit value.
func u128Of(a netip.Addr) u128 {
	if a.Is4() {
		b := a.As4()
		return u128{lo: uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])}
	}
	b := a.As16()
	return u128{hi: binary.BigEndian.Uint64(b[:8]), lo: binary.BigEndian.Uint64(b[8:])}
}

// addr turns x back into an address of the family given by is4 (x must fit it).
func (x u128) addr(is4 bool) netip.Addr {
	if is4 {
		v := uint32(x.lo)
		return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], x.hi)
	binary.BigEndian.PutUint64(b[8:], x.lo)
	return netip.AddrFrom16(b)
}

func (x u128) sub(y u128) u128 {
	lo, borrow := bits.Sub64(x.lo, y.lo, 0)
	hi, _ := bits.Sub64(x.hi, y.hi, borrow)
	return u128{hi, lo}
}

func (x u128) addU64(y uint64) u128 {
	lo, carry := bits.Add64(x.lo, y, 0)
	return u128{x.hi + carry, lo}
}

func (x u128) and(y u128) u128 { return u128{x.hi & y.hi, x.lo & y.lo} }
func (x u128) or(y u128) u128  { return u128{x.hi | y.hi, x.lo | y.lo} }
func (x u128) isZero() bool    { return x.hi == 0 && x.lo == 0 }
func (x u128) onesCount() int  { return bits.OnesCount64(x.hi) + bits.OnesCount64(x.lo) }

func (x u128) less(y u128) bool { return x.hi < y.hi || (x.hi == y.hi && x.lo < y.lo) }

// shr shifts right by n (0 <= n < 128).
func (x u128) shr(n int) u128 {
	switch {
	case n == 0:
		return x
	case n >= 64:
		return u128{0, x.hi >> (n - 64)}
	default:
		return u128{x.hi >> n, x.lo>>n | x.hi<<(64-n)}
	}
}

// lowMask has the low n bits set (0 <= n <= 128).
func lowMask(n int) u128 {
	switch {
	case n >= 128:
		return u128{^uint64(0), ^uint64(0)}
	case n >= 64:
		return u128{1<<(n-64) - 1, ^uint64(0)}
	default:
		return u128{0, 1<<n - 1}
	}
}
