package tenantcluster

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	listers "github.com/butlerdotdev/butler-apiserver/pkg/generated/listers/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/access"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
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
		access:          accessApplied{digest: map[string]string{}, granted: map[string]grant{}, clients: map[string]tenantClient{}},
		newTenantClient: func([]byte) (kubernetes.Interface, error) { return tenant, nil }, clock: clock.RealClock{}}
	tc := &v1alpha1.TenantCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "team-a", UID: "uid-1"}}
	s := &state{tc: tc, namespace: "tenant-ns"}

	if r, err := c.ensureAccess(ctx, s); err != nil || r.Done {
		t.Fatalf("before the control plane: %+v, %v", r, err)
	}
	s.kubeconfigSecret = "prod-admin-kubeconfig"
	subjects := func(crb string) []string { return subjectsOf(t, tenant, crb) }
	// The bindings are there, but view, edit and butler:operator grant nothing yet: not done, and
	// looked at again.
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
	for _, name := range []string{"view", "edit", access.OperatorRole} {
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
	// The policy keeping the API's endpoint from operators (and its binding) went in before any
	// binding gave an operator a right.
	applied := map[string]int{}
	for i, a := range tenant.Actions() {
		if _, seen := applied[a.GetResource().Resource]; !seen && a.GetVerb() == "patch" {
			applied[a.GetResource().Resource] = i
		}
	}
	policy, okPolicy := applied["validatingadmissionpolicies"]
	binding, okBinding := applied["validatingadmissionpolicybindings"]
	if !okPolicy || !okBinding || policy > applied["rolebindings"] || binding > applied["rolebindings"] || binding > applied["clusterrolebindings"] {
		t.Errorf("applied first (by resource): %v; want the API endpoint's policy and binding before any binding", applied)
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
	// No operator left: the binding goes (applied with no subjects it would own none, and a
	// subject a tenant admin added would stay).
	if rb, err := tenant.RbacV1().RoleBindings("default").Get(ctx, access.OperatorsBinding, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("operators after otto left: %v, %v; want none", rb, err)
	}
	if got := subjects(access.ViewersBinding); slices.Contains(got, "butler:otto") || slices.Contains(got, "butler:otto:readonly") {
		t.Errorf("viewers still name otto: %v", got)
	}
}

// Whatever a restore puts back of the tenant's bindings (the local provider keeps those of now;
// another provider may restore the snapshot's, a member removed since bound again), the access
// step applies the Team's bindings again after it rather than take them as still applied.
func TestEnsureAccessAfterAnInPlaceRestore(t *testing.T) {
	ctx := context.Background()
	team := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: v1alpha1.TeamSpec{Access: v1alpha1.TeamAccess{
		Users: []v1alpha1.TeamMember{{Name: "alice", Role: v1alpha1.TeamRoleAdmin}, {Name: "otto", Role: v1alpha1.TeamRoleAdmin}}}}}
	teams := indexer(team)
	clock := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	c, tenant := accessFixture(t, teams, "tenant-ns", &clock)
	tc := &v1alpha1.TenantCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "team-a", UID: "uid-1"}}
	s := &state{tc: tc, namespace: "tenant-ns", kubeconfigSecret: "prod-admin-kubeconfig"}
	admins := func() []string { return subjectsOf(t, tenant, access.AdminsBinding) }
	ensure := func(what string) {
		t.Helper()
		if r, err := c.ensureAccess(ctx, s); err != nil || !r.Done {
			t.Fatalf("%s: %+v, %v", what, r, err)
		}
	}
	ensure("first")
	snapshot, err := tenant.RbacV1().ClusterRoleBindings().Get(ctx, access.AdminsBinding, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	changed := team.DeepCopy()
	changed.Spec.Access.Users = changed.Spec.Access.Users[:1]
	if err := teams.Update(changed); err != nil {
		t.Fatal(err)
	}
	ensure("after otto left")
	if got := admins(); !slices.Equal(got, []string{"butler:alice"}) {
		t.Fatalf("admins after otto left: %v", got)
	}

	// The restore: the tenant's data, its bindings too, as they were at the snapshot.
	restore := func(uid string, at time.Time) {
		t.Helper()
		old := snapshot.DeepCopy()
		old.ResourceVersion = ""
		if _, err := tenant.RbacV1().ClusterRoleBindings().Update(ctx, old, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		tc.Status.Restore = &v1alpha1.RestoreStatus{SnapshotName: "prod-0900", SnapshotUID: uid, InPlace: true,
			Phase: v1alpha1.RestoreSucceeded, CompletionTime: &metav1.Time{Time: at}}
	}
	restore("snap-1", time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
	ensure("after the restore")
	if got := admins(); !slices.Equal(got, []string{"butler:alice"}) {
		t.Errorf("after an in-place restore the tenant binds %v as admins, want only butler:alice", got)
	}
	// The same snapshot restored again later is another restore.
	restore("snap-1", time.Date(2026, 11, 26, 11, 0, 0, 0, time.UTC))
	ensure("after the second restore")
	if got := admins(); !slices.Equal(got, []string{"butler:alice"}) {
		t.Errorf("after a second restore of the same snapshot the tenant binds %v as admins, want only butler:alice", got)
	}

	// A control plane that starts again may serve other data: once the control plane step forgets
	// what was applied, the bindings are applied again whatever the tenant holds.
	if err := tenant.RbacV1().ClusterRoleBindings().Delete(ctx, access.AdminsBinding, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.forgetBindings(string(tc.UID))
	ensure("after the control plane started again")
	if got := admins(); !slices.Equal(got, []string{"butler:alice"}) {
		t.Errorf("after a restart the tenant binds %v as admins, want butler:alice", got)
	}

	// Edited inside the tenant by its admin: put right within accessResync, and the cluster is
	// brought back for it.
	edited := snapshot.DeepCopy()
	edited.ResourceVersion = ""
	if _, err := tenant.RbacV1().ClusterRoleBindings().Update(ctx, edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(accessResync / 2)
	s.recheckAfter = 0
	before := len(tenant.Actions())
	ensure("half a resync later")
	for _, a := range tenant.Actions()[before:] {
		if a.GetVerb() != "list" {
			t.Errorf("half a resync after the bindings were granted the access step sent %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	if s.recheckAfter <= 0 || s.recheckAfter > accessResync/2 {
		t.Errorf("a granted cluster is brought back after %s, want within %s", s.recheckAfter, accessResync/2)
	}
	clock = clock.Add(accessResync / 2)
	ensure("a resync later")
	if got := admins(); !slices.Equal(got, []string{"butler:alice"}) {
		t.Errorf("a resync after a tenant admin's edit the tenant binds %v as admins, want butler:alice", got)
	}
}

// A step's error ends the run: the Team's bindings come before the steps that can keep failing
// on what users write (workers, addons), so a member removed from the Team is unbound whatever
// they do; and a failure to apply them waits and tries again rather than end the run, so the
// workers and addons after it are not held by the tenant's RBAC.
func TestAccessComesFirstAndItsFailureWaits(t *testing.T) {
	at := map[string]int{}
	for i, s := range (&Controller{}).steps() {
		at[s.Name] = i
	}
	if at[stepAccess] <= at[stepControlPlane] || at[stepAccess] > at[stepWorkers] || at[stepAccess] > at[stepAddons] {
		t.Errorf("plan order %v: team access must come right after the control plane, before workers and addons", at)
	}

	team := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: v1alpha1.TeamSpec{Access: v1alpha1.TeamAccess{
		Users: []v1alpha1.TeamMember{{Name: "alice", Role: v1alpha1.TeamRoleAdmin}}}}}
	now := time.Now()
	c, tenant := accessFixture(t, indexer(team), "tenant-ns", &now)
	tenant.PrependReactor("patch", "clusterrolebindings", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New(`failed calling webhook "rbac.example.com": no endpoints available`))
	})
	s := &state{tc: &v1alpha1.TenantCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "team-a", UID: "uid-1"}},
		namespace: "tenant-ns", kubeconfigSecret: "prod-admin-kubeconfig"}
	r, err := c.ensureAccess(context.Background(), s)
	if err != nil || r.Done || r.Reason != "AccessNotApplied" || !strings.Contains(r.Message, "no endpoints available") || s.recheckAfter != accessRetry {
		t.Errorf("a failed apply: %+v, %v, recheck after %s; want waiting, no error, a retry in %s", r, err, s.recheckAfter, accessRetry)
	}
}

// The policy keeping the API's endpoint from operators holds before any operator is bound: if it
// cannot be applied, no binding is, and the step waits. A tenant that does not serve the kind
// (before Kubernetes 1.30) is bound without it.
func TestAccessBindsNoOperatorBeforeTheAPIEndpointPolicy(t *testing.T) {
	team := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: v1alpha1.TeamSpec{Access: v1alpha1.TeamAccess{
		Users: []v1alpha1.TeamMember{{Name: "otto", Role: v1alpha1.TeamRoleOperator}}}}}
	for _, c := range []struct {
		name  string
		err   error
		bound bool
	}{
		{"refused", apierrors.NewInternalError(errors.New("etcdserver: request timed out")), false},
		{"not served", apierrors.NewNotFound(schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"}, ""), true},
	} {
		now := time.Now()
		c2, tenant := accessFixture(t, indexer(team), "tenant-ns", &now)
		tenant.PrependReactor("patch", "validatingadmissionpolicies", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, c.err
		})
		s := &state{tc: &v1alpha1.TenantCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "team-a", UID: "uid-1"}},
			namespace: "tenant-ns", kubeconfigSecret: "prod-admin-kubeconfig"}
		r, err := c2.ensureAccess(context.Background(), s)
		_, bindingErr := tenant.RbacV1().RoleBindings("default").Get(context.Background(), access.OperatorsBinding, metav1.GetOptions{})
		if err != nil || r.Done != c.bound || (bindingErr == nil) != c.bound {
			t.Errorf("%s: %+v, %v; operators' binding: %v; want bound %v", c.name, r, err, bindingErr, c.bound)
		}
	}
}

