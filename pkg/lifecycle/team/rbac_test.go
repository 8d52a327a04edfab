package team

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

// TestEnsureRBAC: created when missing; taken over (the informer has none) with its own labels
// kept; left alone when it holds what is wanted; replaced when its roleRef changes; updated
// when its subjects change.
func TestEnsureRBAC(t *testing.T) {
	ctx := context.Background()
	binding := func(role string, users ...string) *rbacv1.RoleBinding {
		b := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "t", Labels: map[string]string{TeamLabel: "t"}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		}
		for _, u := range users {
			b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u})
		}
		return b
	}
	kube := kubefake.NewClientset()
	client := kube.RbacV1().RoleBindings("t")
	read := func() *rbacv1.RoleBinding {
		t.Helper()
		b, err := client.Get(ctx, "b", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	step := func(cached *rbacv1.RoleBinding, want *rbacv1.RoleBinding, wantDid rbacAction) {
		t.Helper()
		did, err := ensureRBAC(ctx, client, roleBindingKind, cached, cached != nil, want)
		if err != nil || did != wantDid {
			t.Fatalf("ensureRBAC = %q, %v; want %q", did, err, wantDid)
		}
	}

	step(nil, binding("view", "a"), rbacCreated)
	// Someone else's labels on it, and the informer has not seen it: taken over, labels kept.
	other := read()
	other.Labels = map[string]string{"keep": "me"}
	if _, err := client.Update(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	step(nil, binding("view", "a", "b"), rbacUpdated)
	if got := read(); got.Labels["keep"] != "me" || got.Labels[TeamLabel] != "t" || len(got.Subjects) != 2 {
		t.Errorf("taken over: %+v", got)
	}
	step(read(), binding("view", "a", "b"), rbacUnchanged)
	step(read(), binding("edit", "a"), rbacReplaced)
	if got := read(); got.RoleRef.Name != "edit" || len(got.Subjects) != 1 {
		t.Errorf("replaced: %+v", got)
	}
	writes := 0
	for _, a := range kube.Actions() {
		if a.GetVerb() != "get" {
			writes++
		}
	}
	// Create; the test's update; the takeover's refused create and update; nothing while
	// unchanged; delete and create.
	if writes != 6 {
		t.Errorf("%d writes, want 6: %v", writes, kube.Actions())
	}
}
