package team

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// state is one reconcile's view of a Team.
type state struct {
	team *v1alpha1.Team
	// recheckAfter, when set, brings the Team back after it: a step waits for what it does not
	// watch closely (a namespace's final removal).
	recheckAfter time.Duration
}

const (
	stepNamespace    = "namespace"
	stepTeamReader   = "team reader"
	stepRoleBindings = "role bindings"
)

// steps is the plan of a Team: its namespace, the ClusterRole and ClusterRoleBinding that let
// its members read the Team, and their RoleBindings in the namespace. Run backwards when the
// Team is deleted, the members lose their RoleBindings first and the namespace goes last.
func (c *Controller) steps() steps.Plan[*state] {
	return steps.Plan[*state]{
		{Name: stepNamespace, Condition: conditionNamespaceReady, Ensure: c.ensureNamespace, Cleanup: c.cleanupNamespace},
		// No condition of its own: its failure shows on RBACReady. Cluster-scoped, so it waits
		// for no namespace.
		{Name: stepTeamReader, Ensure: c.teamReaderStep, Cleanup: c.cleanupTeamReader},
		{Name: stepRoleBindings, Condition: conditionRBACReady, After: []string{stepNamespace},
			Ensure: c.roleBindingsStep, Cleanup: c.cleanupRoleBindings},
	}
}

// conditionOf is the condition an error of the step shows on.
func conditionOf(step string) string {
	if step == stepNamespace {
		return conditionNamespaceReady
	}
	return conditionRBACReady
}

func (c *Controller) roleBindingsStep(ctx context.Context, s *state) (steps.Result, error) {
	if err := c.ensureRoleBindings(ctx, s.team); err != nil {
		return steps.Result{}, err
	}
	members := len(s.team.Spec.Access.Users) + len(s.team.Spec.Access.Groups)
	return steps.Ready("Bound", "%d member(s) bound", members), nil
}

// cleanupRoleBindings deletes the Team's RoleBindings, read live: members lose access at once.
func (c *Controller) cleanupRoleBindings(ctx context.Context, s *state) (bool, error) {
	client := c.kube.RbacV1().RoleBindings(s.team.Name)
	bindings, err := client.List(ctx, metav1.ListOptions{LabelSelector: labels.Set{external.ManagedByLabel: external.ManagedBy, TeamLabel: s.team.Name}.String()})
	if err != nil {
		return false, err
	}
	for _, rb := range bindings.Items {
		if err := client.Delete(ctx, rb.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
	}
	return true, nil
}

func (c *Controller) teamReaderStep(ctx context.Context, s *state) (steps.Result, error) {
	if err := c.ensureTeamReader(ctx, s.team); err != nil {
		return steps.Result{}, err
	}
	return steps.Ready("Bound", "members may read Team %s", s.team.Name), nil
}

func (c *Controller) cleanupTeamReader(ctx context.Context, s *state) (bool, error) {
	return true, c.deleteTeamReader(ctx, s.team.Name)
}