// A paused cluster keeps following its Team in the tenant (a member about to be removed cannot
// pause the cluster to stay bound, nor pause it and ask it to sleep); one whose control plane is
// not ready, or asleep, is left alone.
func TestAccessWhilePaused(t *testing.T) {
	ctx := context.Background()
	team := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: v1alpha1.TeamSpec{Access: v1alpha1.TeamAccess{
		Users: []v1alpha1.TeamMember{{Name: "alice", Role: v1alpha1.TeamRoleAdmin}}}}}
	tc := &v1alpha1.TenantCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "team-a", UID: "uid-1",
		Annotations: map[string]string{external.TenantClusterPausedAnnotation: "true"}}}
	now := time.Now()
	c, tenant := accessFixture(t, indexer(team), TenantNamespace(tc), &now,
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: access.AdminsBinding}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "butler:alice"}, {Kind: rbacv1.UserKind, Name: "butler:otto"}}})
	admins := func() []string { return subjectsOf(t, tenant, access.AdminsBinding) }

	if err := c.accessWhilePaused(ctx, tc); err != nil || len(tenant.Actions()) != 0 {
		t.Fatalf("no control plane yet: %v, %d requests to the tenant", err, len(tenant.Actions()))
	}
	tc.Status.KubeconfigSecretRef = &v1alpha1.LocalObjectReference{Name: "prod-admin-kubeconfig"}
	tc.Status.Conditions = []metav1.Condition{{Type: ConditionControlPlaneReady, Status: metav1.ConditionFalse, Reason: "Upgrading"}}
	if err := c.accessWhilePaused(ctx, tc); err != nil || len(tenant.Actions()) != 0 {
		t.Fatalf("control plane not ready: %v, %d requests to the tenant", err, len(tenant.Actions()))
	}
	tc.Status.Conditions = []metav1.Condition{{Type: ConditionControlPlaneReady, Status: metav1.ConditionTrue, Reason: "TenantControlPlaneReady"}}
	tc.Status.Phase = v1alpha1.TenantClusterHibernated
	if err := c.accessWhilePaused(ctx, tc); err != nil || len(tenant.Actions()) != 0 {
		t.Fatalf("asleep: %v, %d requests to the tenant", err, len(tenant.Actions()))
	}
	// Paused and asked to sleep in one update: the sleep is held back, the tenant serves, and
	// its bindings follow the Team.
	tc.Status.Phase = v1alpha1.TenantClusterReady
	tc.Spec.Hibernation = &v1alpha1.HibernationSpec{Hibernated: true}
	err := c.accessWhilePaused(ctx, tc)
	if !slices.Equal(admins(), []string{"butler:alice"}) {
		t.Errorf("paused: the tenant binds %v as admins, want only butler:alice", admins())
	}
	if err == nil || err.Error() != controllerkit.RequeueAfter(accessResync).Error() {
		t.Errorf("paused: %v, want the resync asked for", err)
	}
}

