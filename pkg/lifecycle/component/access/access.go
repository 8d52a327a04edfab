// Package access says who a Team's members are inside their tenant clusters and what they may
// do there. A kubeconfig minted for a member carries identity only: the member's user name and
// the member's groups that the Team lists, each prefixed with "butler:" so that they cannot
// collide with the tenant's own users and groups, and never system:masters or the role. The role
// comes from bindings in the tenant, kept in step with the Team, so a demotion or a removal takes
// effect as soon as the bindings are applied, not when the certificate expires:
//   - admin: ClusterRoleBinding to cluster-admin;
//   - operator: RoleBinding to butler:operator (edit without impersonate) in every namespace that
//     is not protected, and view across the cluster;
//   - viewer: ClusterRoleBinding to view.
//
// Whoever is bound to view (viewers, operators, every read-only identity) also reads Nodes
// (NodeViewerRole): view holds no cluster-scoped kind, and a Team member cannot read the Cluster
// API Machines in the management cluster, so without it nobody but a tenant admin could see
// whether the cluster's nodes are Ready (kubectl butler describe, kubectl get nodes). Nodes
// carry no secret; nodes/proxy (the kubelet's API: exec, logs) is not granted.
//
// # Operators
//
// The built-in edit lets its holder act as any service account of the namespace: impersonate it,
// mint its tokens, run a Pod as it, exec into a Pod that runs as it, read its token Secrets. In a
// namespace where a platform addon (a Flux controller, cert-manager) or a tenant admin runs a
// privileged service account, edit is that account's rights. RBAC only adds, so an operator's
// role is bound per namespace, never cluster-wide, and a namespace is left out by a label: the
// system namespaces always, and any namespace labelled external.ProtectedNamespaceLabel=true, which
// the TenantAddon controller sets on the release namespace of every platform catalog addon and a
// tenant admin sets on any other. There an operator keeps view: no Secrets, Pods, exec, tokens
// or service accounts. Operators cannot remove the label: nothing they hold updates or patches a
// Namespace, nor makes one. A label, rather than a list the catalog declares per addon, because
// a tenant admin's own privileged namespaces need the same and the label is where both can put
// it; rather than operator-made namespaces only, because operators make none.
//
// What it gives up: a protected namespace is closed to operators whole, the addon's own objects
// and any workload there alike; the label takes effect at the next access step (at once for an
// addon's namespace, labelled before its chart is installed; within the access step's resync
// for a tenant admin's label on an existing namespace, sooner on any change of the Team); a
// chart that makes other namespaces than its release namespace gets them unprotected; and in a
// namespace that is not protected an operator still runs Pods as any of its service accounts.
// Pod Security bounds what those Pods may be: a local tenant enforces baseline in every namespace
// without a level of its own (no privileged Pod, no hostPath: from a node's root an operator would
// read every Pod's token there), and a namespace labelled privileged is protected, so a tenant
// admin who opens one for a workload does not open it to operators.
//
// butler:operator is aggregated by the tenant's kube-controller-manager from
// butler:aggregate-to-operator (edit's own rules without impersonate, OperatorRules) and from
// ClusterRoles labelled AggregateToOperatorLabel "true" only. The edit roles a CRD's chart
// labels to aggregate to edit are not taken in: flux-edit, for one, writes Kustomizations that
// kustomize-controller applies with its own rights. A catalog definition (or a tenant admin)
// opts a CRD's edit role in by labelling it, after judging what its objects make a controller do.
//
// Operators edit Services in the namespaces they are bound in, default among them, but not the
// tenant's API endpoint (Service default/kubernetes and the EndpointSlices published for it):
// APIEndpointPolicies keeps it to the tenant's kube-apiserver, the platform and the tenant's
// admins, and is applied before the bindings; it keeps the API's ClusterIP and spec.externalIPs
// (CVE-2020-8554) from operators' Services in every namespace too.
//
// A read-only kubeconfig (tenantclusters/viewerkubeconfig) carries the same names with the suffix
// ":readonly", which only the view binding names, whatever the member's role.
package access

