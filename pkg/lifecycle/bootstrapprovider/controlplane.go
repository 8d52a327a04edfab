package bootstrapprovider

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapdata "github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// ensureControlPlane waits until the Machine's Cluster reports its control plane initialized
// and has an endpoint, which the data points the node at.
func (c *Controller) ensureControlPlane(_ context.Context, s *state) (steps.Result, error) {
	ns := s.bc.Namespace
	obj, err := c.clusters.ByNamespace(ns).Get(s.cluster)
	if apierrors.IsNotFound(err) {
		return steps.Waiting(ReasonWaitingForCluster, "waiting for Cluster %s/%s", ns, s.cluster), nil
	}
	if err != nil {
		return s.fail(ReasonWaitingForCluster, err, err), nil
	}
	cluster, err := external.FromObject[clusterv1.Cluster](obj)
	if err != nil {
		return s.fail(ReasonWaitingForCluster, err, err), nil
	}
	if init := cluster.Status.Initialization.ControlPlaneInitialized; init == nil || !*init {
		return steps.Waiting(ReasonWaitingForControlPlane, "waiting for Cluster %s to report status.initialization.controlPlaneInitialized", s.cluster), nil
	}
	ep := cluster.Spec.ControlPlaneEndpoint
	if ep.Host == "" || ep.Port == 0 {
		return steps.Waiting(ReasonWaitingForEndpoint, "Cluster %s has no spec.controlPlaneEndpoint yet", s.cluster), nil
	}
	s.endpoint = ep.String()
	return steps.Ready("ControlPlaneInitialized", "Cluster %s serves at %s", s.cluster, s.endpoint), nil
}

// ensureCA reads the cluster CA certificate from <cluster>-ca. That Secret carries no label to
// watch: a missing or bad one is looked at again after caRetry.
func (c *Controller) ensureCA(ctx context.Context, s *state) (steps.Result, error) {
	ns, name := s.bc.Namespace, s.cluster+"-ca"
	secret, err := c.kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return s.fail(ReasonCASecretNotFound, fmt.Errorf("the cluster CA Secret %s/%s does not exist", ns, name), controllerkit.RequeueAfter(caRetry)), nil
	}
	if err != nil {
		return s.fail(ReasonCASecretNotFound, fmt.Errorf("reading the cluster CA Secret %s/%s: %w", ns, name, err), err), nil
	}
	ca := secret.Data[corev1.TLSCertKey]
	if len(ca) == 0 {
		ca = secret.Data["ca.crt"]
	}
	if _, err := bootstrapdata.CAPin(ca); err != nil {
		return s.fail(ReasonInvalidCA, fmt.Errorf("Secret %s/%s holds no CA certificate in tls.crt: %w", ns, name, err), controllerkit.RequeueAfter(caRetry)), nil
	}
	s.ca = ca
	return steps.Ready("CAFound", "cluster CA from Secret %s/%s", ns, name), nil
}

// ensureTenant makes a client of the tenant cluster from <cluster>-kubeconfig.
func (c *Controller) ensureTenant(ctx context.Context, s *state) (steps.Result, error) {
	tenant, r, retry := c.tenant(ctx, s.bc.Namespace, s.cluster)
	if tenant == nil {
		s.next = retry
		return r, nil
	}
	s.tenant = tenant
	return steps.Ready("TenantReachable", "a client of tenant cluster %s", s.cluster), nil
}

// tenant returns a client of the tenant cluster from <cluster>-kubeconfig, cached per
// resourceVersion of that Secret. Without one it says why, and what the queue does next.
func (c *Controller) tenant(ctx context.Context, ns, cluster string) (kubernetes.Interface, steps.Result, error) {
	name := cluster + "-kubeconfig"
	secret, err := c.secrets.Secrets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// Not in the cache (yet): ask the API server once, then wait for the watch.
		secret, err = c.kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil, steps.Waiting(ReasonWaitingForKubeconfig, "waiting for the kubeconfig Secret %s/%s", ns, name), nil
	}
	if err != nil {
		return nil, steps.Failure(ReasonTenantUnreachable, "%s", err), err
	}
	key := ns + "/" + cluster
	c.tenantsMu.Lock()
	defer c.tenantsMu.Unlock()
	if t, ok := c.tenants[key]; ok && t.resourceVersion == secret.ResourceVersion {
		return t.client, steps.Result{}, nil
	}
	cl, err := c.tenantClient(secret.Data[kubeconfigKey])
	if err != nil {
		return nil, steps.Failure(ReasonTenantUnreachable, "kubeconfig Secret %s/%s: %s", ns, name, err), nil
	}
	c.tenants[key] = cachedTenant{resourceVersion: secret.ResourceVersion, client: cl}
	return cl, steps.Result{}, nil
}