// accessFixture is a controller whose access step reaches tenant (view, edit and
// butler:operator aggregated),
// through the admin kubeconfig Secret prod-admin-kubeconfig in namespace ns, at the time *clock.
func accessFixture(t *testing.T, teams cache.Indexer, ns string, clock *time.Time, objects ...runtime.Object) (*Controller, *kubefake.Clientset) {
	rules := []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}
	tenant := kubefake.NewClientset(append([]runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"}, Rules: rules},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "view"}, Rules: rules},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "edit"}, Rules: rules},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: access.OperatorRole}, Rules: rules}}, objects...)...)
	mgmt := kubefake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prod-admin-kubeconfig", Namespace: ns},
		Data: map[string][]byte{"admin.conf": []byte("kubeconfig")}})
	return &Controller{kube: mgmt, teams: listers.NewTeamLister(teams),
		access:          accessApplied{digest: map[string]string{}, granted: map[string]grant{}, clients: map[string]tenantClient{}},
		newTenantClient: func([]byte) (kubernetes.Interface, error) { return tenant, nil }, clock: controllerkit.ClockFunc(func() time.Time { return *clock })}, tenant
}

// subjectsOf names the subjects of the tenant's ClusterRoleBinding name.
func subjectsOf(t *testing.T, tenant kubernetes.Interface, name string) []string {
	t.Helper()
	b, err := tenant.RbacV1().ClusterRoleBindings().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range b.Subjects {
		out = append(out, s.Name)
	}
	return out
}

