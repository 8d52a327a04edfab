// Package external names the external kinds butler-apiserver's lifecycle workers write and read:
// Cluster API's, Steward's and Kamaji's, the infrastructure providers', and butler's own bootstrap
// and local infrastructure providers. It holds their GroupVersionKinds and resources, and in
// subpackages small typed mirrors of the fields we read or write where no Go module with the
// upstream types is available here (Steward, Kamaji). CAPI kinds use CAPI's own Go types
// (sigs.k8s.io/cluster-api/api) in the builders; this package stays on apimachinery.
//
// The CRDs of all of them are in artifacts/crds; this package's tests parse them and check that
// every kind CAPI references carries a contract label CAPI v1.14 accepts.
package external
