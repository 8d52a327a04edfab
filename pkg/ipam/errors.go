package ipam

import (
	"fmt"
	"net/netip"
	"strings"
)

// Errors are typed so that the REST layer can pick the status (Conflict for exhausted and
// conflicting requests, Invalid for bad specs and out-of-range pins) and so that their
// messages, which users read, carry the numbers and ranges they need to act.

// ExhaustedError says no free run holds the requested count.
type ExhaustedError struct {
	Requested        uint64
	LargestFreeBlock uint64
	// Free is every free address; when it is at least Requested the pool is fragmented
	// rather than full.
	Free uint64
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("pool exhausted: %d contiguous addresses requested, the largest free block holds %d (%d free in all)",
		e.Requested, e.LargestFreeBlock, e.Free)
}

// ConflictError says a pinned range overlaps a reserved CIDR or an allocation; Conflicting
// is the lowest such range.
type ConflictError struct {
	Requested   Range
	Conflicting Range
	// Reserved is the reserved CIDR that conflicts, if it is one; otherwise Conflicting is
	// an allocation.
	Reserved netip.Prefix
}

func (e *ConflictError) Error() string {
	if e.Reserved.IsValid() {
		return fmt.Sprintf("pinned range %s overlaps reserved %s", e.Requested, e.Reserved)
	}
	return fmt.Sprintf("pinned range %s overlaps allocated range %s", e.Requested, e.Conflicting)
}

// OutOfRangeError says a pinned range does not lie inside one allocatable range of the
// pool (or is not a valid range of the pool's family).
type OutOfRangeError struct {
	Requested Range
	Pool      netip.Prefix
	Ranges    []Range
}

func (e *OutOfRangeError) Error() string {
	return fmt.Sprintf("pinned range %s is not inside one allocatable range of pool %s (allocatable: %s)",
		e.Requested, e.Pool, listRanges(e.Ranges, 4))
}

// NotAllocatedError says a released range is not exactly one allocation.
type NotAllocatedError struct {
	Range Range
}

func (e *NotAllocatedError) Error() string {
	return fmt.Sprintf("%s is not an allocation of this pool", e.Range)
}

// StrandedError says allocations lie outside a pool's allocatable addresses: NewAllocator's
// answer when stored state has them there.
type StrandedError struct {
	Pool   netip.Prefix
	Ranges []Range
}

func (e *StrandedError) Error() string {
	return fmt.Sprintf("%d allocated range(s) would fall outside the allocatable addresses of pool %s: %s",
		len(e.Ranges), e.Pool, listRanges(e.Ranges, 8))
}

// OverlapError says two allocations share an address: stored state that breaks the first
// invariant of the allocator.
type OverlapError struct {
	A, B Range
}

func (e *OverlapError) Error() string {
	return fmt.Sprintf("allocations %s and %s overlap", e.A, e.B)
}

// SpecError says a pool spec is invalid. Field is the JSON path in NetworkPoolSpec, such as
// "ranges[1].start", so validation can report it as a field error.
type SpecError struct {
	Field  string
	Value  string
	Detail string
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("%s: invalid value %q: %s", e.Field, e.Value, e.Detail)
}

// CorruptError says stored block state cannot be decoded or joined.
type CorruptError struct {
	Detail string
}

func (e *CorruptError) Error() string { return "corrupt allocation state: " + e.Detail }

func corrupt(format string, args ...any) error {
	return &CorruptError{Detail: fmt.Sprintf(format, args...)}
}

// listRanges writes up to max ranges, then how many more there are.
func listRanges(rs []Range, max int) string {
	if len(rs) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, r := range rs {
		if i == max {
			fmt.Fprintf(&b, " and %d more", len(rs)-max)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(r.String())
	}
	return b.String()
}