import (
	"slices"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

const (
	// Prefix starts every name butler gives a member in a tenant.
	Prefix = "butler:"
	// GroupPrefix starts a member group's name; a user's is Prefix and the user name.
	GroupPrefix = Prefix + "group:"
	// ReadOnlySuffix ends every name of a read-only kubeconfig.
	ReadOnlySuffix = ":readonly"
	// ManagedByLabel marks the bindings this package makes in a tenant.
	ManagedByLabel = "butler.butlerlabs.dev/managed-by"
	ManagedBy      = "butler-team-access"
)

// Namespace is a tenant namespace as the bindings need it.
type Namespace struct {
	Name      string
	Protected bool
}

// Protected says whether a namespace of that name and labels is closed to operators.
func Protected(name string, labels map[string]string) bool {
	return labels[external.ProtectedNamespaceLabel] == "true" || labels[external.PodSecurityEnforceLabel] == external.PodSecurityPrivileged ||
		slices.Contains(external.TenantSystemNamespaces, name)
}

// Names of the bindings in a tenant.
const (
	AdminsBinding    = Prefix + "team-admins"
	OperatorsBinding = Prefix + "team-operators"
	// OperatorRole is the operators' ClusterRole, bound per namespace.
	OperatorRole = Prefix + "operator"
	// OperatorRulesRole holds OperatorRules, aggregated into OperatorRole.
	OperatorRulesRole = Prefix + "aggregate-to-operator"
	// AggregateToOperatorLabel selects the ClusterRoles OperatorRole aggregates, besides edit's.
	AggregateToOperatorLabel = "butler.butlerlabs.dev/aggregate-to-operator"
	ViewersBinding           = Prefix + "team-viewers"
	// NodeViewerRole reads Nodes, and NodeViewersBinding binds it to the view binding's subjects.
	NodeViewerRole     = Prefix + "node-viewer"
	NodeViewersBinding = Prefix + "team-node-viewers"
	// PlatformAdmins is the group of who mints a kubeconfig of a cluster that no Team owns (whom
	// the management cluster's RBAC lets do so), bound to cluster-admin in every tenant.
	PlatformAdmins        = Prefix + "platform-admins"
	PlatformAdminsBinding = Prefix + "platform-admins"
)

// Member is a Team's user or group and its role (the Team's access lists, of either API
// version).
type Member struct {
	Name string
	Role v1alpha1.TeamRole
}

// Members are a Team's users and groups.
type Members struct {
	Users, Groups []Member
}

// MembersOf are the members of a stored Team.
func MembersOf(team *v1alpha1.Team) Members {
	var m Members
	for _, u := range team.Spec.Access.Users {
		m.Users = append(m.Users, Member{Name: u.Name, Role: u.Role})
	}
	for _, g := range team.Spec.Access.Groups {
		m.Groups = append(m.Groups, Member{Name: g.Name, Role: g.Role})
	}
	return m
}

// Role normalizes a member's role: member is operator, empty is viewer.
func Role(r v1alpha1.TeamRole) v1alpha1.TeamRole {
	switch r {
	case v1alpha1.TeamRoleMember:
		return v1alpha1.TeamRoleOperator
	case "":
		return v1alpha1.TeamRoleViewer
	}
	return r
}

// rank orders roles: the strongest of a member's entries counts.
func rank(r v1alpha1.TeamRole) int {
	switch Role(r) {
	case v1alpha1.TeamRoleAdmin:
		return 3
	case v1alpha1.TeamRoleOperator:
		return 2
	case v1alpha1.TeamRoleViewer:
		return 1
	}
	return 0
}

// Identity is what a minted certificate says: CN User, O Groups.
type Identity struct {
	User   string
	Groups []string
}

// PlatformAdminIdentity is the identity of whom the management cluster lets mint a kubeconfig
// of a cluster that no Team owns.
func PlatformAdminIdentity(user string, readOnly bool) Identity {
	if readOnly {
		return Identity{User: Prefix + user + ReadOnlySuffix, Groups: []string{PlatformAdmins + ReadOnlySuffix}}
	}
	return Identity{User: Prefix + user, Groups: []string{PlatformAdmins}}
}

// IdentityOf is the tenant identity of a management user with groups, and the strongest role the
// Team gives them; ok is false when the Team does not list them, by name or by a group.
func IdentityOf(team Members, user string, groups []string, readOnly bool) (Identity, v1alpha1.TeamRole, bool) {
	suffix := ""
	if readOnly {
		suffix = ReadOnlySuffix
	}
	id := Identity{User: Prefix + user + suffix}
	var role v1alpha1.TeamRole
	best := 0
	for _, m := range team.Users {
		if m.Name == user && rank(m.Role) > best {
			role, best = Role(m.Role), rank(m.Role)
		}
	}
	for _, m := range team.Groups {
		if !slices.Contains(groups, m.Name) {
			continue
		}
		id.Groups = append(id.Groups, GroupPrefix+m.Name+suffix)
		if rank(m.Role) > best {
			role, best = Role(m.Role), rank(m.Role)
		}
	}
	sort.Strings(id.Groups)
	return id, role, role != ""
}

// Bindings are the tenant's bindings for team: the admins' and viewers' ClusterRoleBindings and
// the operators' RoleBinding in each namespace but the system ones. A role nobody has gets a
// binding with no subjects, which the access step deletes (the last member goes with it); so
// does a protected namespace, so that a namespace labelled since loses the binding it had.
func Bindings(team Members, namespaces []Namespace) ([]*rbacv1.ClusterRoleBinding, []*rbacv1.RoleBinding) {
	subjects := map[v1alpha1.TeamRole][]rbacv1.Subject{}
	var readOnly []rbacv1.Subject
	add := func(kind, name string, role v1alpha1.TeamRole) {
		subjects[Role(role)] = append(subjects[Role(role)], rbacv1.Subject{Kind: kind, APIGroup: rbacv1.GroupName, Name: name})
		readOnly = append(readOnly, rbacv1.Subject{Kind: kind, APIGroup: rbacv1.GroupName, Name: name + ReadOnlySuffix})
	}
	for _, m := range team.Users {
		add(rbacv1.UserKind, Prefix+m.Name, m.Role)
	}
	for _, m := range team.Groups {
		add(rbacv1.GroupKind, GroupPrefix+m.Name, m.Role)
	}
	// Operators read everything, as viewers do; what they may change is OperatorRole per
	// namespace.
	view := append(append(append([]rbacv1.Subject{}, subjects[v1alpha1.TeamRoleViewer]...), subjects[v1alpha1.TeamRoleOperator]...), readOnly...)
	view = append(view, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: PlatformAdmins + ReadOnlySuffix})
	crbs := []*rbacv1.ClusterRoleBinding{
		{ObjectMeta: meta(AdminsBinding, ""), RoleRef: clusterRole("cluster-admin"), Subjects: subjects[v1alpha1.TeamRoleAdmin]},
		{ObjectMeta: meta(ViewersBinding, ""), RoleRef: clusterRole("view"), Subjects: view},
		{ObjectMeta: meta(NodeViewersBinding, ""), RoleRef: clusterRole(NodeViewerRole), Subjects: view},
		{ObjectMeta: meta(PlatformAdminsBinding, ""), RoleRef: clusterRole("cluster-admin"),
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: PlatformAdmins}}},
	}
	var rbs []*rbacv1.RoleBinding
	for _, ns := range namespaces {
		if slices.Contains(external.TenantSystemNamespaces, ns.Name) {
			continue // never bound, nothing to take back
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: meta(OperatorsBinding, ns.Name), RoleRef: clusterRole(OperatorRole)}
		if !ns.Protected {
			rb.Subjects = subjects[v1alpha1.TeamRoleOperator]
		}
		rbs = append(rbs, rb)
	}
	return crbs, rbs
}

