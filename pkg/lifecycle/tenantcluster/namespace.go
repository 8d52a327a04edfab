package tenantcluster

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// ensureNamespace makes the tenant namespace, labelled with the cluster and its team.
func (c *Controller) ensureNamespace(ctx context.Context, s *state) (steps.Result, error) {
	want := labels(s.tc)
	if s.tc.Spec.TeamRef != nil {
		want[TeamLabel] = s.tc.Spec.TeamRef.Name
	}
	got, err := c.namespaces.Get(s.namespace)
	switch {
	case apierrors.IsNotFound(err):
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.namespace, Labels: want}}
		if _, err := c.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return steps.Result{}, err
		}
	case err != nil:
		return steps.Result{}, err
	case got.DeletionTimestamp != nil:
		return steps.Waiting("NamespaceTerminating", "namespace %s is still terminating", s.namespace), nil
	case got.Labels[external.TenantClusterNamespaceLabel] != s.tc.Namespace || got.Labels[external.TenantClusterLabel] != s.tc.Name:
		return steps.Failure("NamespaceTaken", "namespace %s exists and belongs to something else", s.namespace), nil
	default:
		if !hasLabels(got.Labels, want) {
			ns := got.DeepCopy()
			for k, v := range want {
				ns.Labels[k] = v
			}
			if _, err := c.kube.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
				return steps.Result{}, err
			}
		}
	}
	if err := c.ensureSecretsBinding(ctx, s.namespace); err != nil {
		return steps.Result{}, err
	}
	return steps.Ready("NamespaceReady", "namespace %s", s.namespace), nil
}

// SecretsRole is the ClusterRole (artifacts/deploy/rbac.yaml) that lets butler-apiserver read
// and write Secrets; it holds it only where a RoleBinding of that name binds it: its own
// namespace and each tenant namespace it made, bound here.
const SecretsRole = "butler-apiserver-secrets"

// ensureSecretsBinding binds SecretsRole to butler-apiserver itself in a tenant namespace it
// made (RBAC lets it: it may bind that role by name).
func (c *Controller) ensureSecretsBinding(ctx context.Context, namespace string) error {
	if c.self == "" {
		return nil
	}
	if _, done := c.bound.Load(namespace); done {
		return nil // once per namespace and process: the binding goes only with the namespace
	}
	rb := rbacv1ac.RoleBinding(SecretsRole, namespace).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(SecretsRole)).
		WithSubjects(rbacv1ac.Subject().WithAPIGroup(rbacv1.GroupName).WithKind(rbacv1.UserKind).WithName(c.self))
	if _, err := c.kube.RbacV1().RoleBindings(namespace).Apply(ctx, rb, external.Workers.ApplyOptions()); err != nil {
		return err
	}
	c.bound.Store(namespace, true)
	return nil
}

// selfName is the user name the management cluster knows kube by (a SelfSubjectReview), or ""
// when it cannot say (then no binding is written, and Secrets are read as RBAC allows).
func selfName(ctx context.Context, kube kubernetes.Interface) string {
	review, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Cannot learn butler-apiserver's own user name; tenant namespaces get no Secrets RoleBinding")
		return ""
	}
	return review.Status.UserInfo.Username
}

// cleanupNamespace deletes the tenant namespace (and with it the Secrets a provider left) and
// waits until it is gone.
func (c *Controller) cleanupNamespace(ctx context.Context, s *state) (bool, error) {
	ns, err := c.kube.CoreV1().Namespaces().Get(ctx, s.namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if ns.Labels[external.TenantClusterNamespaceLabel] != s.tc.Namespace || ns.Labels[external.TenantClusterLabel] != s.tc.Name {
		return true, nil // not ours
	}
	if ns.DeletionTimestamp == nil {
		err := c.kube.CoreV1().Namespaces().Delete(ctx, s.namespace, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &ns.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return false, err
		}
	}
	return false, nil
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
