// +k8s:deepcopy-gen=package

// Package steward mirrors the fields of Steward's kinds that butler reads or writes: the
// TenantControlPlane's status (readiness, endpoint, admin kubeconfig Secret) and the
// StewardControlPlane spec (controlplane.cluster.x-k8s.io/v1alpha1) the TenantCluster controller
// applies. Field names are those of the CRDs in artifacts/crds; Kamaji's TenantControlPlane
// (kamaji.clastix.io) has the same shape, so the mirror reads both.
package steward
