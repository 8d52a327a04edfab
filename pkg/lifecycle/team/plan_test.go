package team

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	butlerfake "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned/fake"
)

// reconcileOnce builds the controller over kube, lets its caches sync, runs one Reconcile of
// the Team and returns what it returned and the Team as stored after it.
func reconcileOnce(t *testing.T, kube *kubefake.Clientset, team *v1alpha1.Team) (time.Duration, *v1alpha1.Team, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	team.Finalizers = []string{TeamFinalizer}
	bc := butlerfake.NewSimpleClientset(team)
	c := newStarted(ctx, t, bc, kube)
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		t.Fatal("caches did not sync")
	}
	after, rerr := c.Reconcile(ctx, team.Name)
	stored, err := bc.ButlerV1alpha1().Teams().Get(ctx, team.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return after, stored, rerr
}

func wantCondition(t *testing.T, team *v1alpha1.Team, typ string, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	c := meta.FindStatusCondition(team.Status.Conditions, typ)
	if c == nil || c.Status != status || c.Reason != reason || (message != "" && c.Message != message) {
		t.Errorf("condition %s = %+v, want %s %s %q", typ, c, status, reason, message)
	}
}

// While the Team's namespace terminates, the RoleBindings wait for it and the Team comes back
// to look again; the reader role, cluster-scoped, is made all the same.
func TestTeamWaitsForATerminatingNamespace(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-t", Labels: map[string]string{TeamLabel: "team-t"},
		DeletionTimestamp: &metav1.Time{Time: time.Now()}, Finalizers: []string{"kubernetes"}}}
	kube := kubefake.NewClientset(ns)
	team := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: "team-t", Generation: 2}, Spec: v1alpha1.TeamSpec{
		Access: v1alpha1.TeamAccess{Users: []v1alpha1.TeamMember{{Name: "tom", Role: "admin"}}}}}
	after, stored, err := reconcileOnce(t, kube, team)
	if err != nil || after != namespaceRecheck {
		t.Fatalf("Reconcile = %v, %v; want a recheck after %v", after, err, namespaceRecheck)
	}
	wantCondition(t, stored, conditionNamespaceReady, metav1.ConditionFalse, "Terminating", "namespace team-t is terminating")
	wantCondition(t, stored, conditionRBACReady, metav1.ConditionFalse, "Waiting", "waiting for the namespace")
	wantCondition(t, stored, conditionReady, metav1.ConditionFalse, "Pending", "")
	if stored.Status.Phase != v1alpha1.TeamPhasePending || stored.Status.ObservedGeneration != 2 {
		t.Errorf("phase %s observedGeneration %d", stored.Status.Phase, stored.Status.ObservedGeneration)
	}
	if rbs, _ := kube.RbacV1().RoleBindings("team-t").List(context.Background(), metav1.ListOptions{}); len(rbs.Items) != 0 {
		t.Errorf("RoleBindings made in a terminating namespace: %v", rbs.Items)
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Get(context.Background(), TeamReaderName("team-t"), metav1.GetOptions{}); err != nil {
		t.Errorf("the reader binding: %v", err)
	}
}

// A step's error is on that step's condition, with the error's own text, and is returned.
func TestTeamStepErrorOnItsCondition(t *testing.T) {
	kube := kubefake.NewClientset()
	kube.PrependReactor("create", "rolebindings", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is down")
	})
	team := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: "team-e"}, Spec: v1alpha1.TeamSpec{
		Access: v1alpha1.TeamAccess{Users: []v1alpha1.TeamMember{{Name: "eve", Role: "viewer"}}}}}
	_, stored, err := reconcileOnce(t, kube, team)
	if err == nil || err.Error() != "role bindings: etcd is down" {
		t.Fatalf("Reconcile = %v, want the role bindings step's error", err)
	}
	wantCondition(t, stored, conditionNamespaceReady, metav1.ConditionTrue, "Created", "namespace team-e")
	wantCondition(t, stored, conditionRBACReady, metav1.ConditionFalse, "Error", "etcd is down")
}
