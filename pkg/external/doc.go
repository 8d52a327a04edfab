// Package external is butler's one typed contract with what it does not own: Cluster API,
// Steward and Kamaji, the infrastructure providers, and butler's own bootstrap and local
// providers, which run as separate controllers. It holds, once for every controller:
//
//   - the kinds: their GroupVersionKinds and resources (gvk.go);
//   - the labels and annotations of the contract (labels.go, rotation.go, localprovider.go);
//     Cluster API's own labels are used from its Go module (sigs.k8s.io/cluster-api/api);
//   - the field managers, and the one server-side apply every controller writes with
//     (fieldmanager.go: Workers and LocalProvider, FieldManager.Apply and .ApplyOptions);
//   - typed reads: FromUnstructured reads an object the dynamic client holds into a mirror of
//     this package's (InfrastructureCluster and InfrastructureMachine, the identities AWS and
//     Azure clusters name; Steward's and Kamaji's kinds in steward/ and kamaji/, whose Go
//     modules are not available here) or into Cluster API's own Go type, so that no controller
//     reads a field by a string path. The mirrors have generated DeepCopy;
//   - the Go types of butler's own providers' kinds (providers.go: BootstrapConfig, LocalCluster,
//     LocalMachine), which the controllers write and the providers serve.
//
// It imports apimachinery and API types (k8s.io/api) only, never a client: the controllers pass
// theirs in (Resource is client-go's dynamic.ResourceInterface).
//
// The CRDs of all of them are in artifacts/crds; this package's tests parse them and check that
// every kind CAPI references carries a contract label CAPI v1.14 accepts, and that the mirrors'
// fields are the CRDs'.
package external
