// Package access says who a Team's members are inside their tenant clusters and what they may
// do there. A kubeconfig minted for a member carries identity only: the member's user name and
// the member's groups that the Team lists, each prefixed with "butler:" so that they cannot
// collide with the tenant's own users and groups, and never system:masters or the role. The role
// comes from bindings in the tenant, kept in step with the Team, so a demotion or a removal takes
// effect as soon as the bindings are applied, not when the certificate expires:
//   - admin: ClusterRoleBinding to cluster-admin;
//   - operator: RoleBinding to edit in every namespace but kube-system, kube-public and
//     kube-node-lease (an operator must not run Pods as the system's service accounts), and view
//     across the cluster;
//   - viewer: ClusterRoleBinding to view.
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

// SystemNamespaces are where an operator gets no edit: their service accounts are the system's.
var SystemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// Names of the bindings in a tenant.
const (
	AdminsBinding    = Prefix + "team-admins"
	OperatorsBinding = Prefix + "team-operators"
	ViewersBinding   = Prefix + "team-viewers"
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
// the operators' RoleBinding in each of namespaces that is not a system one. A role nobody has
// gets a binding with no subjects, which the access step deletes (the last member goes with it).
func Bindings(team Members, namespaces []string) ([]*rbacv1.ClusterRoleBinding, []*rbacv1.RoleBinding) {
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
	meta := func(name, ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{ManagedByLabel: ManagedBy}}
	}
	// Operators read everything, as viewers do; what they may change is edit per namespace.
	view := append(append(append([]rbacv1.Subject{}, subjects[v1alpha1.TeamRoleViewer]...), subjects[v1alpha1.TeamRoleOperator]...), readOnly...)
	view = append(view, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: PlatformAdmins + ReadOnlySuffix})
	crbs := []*rbacv1.ClusterRoleBinding{
		{ObjectMeta: meta(AdminsBinding, ""), RoleRef: clusterRole("cluster-admin"), Subjects: subjects[v1alpha1.TeamRoleAdmin]},
		{ObjectMeta: meta(ViewersBinding, ""), RoleRef: clusterRole("view"), Subjects: view},
		{ObjectMeta: meta(PlatformAdminsBinding, ""), RoleRef: clusterRole("cluster-admin"),
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: PlatformAdmins}}},
	}
	var rbs []*rbacv1.RoleBinding
	for _, ns := range namespaces {
		if slices.Contains(SystemNamespaces, ns) {
			continue
		}
		rbs = append(rbs, &rbacv1.RoleBinding{ObjectMeta: meta(OperatorsBinding, ns), RoleRef: clusterRole("edit"),
			Subjects: subjects[v1alpha1.TeamRoleOperator]})
	}
	return crbs, rbs
}

func clusterRole(name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
}
