package tenantcluster

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/controlplane"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/infra"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/workers"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// watchedKinds are the external kinds whose changes bring a cluster back.
func watchedKinds() []schema.GroupVersionKind {
	kinds := []schema.GroupVersionKind{
		external.ClusterGVK, external.MachineDeploymentGVK,
		external.StewardControlPlaneGVK, external.KamajiControlPlaneGVK, external.KubeadmControlPlaneGVK,
		external.TenantControlPlaneGVK, external.KamajiTenantControlPlaneGVK,
	}
	for _, p := range allProviders {
		cluster, _ := infra.Kinds(p)
		kinds = append(kinds, cluster)
	}
	return kinds
}

var allProviders = []v1alpha1.ProviderType{v1alpha1.ProviderHarvester, v1alpha1.ProviderNutanix, v1alpha1.ProviderProxmox,
	v1alpha1.ProviderAWS, v1alpha1.ProviderAzure, v1alpha1.ProviderGCP, v1alpha1.ProviderLocal}

// applyAll applies objs in order; a kind the management cluster does not serve needs a person.
func (c *Controller) applyAll(ctx context.Context, objs ...*unstructured.Unstructured) ([]*unstructured.Unstructured, *steps.Result, error) {
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		if o == nil {
			continue
		}
		got, err := c.objects.apply(ctx, o)
		var missing *NotInstalledError
		if asNotInstalled(err, &missing) {
			r := steps.Failure("CRDNotInstalled", "%s", missing.Error())
			return nil, &r, nil
		}
		if apierrors.IsInvalid(err) {
			r := steps.Failure("Rejected", "the management cluster rejected %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
			return nil, &r, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("applying %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		out = append(out, got)
	}
	return out, nil, nil
}

func asNotInstalled(err error, into **NotInstalledError) bool {
	m, ok := err.(*NotInstalledError)
	if ok {
		*into = m
	}
	return ok
}

// ensureInfrastructure applies the provider's infrastructure cluster and worker machine
// template (and, for a standalone control plane, its machine template); ready once the
// infrastructure cluster says it is provisioned.
func (c *Controller) ensureInfrastructure(ctx context.Context, s *state) (steps.Result, error) {
	cluster, template, err := infra.ForProvider(s.in)
	if err != nil {
		return steps.Failure("InvalidProviderConfig", "%v", err), nil
	}
	objs := []*unstructured.Unstructured{cluster, template}
	if s.tc.Spec.ControlPlane.Type == v1alpha1.ControlPlaneStandalone {
		cpTemplate, err := infra.ControlPlaneTemplate(s.in)
		if err != nil {
			return steps.Failure("InvalidProviderConfig", "%v", err), nil
		}
		objs = append(objs, cpTemplate)
	}
	applied, failed, err := c.applyAll(ctx, objs...)
	if failed != nil || err != nil {
		return deref(failed), err
	}
	got := applied[0]
	if provisioned(got) {
		return steps.Ready("Provisioned", "%s %s/%s is provisioned", got.GetKind(), got.GetNamespace(), got.GetName()), nil
	}
	if host, _, _ := unstructured.NestedString(got.Object, "spec", "controlPlaneEndpoint", "host"); host == "" &&
		s.tc.Spec.ControlPlane.Type != v1alpha1.ControlPlaneStandalone {
		// A hosted control plane's provider sets the endpoint; until then the provider of the
		// infrastructure cluster waits, and so does this step.
		return steps.Waiting("WaitingForControlPlaneEndpoint", "%s %s/%s waits for its endpoint from the %s provider",
			got.GetKind(), got.GetNamespace(), got.GetName(), controlplane.ControlPlaneGVK(s.in).Kind), nil
	}
	return steps.Waiting("Provisioning", "%s %s/%s is not provisioned yet", got.GetKind(), got.GetNamespace(), got.GetName()), nil
}

// provisioned reads the infrastructure contract: status.initialization.provisioned (v1beta2),
// or status.ready (providers on the v1beta1 contract).
func provisioned(u *unstructured.Unstructured) bool {
	if v, ok, _ := unstructured.NestedBool(u.Object, "status", "initialization", "provisioned"); ok {
		return v
	}
	v, _, _ := unstructured.NestedBool(u.Object, "status", "ready")
	return v
}

func (c *Controller) cleanupInfrastructure(ctx context.Context, s *state) (bool, error) {
	gone := true
	for _, p := range allProviders {
		clusterKind, templateKind := infra.Kinds(p)
		for _, o := range []struct {
			gvk  schema.GroupVersionKind
			name string
		}{{clusterKind, s.tc.Name}, {templateKind, s.tc.Name + "-workers"}, {templateKind, s.tc.Name + "-control-plane"}} {
			ok, err := c.objects.remove(ctx, o.gvk, s.namespace, o.name)
			if err != nil {
				return false, err
			}
			// Templates have no finalizers and are not watched: only the cluster is waited for.
			if o.gvk == clusterKind && o.name == s.tc.Name {
				gone = gone && ok
			}
		}
	}
	return gone, nil
}

// ensureControlPlane applies the CAPI Cluster and its control plane object; ready once the
// control plane serves at the version asked for and its admin kubeconfig exists.
func (c *Controller) ensureControlPlane(ctx context.Context, s *state) (steps.Result, error) {
	cluster, cp, failed, err := c.applyControlPlane(ctx, s, nil, false)
	if failed != nil || err != nil {
		return deref(failed), err
	}
	if s.tc.Spec.ControlPlane.Type == v1alpha1.ControlPlaneStandalone {
		return c.standaloneReady(ctx, s, cluster, cp)
	}
	return c.hostedReady(ctx, s, cp)
}

// applyControlPlane applies the CAPI Cluster and then its control plane object, owned by it;
// replicas, when set, overrides the control plane's (hibernation's zero).
func (c *Controller) applyControlPlane(ctx context.Context, s *state, replicas *int64, paused bool) (cluster, cp *unstructured.Unstructured, failed *steps.Result, err error) {
	wantCluster, err := controlplane.Cluster(s.in)
	if err != nil {
		r := steps.Failure("InvalidSpec", "%v", err)
		return nil, nil, &r, nil
	}
	if paused {
		// The Cluster is applied whole by one field manager: leaving spec.paused out would unpause it.
		if err := unstructured.SetNestedField(wantCluster.Object, true, "spec", "paused"); err != nil {
			return nil, nil, nil, err
		}
	}
	wantCP, err := controlplane.ControlPlane(s.in)
	if err != nil {
		r := steps.Failure("InvalidSpec", "%v", err)
		return nil, nil, &r, nil
	}
	if replicas != nil {
		if err := unstructured.SetNestedField(wantCP.Object, *replicas, "spec", "replicas"); err != nil {
			return nil, nil, nil, err
		}
	}
	applied, failed, err := c.applyAll(ctx, wantCluster)
	if failed != nil || err != nil {
		return nil, nil, failed, err
	}
	controlplane.SetClusterOwner(wantCP, applied[0])
	appliedCP, failed, err := c.applyAll(ctx, wantCP)
	if failed != nil || err != nil {
		return nil, nil, failed, err
	}
	return applied[0], appliedCP[0], nil, nil
}

// tenantControlPlaneKind is the TenantControlPlane kind a hosted control plane object makes.
func tenantControlPlaneKind(cp *unstructured.Unstructured) schema.GroupVersionKind {
	if cp.GroupVersionKind().Kind == external.KamajiControlPlaneGVK.Kind {
		return external.KamajiTenantControlPlaneGVK
	}
	return external.TenantControlPlaneGVK
}

// hostedReady reads the TenantControlPlane that Steward (or Kamaji) made for the control plane
// object: ready when status.kubernetesResources.version.status is "Ready" at the asked version.
func (c *Controller) hostedReady(ctx context.Context, s *state, cp *unstructured.Unstructured) (steps.Result, error) {
	tcp, err := c.objects.get(ctx, tenantControlPlaneKind(cp), s.namespace, s.tc.Name)
	if err != nil {
		return steps.Result{}, err
	}
	if tcp == nil {
		return steps.Waiting("WaitingForTenantControlPlane", "waiting for the %s provider to create TenantControlPlane %s/%s",
			cp.GetKind(), s.namespace, s.tc.Name), nil
	}
	s.rotated = tcp.GetAnnotations()[external.CredentialsRotatedAnnotation]
	version, _, _ := unstructured.NestedString(tcp.Object, "status", "kubernetesResources", "version", "version")
	state, _, _ := unstructured.NestedString(tcp.Object, "status", "kubernetesResources", "version", "status")
	endpoint, _, _ := unstructured.NestedString(tcp.Object, "status", "controlPlaneEndpoint")
	secret, _, _ := unstructured.NestedString(tcp.Object, "status", "kubeconfig", "admin", "secretName")
	if secret == "" {
		secret = s.tc.Name + "-admin-kubeconfig"
	}
	// The datastore the provider keeps the tenant on (Steward and Kamaji report it here).
	s.dataStore, _, _ = unstructured.NestedString(tcp.Object, "status", "storage", "dataStoreName")
	s.version, s.endpoint = version, endpoint
	if state != "Ready" {
		why := ""
		if msg := tcp.GetAnnotations()[external.LocalProviderMessageAnnotation]; msg != "" {
			why = ": " + msg // e.g. the version is being built, for minutes
		}
		return steps.Waiting("TenantControlPlaneNotReady", "TenantControlPlane %s/%s is %s%s", s.namespace, s.tc.Name, orDefault(state, "not ready yet"), why), nil
	}
	if version != s.tc.Spec.KubernetesVersion {
		return steps.Waiting("Upgrading", "the control plane runs %s and is moving to %s", version, s.tc.Spec.KubernetesVersion), nil
	}
	if ok, err := c.secretExists(ctx, s.namespace, secret); err != nil || !ok {
		return steps.Waiting("WaitingForKubeconfig", "waiting for the admin kubeconfig Secret %s/%s", s.namespace, secret), err
	}
	s.kubeconfigSecret = secret
	return steps.Ready("TenantControlPlaneReady", "TenantControlPlane %s/%s serves %s at %s", s.namespace, s.tc.Name, version, endpoint), nil
}

// standaloneReady reads a KubeadmControlPlane's cluster: initialized, at the asked version, with
// CAPI's <cluster>-kubeconfig Secret.
func (c *Controller) standaloneReady(ctx context.Context, s *state, cluster, kcp *unstructured.Unstructured) (steps.Result, error) {
	initialized, _, _ := unstructured.NestedBool(cluster.Object, "status", "initialization", "controlPlaneInitialized")
	version, _, _ := unstructured.NestedString(kcp.Object, "status", "version")
	host, _, _ := unstructured.NestedString(cluster.Object, "spec", "controlPlaneEndpoint", "host")
	port, _, _ := unstructured.NestedInt64(cluster.Object, "spec", "controlPlaneEndpoint", "port")
	s.version = version
	if host != "" {
		s.endpoint = fmt.Sprintf("%s:%d", host, port)
	}
	if !initialized {
		return steps.Waiting("ControlPlaneInitializing", "KubeadmControlPlane %s/%s is not initialized yet", s.namespace, s.tc.Name), nil
	}
	if version != s.tc.Spec.KubernetesVersion {
		return steps.Waiting("Upgrading", "the control plane runs %s and is moving to %s", orDefault(version, "an unknown version"), s.tc.Spec.KubernetesVersion), nil
	}
	secret := s.tc.Name + "-kubeconfig"
	if ok, err := c.secretExists(ctx, s.namespace, secret); err != nil || !ok {
		return steps.Waiting("WaitingForKubeconfig", "waiting for the kubeconfig Secret %s/%s", s.namespace, secret), err
	}
	s.kubeconfigSecret = secret
	return steps.Ready("ControlPlaneInitialized", "KubeadmControlPlane %s/%s serves %s", s.namespace, s.tc.Name, version), nil
}

// secretExists reads the tenant namespace's watched Secrets (their watch brings the cluster
// back when one comes), or the management cluster when there is no watch.
func (c *Controller) secretExists(ctx context.Context, ns, name string) (bool, error) {
	var err error
	if c.secrets != nil {
		_, err = c.secrets.Secrets(ns).Get(name)
	} else {
		_, err = c.kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// cleanupControlPlane deletes the Cluster and its control plane object, and waits for both:
// with Cluster API running, the Cluster's deletion takes its control plane and infrastructure
// with it, in its own order.
func (c *Controller) cleanupControlPlane(ctx context.Context, s *state) (bool, error) {
	gone := true
	for _, gvk := range []schema.GroupVersionKind{external.ClusterGVK, external.StewardControlPlaneGVK, external.KamajiControlPlaneGVK, external.KubeadmControlPlaneGVK} {
		ok, err := c.objects.remove(ctx, gvk, s.namespace, s.tc.Name)
		if err != nil {
			return false, err
		}
		gone = gone && ok
	}
	return gone, nil
}

// ensureWorkers applies the bootstrap template and the MachineDeployment. It runs only once the
// control plane is ready at the asked version, so an upgrade moves the workers after it.
func (c *Controller) ensureWorkers(ctx context.Context, s *state) (steps.Result, error) {
	got, failed, err := c.applyWorkers(ctx, s, nil)
	if failed != nil || err != nil {
		return deref(failed), err
	}
	want := s.tc.Spec.Workers.Replicas
	replicas, _, _ := unstructured.NestedInt64(got.Object, "status", "replicas")
	ready, _, _ := unstructured.NestedInt64(got.Object, "status", "readyReplicas")
	upToDate, _, _ := unstructured.NestedInt64(got.Object, "status", "upToDateReplicas")
	s.readyWorkers = int32(ready)
	// Counts of an older generation say nothing of this one: right after a version change every
	// old machine is still "up to date" until Cluster API has seen the new template.
	if observed, _, _ := unstructured.NestedInt64(got.Object, "status", "observedGeneration"); observed < got.GetGeneration() {
		return steps.Waiting("WorkersNotReady", "MachineDeployment %s/%s: Cluster API has not seen generation %d yet (status is of %d)",
			got.GetNamespace(), got.GetName(), got.GetGeneration(), observed), nil
	}
	// Nor are the up-to-date counts current at once: Cluster API sums its MachineSets' statuses,
	// which their own controller updates later. The versions its machines run are what says a
	// version change has rolled (status.versions, Cluster API >= 1.14).
	if int32(replicas) == want && int32(ready) == want && int32(upToDate) == want {
		if rolled, versions := atVersion(got, s.tc.Spec.KubernetesVersion, want); !rolled {
			return steps.Waiting("WorkersNotReady", "%d of %d workers ready, rolling to %s (machines at %s; MachineDeployment %s/%s)",
				ready, want, s.tc.Spec.KubernetesVersion, versions, got.GetNamespace(), got.GetName()), nil
		}
		return steps.Ready("WorkersReady", "%d of %d workers ready at %s", ready, want, s.tc.Spec.KubernetesVersion), nil
	}
	return steps.Waiting("WorkersNotReady", "%d of %d workers ready, %d up to date (MachineDeployment %s/%s)",
		ready, want, upToDate, got.GetNamespace(), got.GetName()), nil
}

// atVersion says whether a MachineDeployment's status.versions puts all its want machines at
// version, and what it says ("v1.30.1: 2, v1.30.2: 1"). Without the field (a Cluster API before
// 1.14) it cannot say otherwise.
func atVersion(md *unstructured.Unstructured, version string, want int32) (bool, string) {
	versions, found, _ := unstructured.NestedSlice(md.Object, "status", "versions")
	if !found {
		return true, ""
	}
	rolled, total := true, int64(0)
	var parts []string
	for _, v := range versions {
		m, _ := v.(map[string]any)
		name, _, _ := unstructured.NestedString(m, "version")
		n, _, _ := unstructured.NestedInt64(m, "replicas")
		parts = append(parts, fmt.Sprintf("%s: %d", name, n))
		total += n
		if name != version && n > 0 {
			rolled = false
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "none")
	}
	return rolled && total == int64(want), strings.Join(parts, ", ")
}

// applyWorkers applies the bootstrap template and the MachineDeployment, and returns the
// latter; replicas, when set, overrides spec.workers.replicas (hibernation's zero).
func (c *Controller) applyWorkers(ctx context.Context, s *state, replicas *int64) (*unstructured.Unstructured, *steps.Result, error) {
	bootstrap, err := workers.BootstrapTemplate(s.in)
	if err != nil {
		r := steps.Failure("InvalidSpec", "%v", err)
		return nil, &r, nil
	}
	md, err := workers.MachineDeployment(s.in)
	if err != nil {
		r := steps.Failure("InvalidSpec", "%v", err)
		return nil, &r, nil
	}
	if replicas != nil {
		if err := unstructured.SetNestedField(md.Object, *replicas, "spec", "replicas"); err != nil {
			return nil, nil, err
		}
	}
	applied, failed, err := c.applyAll(ctx, bootstrap, md)
	if failed != nil || err != nil {
		return nil, failed, err
	}
	return applied[1], nil, nil
}

func (c *Controller) cleanupWorkers(ctx context.Context, s *state) (bool, error) {
	gone, err := c.objects.remove(ctx, external.MachineDeploymentGVK, s.namespace, s.tc.Name+"-workers")
	if err != nil || !gone {
		return false, err
	}
	_, err = c.objects.remove(ctx, external.BootstrapConfigTemplateGVK, s.namespace, s.tc.Name+"-workers")
	return err == nil, err
}

func deref(r *steps.Result) steps.Result {
	if r == nil {
		return steps.Result{}
	}
	return *r
}
