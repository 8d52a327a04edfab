package tenantcluster

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	listers "github.com/butlerdotdev/butler-apiserver/pkg/generated/listers/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/access"
)

// The access step applies the Team's bindings in the tenant, through the admin kubeconfig, and
// applies them again, without a removed member, once the Team changes.
func TestEnsureAccessFollowsTheTeam(t *testing.T) {
	ctx := context.Background()
	team := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: v1alpha1.TeamSpec{Access: v1alpha1.TeamAccess{
		Users: []v1alpha1.TeamMember{{Name: "alice", Role: v1alpha1.TeamRoleAdmin}, {Name: "otto", Role: v1alpha1.TeamRoleOperator}}}}}
	teams := indexer(team)
	rules := []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}
	// view and edit as kube-apiserver creates them: aggregated, empty until the tenant's
	// kube-controller-manager fills them in.
	aggregated := func(name string) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, AggregationRule: &rbacv1.AggregationRule{}}
	}
	tenant := kubefake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"}, Rules: rules},
		aggregated("view"), aggregated("edit"))
	mgmt := kubefake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prod-admin-kubeconfig", Namespace: "tenant-ns"},
		Data: map[string][]byte{"admin.conf": []byte("kubeconfig")}})
	c := &Controller{kube: mgmt, teams: listers.NewTeamLister(teams),
		access:          accessApplied{digest: map[string]string{}, granted: map[string]string{}, clients: map[string]tenantClient{}},
		newTenantClient: func([]byte) (kubernetes.Interface, error) { return tenant, nil }}
	tc := &v1alpha1.TenantCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "team-a", UID: "uid-1"}}
	s := &state{tc: tc, namespace: "tenant-ns"}

	if r, err := c.ensureAccess(ctx, s); err != nil || r.Done {
		t.Fatalf("before the control plane: %+v, %v", r, err)
	}
	s.kubeconfigSecret = "prod-admin-kubeconfig"
	subjects := func(crb string) []string {
		b, err := tenant.RbacV1().ClusterRoleBindings().Get(ctx, crb, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range b.Subjects {
			out = append(out, s.Name)
		}
		return out
	}
	// The bindings are there, but view and edit grant nothing yet: not done, and looked at again.
	if r, err := c.ensureAccess(ctx, s); err != nil || r.Done || r.Reason != "WaitingForRoles" || s.recheckAfter == 0 {
		t.Fatalf("before view and edit are aggregated: %+v, %v (recheck after %s)", r, err, s.recheckAfter)
	}
	// Looked at again while it waits: the bindings are not applied again, only the roles read.
	before := len(tenant.Actions())
	if r, err := c.ensureAccess(ctx, s); err != nil || r.Done || r.Reason != "WaitingForRoles" {
		t.Fatalf("again before view and edit are aggregated: %+v, %v", r, err)
	}
	for _, a := range tenant.Actions()[before:] {
		if a.GetVerb() != "list" && a.GetVerb() != "get" {
			t.Errorf("a look while waiting for the roles sent %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	for _, name := range []string{"view", "edit"} {
		role := aggregated(name)
		role.Rules = rules
		if _, err := tenant.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := c.ensureAccess(ctx, s); err != nil || !r.Done {
		t.Fatalf("first: %+v, %v", r, err)
	}
	if got := subjects(access.AdminsBinding); !slices.Equal(got, []string{"butler:alice"}) {
		t.Errorf("admins %v", got)
	}
	if _, err := tenant.RbacV1().RoleBindings("default").Get(ctx, access.OperatorsBinding, metav1.GetOptions{}); err != nil {
		t.Errorf("operators' RoleBinding in default: %v", err)
	}
	if _, err := tenant.RbacV1().RoleBindings("kube-system").Get(ctx, access.OperatorsBinding, metav1.GetOptions{}); err == nil {
		t.Error("operators' RoleBinding in kube-system")
	}

	// Nothing changed: nothing is applied again (the digest is of the bindings' values).
	before = len(tenant.Actions())
	if r, err := c.ensureAccess(ctx, s); err != nil || !r.Done {
		t.Fatalf("again: %+v, %v", r, err)
	}
	for _, a := range tenant.Actions()[before:] {
		if a.GetVerb() != "list" {
			t.Errorf("a reconcile that changes nothing sent %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}

	// otto leaves: the operators' binding no longer names him.
	changed := team.DeepCopy()
	changed.Spec.Access.Users = changed.Spec.Access.Users[:1]
	if err := teams.Update(changed); err != nil {
		t.Fatal(err)
	}
	if r, err := c.ensureAccess(ctx, s); err != nil || !r.Done {
		t.Fatalf("after the change: %+v, %v", r, err)
	}
	rb, err := tenant.RbacV1().RoleBindings("default").Get(ctx, access.OperatorsBinding, metav1.GetOptions{})
	if err != nil || len(rb.Subjects) != 0 {
		t.Errorf("operators after otto left: %v, %v", rb, err)
	}
	if got := subjects(access.ViewersBinding); slices.Contains(got, "butler:otto") || slices.Contains(got, "butler:otto:readonly") {
		t.Errorf("viewers still name otto: %v", got)
	}
}
