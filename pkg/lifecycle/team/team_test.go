package team

import (
	"context"
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	butlerfake "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned/fake"
	butlerinformers "github.com/butlerdotdev/butler-apiserver/pkg/generated/informers/externalversions"
	"github.com/butlerdotdev/butler-apiserver/pkg/quota"
)

// fixture runs a TeamController on fake clientsets.
type fixture struct {
	butler *butlerfake.Clientset
	kube   *kubefake.Clientset
}

func start(t *testing.T, objs ...*v1alpha1.Team) *fixture {
	t.Helper()
	f := &fixture{butler: butlerfake.NewSimpleClientset(), kube: kubefake.NewClientset()}
	for _, o := range objs {
		if _, err := f.butler.ButlerV1alpha1().Teams().Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := newStarted(ctx, t, f.butler, f.kube)
	go c.Run(ctx)
	return f
}

// newStarted builds the controller on informers of the fake clientsets and starts them.
func newStarted(ctx context.Context, t *testing.T, bc *butlerfake.Clientset, kube *kubefake.Clientset) *Controller {
	t.Helper()
	bf := butlerinformers.NewSharedInformerFactory(bc, 0)
	kf := informers.NewSharedInformerFactory(kube, 0)
	b := bf.Butler().V1alpha1()
	c, err := NewController(bc, kube, b.Teams(), b.TenantClusters(), b.ButlerConfigs(), RBACInformers{
		Namespaces: kf.Core().V1().Namespaces(), RoleBindings: kf.Rbac().V1().RoleBindings(),
		ClusterRoles: kf.Rbac().V1().ClusterRoles(), ClusterRoleBindings: kf.Rbac().V1().ClusterRoleBindings(),
	})
	if err != nil {
		t.Fatal(err)
	}
	bf.Start(ctx.Done())
	kf.Start(ctx.Done())
	return c
}

// markDeleted marks the Team deleted as the API server would (the fake clientset does not
// implement finalizers) and returns it. The fake's status writes replace the whole object, so
// the controller's status write racing the mark (the cluster just created wakes it) can drop it:
// called until a condition holds, it sets the mark again whenever it is gone.
func (f *fixture) markDeleted(ctx context.Context, t *testing.T, name string) *v1alpha1.Team {
	t.Helper()
	tm, err := f.butler.ButlerV1alpha1().Teams().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tm.DeletionTimestamp == nil {
		tm.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		if tm, err = f.butler.ButlerV1alpha1().Teams().Update(ctx, tm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return tm
}

func (f *fixture) eventually(t *testing.T, what string, cond func(ctx context.Context) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true,
		func(ctx context.Context) (bool, error) { return cond(ctx), nil })
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func (f *fixture) subjects(ctx context.Context, ns, binding string) []string {
	rb, err := f.kube.RbacV1().RoleBindings(ns).Get(ctx, binding, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range rb.Subjects {
		out = append(out, s.Kind+":"+s.Name)
	}
	return out
}

// readers returns the subjects of the Team's reader ClusterRoleBinding, after checking that its
// ClusterRole grants reading that one Team only.
func (f *fixture) readers(ctx context.Context, team string) []string {
	role, err := f.kube.RbacV1().ClusterRoles().Get(ctx, TeamReaderName(team), metav1.GetOptions{})
	if err != nil || len(role.Rules) != 1 || !slices.Equal(role.Rules[0].ResourceNames, []string{team}) ||
		!slices.Equal(role.Rules[0].Resources, []string{"teams"}) || !slices.Equal(role.Rules[0].Verbs, []string{"get", "list", "watch"}) {
		return nil
	}
	rb, err := f.kube.RbacV1().ClusterRoleBindings().Get(ctx, TeamReaderName(team), metav1.GetOptions{})
	if err != nil || rb.RoleRef.Name != role.Name {
		return nil
	}
	var out []string
	for _, s := range rb.Subjects {
		out = append(out, s.Kind+":"+s.Name)
	}
	return out
}

func TestTeamNamespaceBindingsAndStatus(t *testing.T) {
	team := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Generation: 1}, Spec: v1alpha1.TeamSpec{
		Access: v1alpha1.TeamAccess{
			Users:  []v1alpha1.TeamMember{{Name: "alice", Role: "admin"}, {Name: "bob", Role: "member"}, {Name: "carol", Role: "viewer"}},
			Groups: []v1alpha1.TeamMember{{Name: "payments", Role: "viewer"}},
		},
		ResourceLimits: &v1alpha1.ResourceLimits{MaxClusters: ptr.To[int32](2)},
	}}
	f := start(t, team)
	f.eventually(t, "namespace, bindings and Ready status", func(ctx context.Context) bool {
		tm, err := f.butler.ButlerV1alpha1().Teams().Get(ctx, "team-a", metav1.GetOptions{})
		return err == nil && tm.Status.Phase == v1alpha1.TeamPhaseReady
	})
	ctx := context.Background()
	ns, err := f.kube.CoreV1().Namespaces().Get(ctx, "team-a", metav1.GetOptions{})
	if err != nil || ns.Labels[TeamLabel] != "team-a" || ns.Annotations[CreatedNamespaceAnnotation] != "true" {
		t.Fatalf("namespace: %v %+v", err, ns)
	}
	for binding, want := range map[string][]string{
		"butler-team-admin":    {"User:alice"},
		"butler-team-operator": {"User:bob"},
		"butler-team-viewer":   {"Group:payments", "User:carol"},
	} {
		if got := f.subjects(ctx, "team-a", binding); !slices.Equal(got, want) {
			t.Errorf("%s: subjects %v, want %v", binding, got, want)
		}
	}
	rb, _ := f.kube.RbacV1().RoleBindings("team-a").Get(ctx, "butler-team-viewer", metav1.GetOptions{})
	if rb.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "butler-viewer"}) {
		t.Errorf("viewer roleRef %+v", rb.RoleRef)
	}
	tm, _ := f.butler.ButlerV1alpha1().Teams().Get(ctx, "team-a", metav1.GetOptions{})
	if tm.Status.Namespace != "team-a" || tm.Status.MemberCount != 4 || tm.Status.QuotaStatus != "OK" || !slices.Contains(tm.Finalizers, TeamFinalizer) {
		t.Errorf("status %+v finalizers %v", tm.Status, tm.Finalizers)
	}

	// Clusters count in the status.
	for _, n := range []string{"one", "two"} {
		tc := &v1alpha1.TenantCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: n},
			Spec: v1alpha1.TenantClusterSpec{Workers: v1alpha1.WorkersSpec{Replicas: 2}}}
		if _, err := f.butler.ButlerV1alpha1().TenantClusters("team-a").Create(ctx, tc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.eventually(t, "usage in status", func(ctx context.Context) bool {
		tm, _ := f.butler.ButlerV1alpha1().Teams().Get(ctx, "team-a", metav1.GetOptions{})
		return tm.Status.ClusterCount == 2 && tm.Status.ResourceUsage != nil && tm.Status.ResourceUsage.Nodes == 4 &&
			tm.Status.ResourceUsage.CPU.String() == "16" && tm.Status.QuotaStatus == "Warning"
	})

	// Removing bob removes the operator binding; moving carol to admin moves her.
	tm, _ = f.butler.ButlerV1alpha1().Teams().Get(ctx, "team-a", metav1.GetOptions{})
	tm.Spec.Access.Users = []v1alpha1.TeamMember{{Name: "alice", Role: "admin"}, {Name: "carol", Role: "admin"}}
	tm.Generation++
	if _, err := f.butler.ButlerV1alpha1().Teams().Update(ctx, tm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually(t, "bindings follow the members", func(ctx context.Context) bool {
		_, err := f.kube.RbacV1().RoleBindings("team-a").Get(ctx, "butler-team-operator", metav1.GetOptions{})
		return apierrors.IsNotFound(err) && slices.Equal(f.subjects(ctx, "team-a", "butler-team-admin"), []string{"User:alice", "User:carol"}) &&
			slices.Equal(f.subjects(ctx, "team-a", "butler-team-viewer"), []string{"Group:payments"}) &&
			slices.Equal(f.readers(ctx, "team-a"), []string{"Group:payments", "User:alice", "User:carol"})
	})

	// A binding edited by hand is put back.
	rb, _ = f.kube.RbacV1().RoleBindings("team-a").Get(ctx, "butler-team-admin", metav1.GetOptions{})
	rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: "mallory"})
	if _, err := f.kube.RbacV1().RoleBindings("team-a").Update(ctx, rb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually(t, "a hand-edited binding is restored", func(ctx context.Context) bool {
		return slices.Equal(f.subjects(ctx, "team-a", "butler-team-admin"), []string{"User:alice", "User:carol"})
	})
}

