package team

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Team's RBAC objects — its RoleBindings, its reader ClusterRole and ClusterRoleBinding — are
// all written by ensureRBAC, each kind saying through an rbacKind what of it the controller owns.

// rbacClient is the typed client of one RBAC kind: RoleBindings(ns), ClusterRoles(),
// ClusterRoleBindings().
type rbacClient[T any] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
	Get(context.Context, string, metav1.GetOptions) (T, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
}

// rbacObject is an object of one RBAC kind (a pointer type of k8s.io/api/rbac/v1).
type rbacObject[T any] interface {
	metav1.Object
	DeepCopy() T
}

// rbacKind says what of an object of one kind the controller owns.
type rbacKind[T any] struct {
	// same says whether got already holds want's content (rules, or subjects).
	same func(got, want T) bool
	// fixed says whether got differs from want in what cannot be updated (a binding's roleRef).
	fixed func(got, want T) bool
	// set copies want's content into got.
	set func(got, want T)
}

var (
	roleBindingKind = rbacKind[*rbacv1.RoleBinding]{
		same: func(got, want *rbacv1.RoleBinding) bool {
			return apiequality.Semantic.DeepEqual(got.Subjects, want.Subjects)
		},
		fixed: func(got, want *rbacv1.RoleBinding) bool { return got.RoleRef != want.RoleRef },
		set:   func(got, want *rbacv1.RoleBinding) { got.Subjects = want.Subjects },
	}
	clusterRoleBindingKind = rbacKind[*rbacv1.ClusterRoleBinding]{
		same: func(got, want *rbacv1.ClusterRoleBinding) bool {
			return apiequality.Semantic.DeepEqual(got.Subjects, want.Subjects)
		},
		fixed: func(got, want *rbacv1.ClusterRoleBinding) bool { return got.RoleRef != want.RoleRef },
		set:   func(got, want *rbacv1.ClusterRoleBinding) { got.Subjects = want.Subjects },
	}
	clusterRoleKind = rbacKind[*rbacv1.ClusterRole]{
		same:  func(got, want *rbacv1.ClusterRole) bool { return apiequality.Semantic.DeepEqual(got.Rules, want.Rules) },
		fixed: func(got, want *rbacv1.ClusterRole) bool { return false },
		set:   func(got, want *rbacv1.ClusterRole) { got.Rules = want.Rules },
	}
)

// rbacAction is what ensureRBAC did.
type rbacAction string

const (
	rbacUnchanged rbacAction = ""
	rbacCreated   rbacAction = "created"
	// rbacReplaced: deleted and created again, since its fixed part changed.
	rbacReplaced rbacAction = "replaced"
	rbacUpdated  rbacAction = "updated"
)

// ensureRBAC makes the object want names hold want's content and carry want's labels (its other
// labels are kept). cached is the informer's copy, when found. A missing object is created; one
// that exists though the informer has none (not labelled as ours, or not seen yet) is read and
// taken over; a change of its fixed part means delete and create, any other an update.
func ensureRBAC[T rbacObject[T]](ctx context.Context, client rbacClient[T], kind rbacKind[T], cached T, found bool, want T) (rbacAction, error) {
	got := cached
	if !found {
		_, err := client.Create(ctx, want, metav1.CreateOptions{})
		if err == nil {
			return rbacCreated, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return rbacUnchanged, err
		}
		if got, err = client.Get(ctx, want.GetName(), metav1.GetOptions{}); err != nil {
			return rbacUnchanged, err
		}
	}
	if kind.fixed(got, want) {
		if err := client.Delete(ctx, got.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return rbacUnchanged, err
		}
		_, err := client.Create(ctx, want, metav1.CreateOptions{})
		return rbacReplaced, err
	}
	if kind.same(got, want) && hasLabels(got.GetLabels(), want.GetLabels()) {
		return rbacUnchanged, nil
	}
	updated := got.DeepCopy()
	kind.set(updated, want)
	updated.SetLabels(mergeLabels(updated.GetLabels(), want.GetLabels()))
	_, err := client.Update(ctx, updated, metav1.UpdateOptions{})
	return rbacUpdated, err
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func mergeLabels(into, from map[string]string) map[string]string {
	if into == nil {
		into = map[string]string{}
	}
	for k, v := range from {
		into[k] = v
	}
	return into
}
