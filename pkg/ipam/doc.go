// Package ipam will hold the address allocator behind NetworkPools and IPAllocations: bitmap
// blocks, best fit, pinned and reserved ranges, its etcd-backed store and repair loop. It has
// no HTTP in it; the networkpools/allocate subresource calls it.
package ipam
