// Package stewardcontrolplane is the local provider's stand-in for capi-steward, Steward's
// Cluster API control plane provider: it turns a Cluster API StewardControlPlane into a Steward
// TenantControlPlane, which package controlplane runs as processes on this machine. Nothing of it
// runs in production, where capi-steward does this work.
//
// It acts on the StewardControlPlanes of local clusters only (a Cluster whose infrastructureRef
// is a LocalCluster): another provider's clusters are Steward's in a real management cluster, and
// nobody's here. Those in a namespace a real Steward has (Options.ExternalNamespaces) it leaves alone.
//
// It keeps capi-steward's contract (docs/architecture.md): a StewardControlPlane
// (controlplane.cluster.x-k8s.io/v1alpha1) waits for its Cluster ownerReference, then applies
// TenantControlPlane <same name> (steward.butlerlabs.dev/v1alpha1) owned by it, copies the
// admin kubeconfig of <tcp>-admin-kubeconfig into <cluster>-kubeconfig (type
// cluster.x-k8s.io/secret, key value), patches the infrastructure cluster's
// spec.controlPlaneEndpoint, and reports initialized/ready/version in its status. Why the
// TenantControlPlane is not Ready (its annotations localprovider.butlerlabs.dev/reason and
// /message) goes into the Ready condition, and into failureReason/failureMessage when it cannot
// be mended by waiting (an invalid spec, a Kubernetes version that cannot be built).
package stewardcontrolplane
