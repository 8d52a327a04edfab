package access

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

func names(subjects []rbacv1.Subject) []string {
	var out []string
	for _, s := range subjects {
		out = append(out, s.Kind+":"+s.Name)
	}
	return out
}

// Each role is bound where it belongs: admins to cluster-admin, operators to butler:operator in
// each namespace but the protected ones (and view), viewers and every read-only identity to
// view and butler:node-viewer; a role nobody has, and the operators in a protected namespace, still get a binding,
// empty, so a removal is applied.
func TestBindings(t *testing.T) {
	team := Members{
		Users:  []Member{{Name: "alice", Role: v1alpha1.TeamRoleAdmin}, {Name: "otto", Role: v1alpha1.TeamRoleMember}, {Name: "vera"}},
		Groups: []Member{{Name: "ops", Role: v1alpha1.TeamRoleOperator}},
	}
	var namespaces []Namespace
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease", "apps", "flux-system"} {
		var labels map[string]string
		if ns == "flux-system" {
			labels = map[string]string{external.ProtectedNamespaceLabel: "true"}
		}
		namespaces = append(namespaces, Namespace{Name: ns, Protected: Protected(ns, labels)})
	}
	crbs, rbs := Bindings(team, namespaces)
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
	want[NodeViewersBinding+"->"+NodeViewerRole] = want[ViewersBinding+"->view"]
	for k, v := range want {
		if !slices.Equal(got[k], v) {
			t.Errorf("%s: %v, want %v", k, got[k], v)
		}
	}
	var bound []string
	for _, b := range rbs {
		if b.RoleRef.Name != OperatorRole {
			t.Errorf("operators' RoleBinding in %s refers to %s", b.Namespace, b.RoleRef.Name)
		}
		if len(b.Subjects) > 0 {
			bound = append(bound, b.Namespace)
			if !slices.Equal(names(b.Subjects), []string{"User:butler:otto", "Group:butler:group:ops"}) {
				t.Errorf("operators' RoleBinding in %s: %v", b.Namespace, names(b.Subjects))
			}
		}
	}
	if len(rbs) != 3 || !slices.Equal(bound, []string{"default", "apps"}) {
		t.Errorf("operators are bound in %v of %d bindings, want default and apps, and flux-system's empty", bound, len(rbs))
	}
	crbs, _ = Bindings(Members{}, nil)
	if len(crbs[0].Subjects) != 0 {
		t.Errorf("a Team without admins binds %v", crbs[0].Subjects)
	}
}

// Whoever views reads Nodes and nothing more of them: not the kubelet's API (nodes/proxy: exec,
// logs, every Pod's spec), not a write.
func TestNodeViewerRole(t *testing.T) {
	var role *rbacv1.ClusterRole
	for _, r := range ClusterRoles() {
		if r.Name == NodeViewerRole {
			role = r
		}
	}
	if role == nil || role.AggregationRule != nil {
		t.Fatalf("no ClusterRole %s with rules of its own: %+v", NodeViewerRole, role)
	}
	for _, verb := range []string{"get", "list", "watch"} {
		if !allows(role.Rules, verb, "", "nodes") {
			t.Errorf("%s may not %s nodes", NodeViewerRole, verb)
		}
	}
	for _, denied := range [][2]string{{"get", "nodes/proxy"}, {"create", "nodes/proxy"}, {"update", "nodes"}, {"patch", "nodes/status"},
		{"delete", "nodes"}, {"get", "secrets"}, {"get", "pods"}} {
		if allows(role.Rules, denied[0], "", denied[1]) {
			t.Errorf("%s may %s %s", NodeViewerRole, denied[0], denied[1])
		}
	}
}

// allows says whether rules let verb on group/resource.
func allows(rules []rbacv1.PolicyRule, verb, group, resource string) bool {
	for _, r := range rules {
		if (slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, "*")) &&
			(slices.Contains(r.APIGroups, group) || slices.Contains(r.APIGroups, "*")) &&
			(slices.Contains(r.Resources, resource) || slices.Contains(r.Resources, "*")) {
			return true
		}
	}
	return false
}

