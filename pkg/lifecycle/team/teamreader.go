package team

import (
	"context"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// TeamReaderName names the ClusterRole and ClusterRoleBinding that let a Team's members read
// the Team itself (get, and list or watch by name): a Team is cluster-scoped, so no RoleBinding
// in its namespace can grant it.
func TeamReaderName(team string) string { return "butler-team-reader:" + team }

// desiredTeamReader returns the Team's reader ClusterRole, and its binding to every member
// whatever the role, or nil when the Team has no members.
func desiredTeamReader(team *v1alpha1.Team) (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	meta := metav1.ObjectMeta{
		Name:   TeamReaderName(team.Name),
		Labels: map[string]string{TeamLabel: team.Name, external.ManagedByLabel: external.ManagedBy},
	}
	role := &rbacv1.ClusterRole{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{butler.GroupName}, Resources: []string{"teams"},
		ResourceNames: []string{team.Name}, Verbs: []string{"get", "list", "watch"},
	}}}
	seen := map[rbacv1.Subject]bool{}
	var subjects []rbacv1.Subject
	for _, m := range []struct {
		kind    string
		members []v1alpha1.TeamMember
	}{{rbacv1.UserKind, team.Spec.Access.Users}, {rbacv1.GroupKind, team.Spec.Access.Groups}} {
		for _, member := range m.members {
			s := rbacv1.Subject{Kind: m.kind, APIGroup: rbacv1.GroupName, Name: member.Name}
			if !seen[s] {
				seen[s] = true
				subjects = append(subjects, s)
			}
		}
	}
	if len(subjects) == 0 {
		return role, nil
	}
	sort.Slice(subjects, func(i, j int) bool {
		return subjects[i].Kind+"/"+subjects[i].Name < subjects[j].Kind+"/"+subjects[j].Name
	})
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: *meta.DeepCopy(),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   subjects,
	}
	return role, binding
}

// ensureTeamReader creates or updates the Team's reader ClusterRole and ClusterRoleBinding, and
// deletes the binding when the Team has no members.
func (c *Controller) ensureTeamReader(ctx context.Context, team *v1alpha1.Team) error {
	role, binding := desiredTeamReader(team)
	got, err := c.clusterRoles.Get(role.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if _, err := ensureRBAC(ctx, c.kube.RbacV1().ClusterRoles(), clusterRoleKind, got, err == nil, role); err != nil {
		return err
	}

	bindings := c.kube.RbacV1().ClusterRoleBindings()
	name := TeamReaderName(team.Name)
	gotBinding, err := c.clusterRoleBindings.Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	found := err == nil
	if binding == nil {
		if found {
			if err := bindings.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		return nil
	}
	did, err := ensureRBAC(ctx, bindings, clusterRoleBindingKind, gotBinding, found, binding)
	if did == rbacUpdated || did == rbacReplaced {
		klog.FromContext(ctx).Info("Updated who may read the team", "clusterRoleBinding", name, "subjects", len(binding.Subjects))
	}
	return err
}

// deleteTeamReader removes the Team's reader ClusterRoleBinding and ClusterRole.
func (c *Controller) deleteTeamReader(ctx context.Context, team string) error {
	name := TeamReaderName(team)
	if err := c.kube.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := c.kube.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
