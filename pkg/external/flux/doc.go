// Package flux mirrors the fields of Flux's GitRepository (source.toolkit.fluxcd.io/v1) and
// Kustomization (kustomize.toolkit.fluxcd.io/v1) that butler writes into a tenant and reads back:
// the Go modules of their APIs (github.com/fluxcd/source-controller/api,
// kustomize-controller/api v1.9.6) bring controller-runtime and Flux's libraries into butler's
// module for a dozen fields. Field names are those of those modules' types. The mirrors are read
// with external.FromUnstructured and written with runtime's converter; nothing caches them, so
// they have no DeepCopy.
package flux