// An operator edits workloads but acts as no one else and changes neither namespaces (their
// protection label) nor RBAC: the rules hold no impersonate and nothing cluster-wide, and the
// aggregation takes edit's additions but Kubernetes' own edit rules (which impersonate).
func TestOperatorRole(t *testing.T) {
	rules := OperatorRules()
	for _, r := range rules {
		if slices.Contains(r.Verbs, "impersonate") || slices.Contains(r.Verbs, "*") || slices.Contains(r.APIGroups, "*") || slices.Contains(r.Resources, "*") {
			t.Errorf("rule %+v", r)
		}
	}
	for _, denied := range [][3]string{
		{"impersonate", "", "serviceaccounts"}, {"impersonate", "", "users"}, {"impersonate", "", "groups"},
		{"impersonate", "authentication.k8s.io", "uids"}, {"impersonate", "authentication.k8s.io", "userextras"},
		{"update", "", "namespaces"}, {"patch", "", "namespaces"}, {"create", "", "namespaces"},
		{"create", "rbac.authorization.k8s.io", "rolebindings"}, {"escalate", "rbac.authorization.k8s.io", "roles"},
		{"bind", "rbac.authorization.k8s.io", "clusterroles"}, {"update", "", "resourcequotas"}, {"update", "", "pods/status"},
	} {
		if allows(rules, denied[0], denied[1], denied[2]) {
			t.Errorf("operators may %s %s in group %q", denied[0], denied[2], denied[1])
		}
	}
	for _, allowed := range [][3]string{
		{"create", "apps", "deployments"}, {"delete", "", "pods"}, {"get", "", "secrets"}, {"create", "", "pods/exec"},
		{"create", "batch", "jobs"}, {"create", "networking.k8s.io", "ingresses"}, {"get", "coordination.k8s.io", "leases"},
	} {
		if !allows(rules, allowed[0], allowed[1], allowed[2]) {
			t.Errorf("operators may not %s %s in group %q", allowed[0], allowed[2], allowed[1])
		}
	}

	roles := ClusterRoles()
	base, aggregated := roles[0], roles[1]
	if base.Name != OperatorRulesRole || base.Labels[AggregateToOperatorLabel] != "true" || aggregated.Name != OperatorRole || len(aggregated.Rules) != 0 {
		t.Fatalf("roles %+v", roles)
	}
	selects := func(roleLabels map[string]string) bool {
		for _, sel := range aggregated.AggregationRule.ClusterRoleSelectors {
			s, err := metav1.LabelSelectorAsSelector(&sel)
			if err != nil {
				t.Fatal(err)
			}
			if s.Matches(labels.Set(roleLabels)) {
				return true
			}
		}
		return false
	}
	const toEdit, bootstrap = "rbac.authorization.k8s.io/aggregate-to-edit", "kubernetes.io/bootstrapping"
	for what, c := range map[string]struct {
		labels map[string]string
		want   bool
	}{
		"butler:aggregate-to-operator": {base.Labels, true},
		// flux-edit writes Kustomizations and HelmReleases, which Flux's controllers apply with
		// their own rights: aggregating it would make an operator as strong as Flux.
		"a CRD's edit rules not opted in (flux-edit)":     {map[string]string{toEdit: "true"}, false},
		"a CRD's edit rules opted in by its definition":   {map[string]string{AggregateToOperatorLabel: "true", toEdit: "true"}, true},
		"opted in with another value":                     {map[string]string{AggregateToOperatorLabel: "yes"}, false},
		"system:aggregate-to-edit (impersonate)":          {map[string]string{toEdit: "true", bootstrap: "rbac-defaults"}, false},
		"view (labelled to aggregate to edit)":            {map[string]string{toEdit: "true", bootstrap: "rbac-defaults"}, false},
		"system:aggregate-to-admin (roles, rolebindings)": {map[string]string{"rbac.authorization.k8s.io/aggregate-to-admin": "true", bootstrap: "rbac-defaults"}, false},
		"a CRD's admin rules":                             {map[string]string{"rbac.authorization.k8s.io/aggregate-to-admin": "true"}, false},
	} {
		if got := selects(c.labels); got != c.want {
			t.Errorf("butler:operator aggregates %s: %v, want %v", what, got, c.want)
		}
	}
}

// The system namespaces are protected whatever their labels; another by the label with the value
// "true" (as the addon check reads it).
func TestProtected(t *testing.T) {
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"kube-system", nil, true}, {"kube-public", nil, true}, {"kube-node-lease", nil, true},
		{"default", nil, false}, {"apps", map[string]string{"other": "true"}, false},
		{"flux-system", map[string]string{external.ProtectedNamespaceLabel: "true"}, true}, {"secrets", map[string]string{external.ProtectedNamespaceLabel: "yes"}, false},
		// A namespace where privileged Pods may run is no operator's: from a node's root they read every Pod's token there.
		{"csi", map[string]string{external.PodSecurityEnforceLabel: external.PodSecurityPrivileged}, true},
		{"web", map[string]string{external.PodSecurityEnforceLabel: "baseline"}, false},
	} {
		if got := Protected(c.name, c.labels); got != c.want {
			t.Errorf("Protected(%s, %v) = %v", c.name, c.labels, got)
		}
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
