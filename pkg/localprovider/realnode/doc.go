// Package realnode is what a real node on this host needs around its containerd and kubelet,
// whichever plane runs it (the local provider's machines, each in a network namespace of its
// own, and `make cluster`'s one node on the host's): containerd's configuration, the images
// imported into it, and the clean-up of what the node leaves outside its processes (cgroups,
// mounts, the Pods' network namespaces, shims, the kubelet's links to the Pods' logs).
package realnode