// Operators are bound to butler:operator in the namespaces that are not protected, none in the
// system ones, and lose the binding they had in a namespace labelled protected since; a binding to
// edit of before is replaced (its roleRef cannot change, kube-apiserver refuses the apply). The
// operators' ClusterRoles are applied in the tenant.
func TestOperatorsLeaveProtectedNamespaces(t *testing.T) {
	ctx := context.Background()
	team := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: v1alpha1.TeamSpec{Access: v1alpha1.TeamAccess{
		Users: []v1alpha1.TeamMember{{Name: "otto", Role: v1alpha1.TeamRoleOperator}}}}}
	operators := func(ns, role string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: access.OperatorsBinding, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "butler:otto"}}}
	}
	now := time.Now()
	c, tenant := accessFixture(t, indexer(team), "tenant-ns", &now,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system", Labels: map[string]string{external.ProtectedNamespaceLabel: "true"}}},
		operators("apps", "edit"), operators("flux-system", "edit"))
	tenant.PrependReactor("patch", "rolebindings", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		old, err := tenant.Tracker().Get(rbacv1.SchemeGroupVersion.WithResource("rolebindings"), p.GetNamespace(), p.GetName())
		var applied rbacv1.RoleBinding
		if err != nil || json.Unmarshal(p.GetPatch(), &applied) != nil || old.(*rbacv1.RoleBinding).RoleRef == applied.RoleRef {
			return false, nil, nil
		}
		return true, nil, apierrors.NewInvalid(rbacv1.SchemeGroupVersion.WithKind("RoleBinding").GroupKind(), p.GetName(),
			field.ErrorList{field.Invalid(field.NewPath("roleRef"), applied.RoleRef, "cannot change roleRef")})
	})
	s := &state{tc: &v1alpha1.TenantCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "team-a", UID: "uid-1"}},
		namespace: "tenant-ns", kubeconfigSecret: "prod-admin-kubeconfig"}
	if r, err := c.ensureAccess(ctx, s); err != nil || !r.Done {
		t.Fatalf("%+v, %v", r, err)
	}
	for ns, want := range map[string]string{"default": access.OperatorRole, "apps": access.OperatorRole, "flux-system": "", "kube-system": ""} {
		rb, err := tenant.RbacV1().RoleBindings(ns).Get(ctx, access.OperatorsBinding, metav1.GetOptions{})
		switch {
		case want == "" && !apierrors.IsNotFound(err):
			t.Errorf("operators in %s: %v, %v; want none", ns, rb, err)
		case want != "" && (err != nil || rb.RoleRef.Name != want || len(rb.Subjects) != 1):
			t.Errorf("operators in %s: %v, %v; want otto bound to %s", ns, rb, err, want)
		}
	}
	for _, want := range access.ClusterRoles() {
		got, err := tenant.RbacV1().ClusterRoles().Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("ClusterRole %s: %v", want.Name, err)
			continue
		}
		if !equality.Semantic.DeepEqual(got.AggregationRule, want.AggregationRule) ||
			(len(want.Rules) > 0 && !equality.Semantic.DeepEqual(got.Rules, want.Rules)) {
			t.Errorf("ClusterRole %s in the tenant: %+v, want %+v", want.Name, got, want)
		}
	}
}

// The policy names the ClusterIP the tenant's kube-apiserver gives default/kubernetes: the
// first address of the cluster's service CIDR, the API's default when none is set.
func TestAPIClusterIP(t *testing.T) {
	for cidr, want := range map[string]string{"": "10.96.0.1", "10.100.0.0/16": "10.100.0.1", "172.20.64.0/18": "172.20.64.1", "fd00:10:96::/108": "fd00:10:96::1"} {
		tc := &v1alpha1.TenantCluster{Spec: v1alpha1.TenantClusterSpec{Networking: v1alpha1.NetworkingSpec{ServiceCIDR: cidr}}}
		if got, err := apiClusterIP(tc); err != nil || got.String() != want {
			t.Errorf("service CIDR %q: %v, %v; want %s", cidr, got, err, want)
		}
	}
}
