// Package ipam is the address allocator behind NetworkPools and IPAllocations. This is its
// pure core: standard library only, no HTTP, no etcd, no Kubernetes types. The etcd-backed
// store, the repair loop and the networkpools/allocate subresource are built on it
// elsewhere.
//
// A Pool is a parsed NetworkPool spec: an IPv4 or IPv6 CIDR of at most 2^64 addresses, its
// allocatable ranges, and reserved CIDRs. The network address is never handed out, nor an
// IPv4 broadcast address; see Pool for the exact rule.
//
// An Allocator hands out one pool's addresses. Allocate takes a count and picks by best fit:
// the smallest free run that holds it, the lowest such run among equals, at its lowest
// addresses. AllocateRange takes a pinned range, which must be free and lie inside one
// allocatable range. Release returns exactly one allocation and joins it with its free
// neighbours. Status gives NetworkPoolStatus's figures; Describe gives IPAllocationStatus's.
//
// The state is not a bitmap. Free runs (by address and by size) and allocations (by
// address) live in copy-on-write B-trees, so every operation is O(log n) in the number of
// runs, memory grows with the number of allocations and not with the pool (a /8 or an IPv6
// /64 costs nothing until it is used), and Clone is O(1). NewAllocator rebuilds an allocator
// from a list of allocated ranges in O(n log n), refusing state in which two allocations
// overlap or one lies outside the pool.
//
// For storage the state is the list of allocations, encoded compactly and
// deterministically (two to twenty bytes per allocation; see codec.go). A store may keep
// it under one key per pool (Allocator.MarshalBinary, UnmarshalAllocator) or cut the
// address space into aligned blocks of 2^bits addresses and keep one key per block
// (BlocksOf, Allocator.MarshalBlock, NewAllocatorFromBlocks; Block and JoinBlocks to
// inspect them), so that a request rewrites only the blocks its range overlaps. The
// intended use: rebuild from the stored state (or Clone a cached allocator), Allocate,
// then write the touched blocks with a compare-and-swap on their revisions together with
// the IPAllocation, and on a lost race drop the clone and retry.
//
// Errors are typed (ExhaustedError, ConflictError, OutOfRangeError, NotAllocatedError,
// StrandedError, OverlapError, SpecError, CorruptError) so that callers can map them to
// API statuses. Stranded tells whether a new spec would strand live allocations.
package ipam