// BoundRoles are the ClusterRoles the bindings refer to, each once, sorted: what the access step
// reads to see that each grants something.
func BoundRoles(crbs []*rbacv1.ClusterRoleBinding, rbs []*rbacv1.RoleBinding) []string {
	var names []string
	for _, b := range crbs {
		names = append(names, b.RoleRef.Name)
	}
	for _, b := range rbs {
		names = append(names, b.RoleRef.Name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// ClusterRoles are butler's roles in the tenant: OperatorRole, which the tenant's
// kube-controller-manager aggregates (package doc), OperatorRulesRole, edit's rules without
// impersonate, which it aggregates among others, and NodeViewerRole.
func ClusterRoles() []*rbacv1.ClusterRole {
	base := &rbacv1.ClusterRole{ObjectMeta: meta(OperatorRulesRole, ""), Rules: OperatorRules()}
	base.Labels[AggregateToOperatorLabel] = "true"
	nodes := &rbacv1.ClusterRole{ObjectMeta: meta(NodeViewerRole, ""), Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"nodes"}},
	}}
	return []*rbacv1.ClusterRole{base, {
		ObjectMeta: meta(OperatorRole, ""),
		// Only roles opted in by the label: a CRD's edit role may write objects its controller
		// applies with more rights than an operator has (flux-edit), so it is never taken in
		// just for aggregating to edit.
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{AggregateToOperatorLabel: "true"}},
		}},
	}, nodes}
}

// OperatorRules are the rules of Kubernetes' system:aggregate-to-edit (v1.36) without
// impersonate: what edit lets a user do in a namespace, but act as another identity.
func OperatorRules() []rbacv1.PolicyRule {
	read := []string{"get", "list", "watch"}
	write := []string{"create", "update", "patch", "delete", "deletecollection"}
	rule := func(verbs []string, groups []string, resources ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources}
	}
	core := []string{""}
	return []rbacv1.PolicyRule{
		rule(read, core, "pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy"),
		rule(write, core, "pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"),
		rule([]string{"create"}, core, "pods/eviction"),
		rule(write, core, "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets"),
		rule([]string{"create"}, core, "serviceaccounts/token"),
		rule(write, []string{"", "events.k8s.io"}, "events"),
		rule(write, []string{"apps"}, "statefulsets", "statefulsets/scale", "daemonsets", "deployments", "deployments/scale",
			"deployments/rollback", "replicasets", "replicasets/scale"),
		rule(write, []string{"autoscaling"}, "horizontalpodautoscalers"),
		rule(write, []string{"batch"}, "jobs", "cronjobs"),
		rule(write, []string{"extensions"}, "daemonsets", "deployments", "deployments/scale", "deployments/rollback", "ingresses",
			"replicasets", "replicasets/scale", "replicationcontrollers/scale", "networkpolicies"),
		rule(write, []string{"policy"}, "poddisruptionbudgets"),
		rule(write, []string{"networking.k8s.io"}, "networkpolicies", "ingresses"),
		rule(append(read, write...), []string{"coordination.k8s.io"}, "leases"),
		rule(write, []string{"resource.k8s.io"}, "resourceclaims", "resourceclaimtemplates"),
	}
}

func meta(name, ns string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{ManagedByLabel: ManagedBy}}
}

func clusterRole(name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
}
