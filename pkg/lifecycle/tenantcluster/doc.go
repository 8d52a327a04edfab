// Package tenantcluster is the lifecycle controller that turns a stored TenantCluster into the
// objects a management cluster running Cluster API and Steward (or Kamaji) acts on, reads their
// status back, and walks the cluster through its phases.
//
// A reconcile is a plan of named steps (pkg/lifecycle/steps), each owning one condition:
//
//	namespace       the tenant namespace <tc>-<uid8>, labelled with the cluster and its team
//	network         NetworkReady: IPAllocations for the load balancer and, where machines take them, the nodes (workers + 1, grown before a scale-up, shrunk after) (network mode ipam)
//	infrastructure  InfrastructureReady: the provider's infrastructure cluster
//	control plane   ControlPlaneReady: Cluster + StewardControlPlane / KamajiControlPlane /
//	                KubeadmControlPlane; ready when the TenantControlPlane (or the Cluster) says so
//	workers         WorkersReady: BootstrapConfigTemplate, machine template, MachineDeployment
//	                <tc>-workers; written only once the control plane is ready at the asked
//	                version, so an upgrade moves the control plane first and the workers after it
//	addons          AddonsReady: a TenantAddon per spec.addons entry, each Installed
//	gitops          GitOpsSynced (set by the step, never holding Ready back): Flux's controllers
//	                and the repository's GitRepository and Kustomization applied into the tenant,
//	                their status read into status.gitops (docs/concepts/gitops.md)
//
// The builders of the external objects live in pkg/lifecycle/component; this package applies
// them (server-side apply, field manager butler-apiserver) and judges readiness. Everything it
// writes carries the cluster's labels, and watches on those objects bring the cluster back:
// progress is event driven, never a timer. A deleted cluster runs the plan backwards behind
// the finalizer butler.butlerlabs.dev/tenantcluster: addons uninstalled, workers, control
// plane, infrastructure, addresses released, namespace; the finalizer goes only when all of it
// is gone.
//
// The phase follows from the first step not done: Provisioning, Installing (addons), Ready;
// Updating while a change is rolled out on a cluster that was Ready; Failed only when a step
// needs a person (a missing or unready ProviderConfig, an exhausted pool), with a condition
// saying what to do; Deleting. status.lastOperation is the one-line progress kubectl shows.
//
// The annotation butler.butlerlabs.dev/paused: "true" holds a cluster as it is (nothing
// written, status included) until it is removed, as Cluster API's cluster.x-k8s.io/paused does;
// deleting a paused cluster still cleans up.
package tenantcluster
