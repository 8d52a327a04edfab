package access

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

func names(subjects []rbacv1.Subject) []string {
	var out []string
	for _, s := range subjects {
		out = append(out, s.Kind+":"+s.Name)
	}
	return out
}

// Each role is bound where it belongs: admins to cluster-admin, operators to edit outside the
// system namespaces (and view), viewers and every read-only identity to view; a role nobody has
// still gets its binding, empty, so a removal is applied.
func TestBindings(t *testing.T) {
	team := Members{
		Users:  []Member{{Name: "alice", Role: v1alpha1.TeamRoleAdmin}, {Name: "otto", Role: v1alpha1.TeamRoleMember}, {Name: "vera"}},
		Groups: []Member{{Name: "ops", Role: v1alpha1.TeamRoleOperator}},
	}
	crbs, rbs := Bindings(team, []string{"default", "kube-system", "kube-public", "kube-node-lease", "apps"})
	got := map[string][]string{}
	for _, b := range crbs {
		got[b.Name+"->"+b.RoleRef.Name] = names(b.Subjects)
	}
	want := map[string][]string{
		AdminsBinding + "->cluster-admin": {"User:butler:alice"},
		ViewersBinding + "->view": {"User:butler:vera", "User:butler:otto", "Group:butler:group:ops",
			"User:butler:alice:readonly", "User:butler:otto:readonly", "User:butler:vera:readonly",
			"Group:butler:group:ops:readonly", "Group:butler:platform-admins:readonly"},
		PlatformAdminsBinding + "->cluster-admin": {"Group:butler:platform-admins"},
	}
	for k, v := range want {
		if !slices.Equal(got[k], v) {
			t.Errorf("%s: %v, want %v", k, got[k], v)
		}
	}
	var nss []string
	for _, b := range rbs {
		nss = append(nss, b.Namespace)
		if b.RoleRef.Name != "edit" || !slices.Equal(names(b.Subjects), []string{"User:butler:otto", "Group:butler:group:ops"}) {
			t.Errorf("operators' RoleBinding in %s: %v -> %s", b.Namespace, names(b.Subjects), b.RoleRef.Name)
		}
	}
	if !slices.Equal(nss, []string{"default", "apps"}) {
		t.Errorf("operators get edit in %v, want default and apps only", nss)
	}
	crbs, _ = Bindings(Members{}, nil)
	if len(crbs[0].Subjects) != 0 {
		t.Errorf("a Team without admins binds %v", crbs[0].Subjects)
	}
}

func TestIdentityOf(t *testing.T) {
	team := Members{Users: []Member{{Name: "alice", Role: v1alpha1.TeamRoleViewer}}, Groups: []Member{{Name: "ops", Role: v1alpha1.TeamRoleAdmin}}}
	id, role, ok := IdentityOf(team, "alice", []string{"ops", "system:masters"}, false)
	if !ok || role != v1alpha1.TeamRoleAdmin || id.User != "butler:alice" || !slices.Equal(id.Groups, []string{"butler:group:ops"}) {
		t.Errorf("alice: %+v %s %v", id, role, ok)
	}
	if _, _, ok := IdentityOf(team, "bob", []string{"system:masters"}, false); ok {
		t.Error("bob is no member")
	}
}
