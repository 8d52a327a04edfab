package external

// The labels of butler's contract with what it writes in the management cluster, defined once
// (as k8s.io/api/core/v1's well_known_labels.go does for Kubernetes). Cluster API's own labels
// and types (cluster.x-k8s.io/cluster-name, the cluster.x-k8s.io/secret type) are used from its Go
// module, sigs.k8s.io/cluster-api/api, never spelled again here.
const (
	// TenantClusterLabel and TenantClusterNamespaceLabel name the TenantCluster an object was made
	// for: labels, not owner references, as the objects live in the tenant's namespace and the
	// TenantCluster in its Team's. The controllers find a cluster's objects by them, the bootstrap
	// provider copies them from a config to its data Secret, and the local provider reads them.
	TenantClusterLabel          = "butler.butlerlabs.dev/tenant-cluster"
	TenantClusterNamespaceLabel = "butler.butlerlabs.dev/tenant-cluster-namespace"
	// ManagedByLabel is Kubernetes' recommended label for the tool that manages an object;
	// ManagedBy is its value on what the controllers make (a Team's namespace and RoleBindings, a
	// TenantCluster's objects, bootstrap Secrets), so that they only ever remove their own.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = string(Workers)
	// TenantClusterPausedAnnotation "true" holds a TenantCluster as it is, as Cluster API's
	// cluster.x-k8s.io/paused does: the controllers write nothing of it, its status included, until
	// the annotation goes, but for the Team's bindings in the tenant (they follow the Team
	// still); the local provider neither wakes it nor puts it to sleep on its endpoint's use. A
	// deletion still runs.
	TenantClusterPausedAnnotation = "butler.butlerlabs.dev/paused"
	// ProtectedNamespaceLabel, with the value "true", marks a namespace in a tenant cluster as a
	// tenant admin's or a platform addon's own: operators get no edit there (component/access)
	// and a Team's chart creates nothing there (addons' privilege check). Tenant admins and the
	// TenantAddon controller set it; an in-place restore keeps it as it is now.
	ProtectedNamespaceLabel = "butler.butlerlabs.dev/protected"
	// PodSecurityEnforceLabel is Kubernetes' Pod Security level of a namespace. A local tenant
	// enforces "baseline" where the label is absent; a namespace labelled "privileged" is
	// protected as ProtectedNamespaceLabel's are, since any Pod there may read its node's.
	PodSecurityEnforceLabel = "pod-security.kubernetes.io/enforce"
	PodSecurityPrivileged   = "privileged"
)

// MadeForNamespaces says whether obj is in one of namespaces, or was made for a TenantCluster in
// one of them (its TenantClusterNamespaceLabel: butler makes a cluster's objects in its tenant
// namespace, <tc>-<uid8>).
func MadeForNamespaces(obj interface {
	GetNamespace() string
	GetLabels() map[string]string
}, namespaces []string) bool {
	for _, ns := range namespaces {
		if obj.GetNamespace() == ns || obj.GetLabels()[TenantClusterNamespaceLabel] == ns {
			return true
		}
	}
	return false
}

// TenantSystemNamespaces are Kubernetes' own namespaces in a tenant: their service accounts are
// the system's controllers', so operators are never bound there and a Team's chart creates
// nothing there.
var TenantSystemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// LoadBalancerAddressAnnotations are the annotations by which a Service asks its load-balancer
// implementation for given addresses, as spec.loadBalancerIP does (deprecated upstream in their
// favour): MetalLB's (in the catalog, a TenantCluster's default loadBalancer provider; the old
// domain still read), kube-vip's, Cilium's LB-IPAM (and its older key), PureLB's, Azure's and
// the AWS load balancer controller's and GKE's (reserved addresses by allocation id or name:
// still a chosen address). A Service's implementation announces what it asks for,
// so the tenant's policy, a Team's chart check and the Services audit judge all of them alike.
var LoadBalancerAddressAnnotations = []string{
	"metallb.io/loadBalancerIPs",
	"metallb.universe.tf/loadBalancerIPs",
	"kube-vip.io/loadbalancerIPs",
	"lbipam.cilium.io/ips",
	"io.cilium/lb-ipam-ips",
	"purelb.io/addresses",
	"service.beta.kubernetes.io/azure-load-balancer-ipv4",
	"service.beta.kubernetes.io/azure-load-balancer-ipv6",
	"service.beta.kubernetes.io/aws-load-balancer-private-ipv4-addresses",
	"service.beta.kubernetes.io/aws-load-balancer-eip-allocations",
	"networking.gke.io/load-balancer-ip-addresses",
}
