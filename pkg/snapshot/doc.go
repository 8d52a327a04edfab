// Package snapshot is the data of a TenantClusterSnapshot: one tenant's key range of a
// datastore at one etcd revision, read page by page at that revision (never held whole in
// memory), written as a gzip stream of length-prefixed records with the keys relative to the
// tenant's prefix, and checksummed (sha256 of the stored bytes); a Store keeps the streams
// (a directory; the interface is what an object store would implement too). Restoring reads a
// stream back into a prefix, optionally dropping what carries the source cluster's identity.
// No HTTP and no Kubernetes client in it: the local provider's snapshot controller drives it.
package snapshot
