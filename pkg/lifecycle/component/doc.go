// Package component builds the desired external objects of a TenantCluster: pure functions from
// an Input (the stored TenantCluster with defaults applied, its tenant namespace, ProviderConfig,
// ButlerConfig and IP allocations) to objects ready for server-side apply — apiVersion, kind,
// name, namespace, the contract labels and the spec, never status, and no empty or zero fields
// that would claim ownership of what other managers set.
//
// Subpackages, one per step of the TenantCluster controller:
//   - controlplane: the CAPI Cluster and its control plane (StewardControlPlane, KamajiControlPlane
//     or, for a standalone control plane, KubeadmControlPlane);
//   - infra: the infrastructure cluster and machine templates of the seven providers;
//   - workers: the MachineDeployment and butler's BootstrapConfigTemplate;
//   - addons: the TenantAddons of spec.addons;
//   - gitops: Flux's GitRepository and Kustomization, and the credential's copy, for
//     spec.addons.gitops.repository (into the tenant; no step applies them yet), and their
//     status read back.
//
// CAPI kinds are built with CAPI's own Go types and converted; kinds without a Go module here are
// built as maps with the upstream field names, and the tests validate every object against the
// CRDs in artifacts/crds. Nothing here reads a client or imports a controller.
package component
