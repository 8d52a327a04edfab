package addons

import (
	"strings"
	"testing"
)

// checkCase is a manifest the allow-list must refuse naming want, or allow when want is "".
type checkCase struct{ name, manifest, want string }

func runCheckCases(t *testing.T, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		problems, err := newPrivilegeCheck("apps", nil).manifest([]byte(tc.manifest))
		got := strings.Join(problems, "; ")
		if err != nil {
			got = err.Error()
		}
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

const rbacV1 = "apiVersion: rbac.authorization.k8s.io/v1\n"

// TestAttackAggregatedRole: a chart's ClusterRole labelled to aggregate into view, edit, admin
// or butler:operator has its rules merged into roles viewers and operators hold cluster-wide.
func TestAttackAggregatedRole(t *testing.T) {
	rules := "rules: [{apiGroups: [''], resources: [pods], verbs: [get]}]\n"
	var cases []checkCase
	for _, label := range []string{"rbac.authorization.k8s.io/aggregate-to-view", "rbac.authorization.k8s.io/aggregate-to-edit",
		"rbac.authorization.k8s.io/aggregate-to-admin", "butler.butlerlabs.dev/aggregate-to-operator"} {
		cases = append(cases, checkCase{label, rbacV1 + "kind: ClusterRole\nmetadata: {name: r, labels: {'" + label + "': 'true'}}\n" + rules,
			"ClusterRole r aggregates into other roles (label " + label + ")"})
	}
	cases = append(cases, checkCase{"plain label", rbacV1 + "kind: ClusterRole\nmetadata: {name: r, labels: {app: x}}\n" + rules, ""})
	runCheckCases(t, cases)
}

// TestAttackWildcardSubresource: RBAC matches "*/proxy" to nodes/proxy and "*/token" to
// serviceaccounts/token.
func TestAttackWildcardSubresource(t *testing.T) {
	runCheckCases(t, []checkCase{
		{"*/proxy", rbacV1 + "kind: ClusterRole\nmetadata: {name: r}\nrules: [{apiGroups: [''], resources: ['*/proxy'], verbs: [get]}]", "ClusterRole r grants nodes/proxy (as \"*/proxy\")"},
		{"*/token", rbacV1 + "kind: Role\nmetadata: {name: r}\nrules: [{apiGroups: [''], resources: ['*/token'], verbs: [create]}]", "Role apps/r grants serviceaccounts/token (as \"*/token\")"},
	})
}

// TestAttackClusterWideExec: a read-only role with pods/exec (get suffices to exec over a
// websocket on older tenants) or a proxy subresource, bound cluster-wide, reaches kube-system.
func TestAttackClusterWideExec(t *testing.T) {
	var cases []checkCase
	for _, res := range []string{"pods/exec", "pods/attach", "pods/portforward", "pods/proxy", "services/proxy", "*/exec"} {
		m := rbacV1 + "kind: ClusterRole\nmetadata: {name: r}\nrules: [{apiGroups: [''], resources: ['" + res + "'], verbs: [get]}]\n---\n" +
			rbacV1 + "kind: ClusterRoleBinding\nmetadata: {name: c}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: r}\n"
		cases = append(cases, checkCase{res, m, "ClusterRoleBinding c binds ClusterRole r in every namespace, and it grants "})
		ns := strings.Replace(m, "kind: ClusterRoleBinding", "kind: RoleBinding", 1)
		cases = append(cases, checkCase{res + " in a namespace", ns, ""})
	}
	runCheckCases(t, cases)
}