func TestTeamDeletionWaitsForClustersThenCleansUp(t *testing.T) {
	team := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: "team-d"}, Spec: v1alpha1.TeamSpec{
		Access: v1alpha1.TeamAccess{Users: []v1alpha1.TeamMember{{Name: "dan", Role: "admin"}}}}}
	f := start(t, team)
	ctx := context.Background()
	f.eventually(t, "Ready", func(ctx context.Context) bool {
		tm, err := f.butler.ButlerV1alpha1().Teams().Get(ctx, "team-d", metav1.GetOptions{})
		return err == nil && tm.Status.Phase == v1alpha1.TeamPhaseReady
	})
	if got := f.readers(ctx, "team-d"); !slices.Equal(got, []string{"User:dan"}) {
		t.Errorf("team-d readers: %v", got)
	}
	tc := &v1alpha1.TenantCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-d", Name: "last"}}
	if _, err := f.butler.ButlerV1alpha1().TenantClusters("team-d").Create(ctx, tc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually(t, "cleanup held back by the cluster", func(ctx context.Context) bool {
		tm := f.markDeleted(ctx, t, "team-d")
		for _, c := range tm.Status.Conditions {
			if c.Type == conditionReady && c.Reason == "ClustersRemain" {
				return tm.Status.Phase == v1alpha1.TeamPhaseTerminating
			}
		}
		return false
	})
	if _, err := f.kube.CoreV1().Namespaces().Get(ctx, "team-d", metav1.GetOptions{}); err != nil {
		t.Fatalf("the namespace went while it held a cluster: %v", err)
	}
	if err := f.butler.ButlerV1alpha1().TenantClusters("team-d").Delete(ctx, "last", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually(t, "namespace, bindings and finalizer gone", func(ctx context.Context) bool {
		_, nsErr := f.kube.CoreV1().Namespaces().Get(ctx, "team-d", metav1.GetOptions{})
		rbs, _ := f.kube.RbacV1().RoleBindings("team-d").List(ctx, metav1.ListOptions{})
		_, roleErr := f.kube.RbacV1().ClusterRoles().Get(ctx, TeamReaderName("team-d"), metav1.GetOptions{})
		_, crbErr := f.kube.RbacV1().ClusterRoleBindings().Get(ctx, TeamReaderName("team-d"), metav1.GetOptions{})
		tm, err := f.butler.ButlerV1alpha1().Teams().Get(ctx, "team-d", metav1.GetOptions{})
		return apierrors.IsNotFound(nsErr) && len(rbs.Items) == 0 && apierrors.IsNotFound(roleErr) && apierrors.IsNotFound(crbErr) &&
			err == nil && !slices.Contains(tm.Finalizers, TeamFinalizer)
	})
}

func TestOnlyLedgerChanged(t *testing.T) {
	base := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: "t", ResourceVersion: "1", Annotations: map[string]string{"keep": "x"}}}
	reserved := base.DeepCopy()
	reserved.ResourceVersion = "2"
	reserved.Annotations[quota.ReservationsAnnotation] = `[{"key":"t/a"}]`
	if !onlyLedgerChanged(base, reserved) {
		t.Error("a reservation written by the Ledger wakes the worker")
	}
	spec := reserved.DeepCopy()
	spec.Spec.DisplayName = "changed"
	if onlyLedgerChanged(base, spec) {
		t.Error("a spec change along with a reservation is ignored")
	}
	deleting := reserved.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	if onlyLedgerChanged(base, deleting) {
		t.Error("a deletion along with a reservation is ignored")
	}
	status := base.DeepCopy()
	status.ResourceVersion = "3"
	status.Status.ClusterCount = 4
	if onlyLedgerChanged(base, status) {
		t.Error("an update without a reservation change is ignored")
	}
}
