package team

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// namespaceRecheck looks again at a terminating namespace.
const namespaceRecheck = 2 * time.Second

// ensureNamespace creates the Team's namespace, or adopts an existing one by labelling it.
// It waits while the namespace is terminating.
func (c *Controller) ensureNamespace(ctx context.Context, s *state) (steps.Result, error) {
	team := s.team
	ns, err := c.namespaces.Get(team.Name)
	if apierrors.IsNotFound(err) {
		// The lister sees labelled namespaces only: the namespace may exist unlabelled.
		ns, err = c.kube.CoreV1().Namespaces().Get(ctx, team.Name, metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
		_, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name:        team.Name,
			Labels:      map[string]string{TeamLabel: team.Name, external.ManagedByLabel: external.ManagedBy},
			Annotations: map[string]string{CreatedNamespaceAnnotation: "true"},
		}}, metav1.CreateOptions{})
		if err != nil {
			return steps.Result{}, err
		}
		klog.FromContext(ctx).Info("Created the team namespace", "namespace", team.Name)
	case err != nil:
		return steps.Result{}, err
	case ns.DeletionTimestamp != nil:
		s.recheckAfter = namespaceRecheck
		return steps.Waiting("Terminating", "namespace %s is terminating", ns.Name), nil
	case ns.Labels[TeamLabel] != team.Name:
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, TeamLabel, team.Name)
		if _, err := c.kube.CoreV1().Namespaces().Patch(ctx, ns.Name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
			return steps.Result{}, err
		}
	}
	return steps.Ready("Created", "namespace %s", team.Name), nil
}

// cleanupNamespace deletes the Team's namespace if the controller created it (an adopted one
// stays); it does not wait for the namespace to be gone.
func (c *Controller) cleanupNamespace(ctx context.Context, s *state) (bool, error) {
	ns, err := c.kube.CoreV1().Namespaces().Get(ctx, s.team.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, err
	case ns.Annotations[CreatedNamespaceAnnotation] == "true" && ns.DeletionTimestamp == nil:
		if err := c.kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
		klog.FromContext(ctx).Info("Deleted the team namespace", "namespace", ns.Name)
	}
	return true, nil
}
