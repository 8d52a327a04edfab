// +k8s:deepcopy-gen=package

// Package kamaji mirrors the fields of Kamaji's KamajiControlPlane
// (controlplane.cluster.x-k8s.io/v1alpha2) that butler sets; the Go module is not served by the
// module proxy here. The minimal CRD in artifacts/crds has the same field names.
package kamaji
