package tenantcluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/steward"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/capi"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// ensureControlPlane applies the CAPI Cluster and its control plane object; ready once the
// control plane serves at the version asked for and its admin kubeconfig exists. The run that
// finds it newly ready stores that first: the workers' objects and the Team's bindings in the
// tenant, one request at a time, come in the next run, not before the condition users and
// their tools wait on.
func (c *Controller) ensureControlPlane(ctx context.Context, s *state) (steps.Result, error) {
	cluster, cp, failed, err := c.applyControlPlane(ctx, s, nil, false)
	if failed != nil || err != nil {
		return deref(failed), err
	}
	var r steps.Result
	if s.tc.Spec.ControlPlane.Type == v1alpha1.ControlPlaneStandalone {
		r, err = c.standaloneReady(ctx, s, cluster, cp)
	} else {
		r, err = c.hostedReady(ctx, s, cp)
	}
	r.StoreFirst = r.Done && !meta.IsStatusConditionTrue(s.tc.Status.Conditions, ConditionControlPlaneReady)
	if !r.Done || r.StoreFirst {
		c.forgetBindings(string(s.tc.UID))
	}
	return r, err
}

// applyControlPlane applies the CAPI Cluster and then its control plane object, owned by it;
// replicas, when set, overrides the control plane's (hibernation's zero).
func (c *Controller) applyControlPlane(ctx context.Context, s *state, replicas *int64, paused bool) (cluster, cp *unstructured.Unstructured, failed *steps.Result, err error) {
	wantCluster, err := capi.Cluster(s.in)
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
	wantCP, err := capi.ControlPlane(s.in)
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
	capi.SetClusterOwner(wantCP, applied[0])
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

// hostedReady is readTenantControlPlane's result, unless the control plane waits (or the
// engine's webhook does not answer) while a controller it needs is not running: then the cluster
// names that controller at once rather than wait, or say after providerSilentAfter that
// something did not act.
func (c *Controller) hostedReady(ctx context.Context, s *state, cp *unstructured.Unstructured) (steps.Result, error) {
	r, err := c.readTenantControlPlane(ctx, s, cp)
	if err != nil || r.Done || r.Failed && r.Reason != reasonProviderUnavailable {
		return r, err
	}
	if down := c.controllerNotRunning(ctx, s, cp); down != nil {
		return *down, nil
	}
	return r, nil
}

// readTenantControlPlane reads the TenantControlPlane that Steward (or Kamaji) made for the
// control plane object: ready when status.kubernetesResources.version.status is "Ready" at the
// asked version.
func (c *Controller) readTenantControlPlane(ctx context.Context, s *state, cp *unstructured.Unstructured) (steps.Result, error) {
	tcp, err := c.objects.get(ctx, tenantControlPlaneKind(cp), s.namespace, s.tc.Name)
	if err != nil {
		return steps.Result{}, err
	}
	if tcp == nil {
		if why := notCreatedBecause(cp); why != "" {
			// Refused (a version Steward cannot run, a DataStore that does not exist) or its
			// webhook down: the provider says so only in its object's condition.
			return refusedBecause(s.in, s.namespace, why), nil
		}
		return c.silentProvider(s, cp.GetCreationTimestamp().Time,
			steps.Waiting("WaitingForTenantControlPlane", "waiting for the %s provider to create TenantControlPlane %s/%s", cp.GetKind(), s.namespace, s.tc.Name),
			fmt.Sprintf("create TenantControlPlane %s/%s, nor say why on %s %s", s.namespace, s.tc.Name, cp.GetKind(), cp.GetName())), nil
	}
	typed, err := external.FromUnstructured[steward.TenantControlPlane](tcp)
	if err != nil {
		return steps.Result{}, err
	}
	s.rotated = typed.Annotations[external.CredentialsRotatedAnnotation]
	s.readCapabilities(typed.Annotations)
	status := typed.Status
	version, state, endpoint := status.KubernetesResources.Version.Version, status.KubernetesResources.Version.Status, status.ControlPlaneEndpoint
	secret := status.Kubeconfig.Admin.SecretName
	if secret == "" {
		secret = s.tc.Name + "-admin-kubeconfig"
	}
	// The datastore the provider keeps the tenant on (Steward and Kamaji report it here).
	s.dataStore = ""
	if status.Storage != nil {
		s.dataStore = status.Storage.DataStoreName
	}
	s.version, s.endpoint = version, endpoint
	if state == tcpSleeping && cp.GetKind() == external.StewardControlPlaneGVK.Kind {
		if err := c.nudgeMissedWake(ctx, s, cp); err != nil {
			return steps.Result{}, err
		}
	}
	if state != steward.VersionStatusReady {
		return c.notReady(s, cp, typed), nil
	}
	if version != s.tc.Spec.KubernetesVersion {
		if why := notCreatedBecause(cp); why != "" {
			// The provider could not update the TenantControlPlane (Steward refuses an upgrade
			// past the version it runs): it keeps serving the old version, for ever.
			return refusedBecause(s.in, s.namespace, why), nil
		}
		return steps.Waiting("Upgrading", "the control plane runs %s and is moving to %s", version, s.tc.Spec.KubernetesVersion), nil
	}
	if ok, err := c.secretExists(ctx, s.namespace, secret); err != nil || !ok {
		return steps.Waiting("WaitingForKubeconfig", "waiting for the admin kubeconfig Secret %s/%s", s.namespace, secret), err
	}
	s.kubeconfigSecret = secret
	return steps.Ready("TenantControlPlaneReady", "TenantControlPlane %s/%s serves %s at %s", s.namespace, s.tc.Name, version, endpoint), nil
}

// notReady says why a TenantControlPlane is not Ready: the provider's failure, what the local
// stand-in says it is doing, or that the engine has written no status at all yet.
func (c *Controller) notReady(s *state, cp *unstructured.Unstructured, tcp *steward.TenantControlPlane) steps.Result {
	if reason, msg := providerFailure(cp, tcp, s.tc.Spec.KubernetesVersion); reason != "" {
		return steps.Failure(reason, "the control plane provider cannot run the cluster as asked (spec.kubernetesVersion %s): %s", s.tc.Spec.KubernetesVersion, msg)
	}
	state := tcp.Status.KubernetesResources.Version.Status
	why := ""
	if msg := tcp.Annotations[external.LocalProviderMessageAnnotation]; msg != "" {
		why = ": " + msg // e.g. the version is being built, for minutes
	} else if state == "" {
		// Not a word from the engine on its object yet (Steward writes one within seconds).
		return c.silentProvider(s, tcp.CreationTimestamp.Time,
			steps.Waiting("TenantControlPlaneNotReady", "TenantControlPlane %s/%s is not ready yet", s.namespace, s.tc.Name),
			fmt.Sprintf("write a status on TenantControlPlane %s/%s", s.namespace, s.tc.Name))
	}
	if state == steward.VersionStatusUpgrading && s.version != "" {
		// Steward rolls its Deployment blue/green, the old version serving until the new Pods
		// are Ready; the stand-in keeps the old processes while it builds the new version.
		return steps.Waiting("Upgrading", "the control plane runs %s and is moving to %s%s", s.version, s.tc.Spec.KubernetesVersion, why)
	}
	return steps.Waiting("TenantControlPlaneNotReady", "TenantControlPlane %s/%s is %s%s", s.namespace, s.tc.Name, orDefault(state, "not ready yet"), why)
}

// notCreatedBecause is the message of a hosted control plane object's TenantControlPlaneCreated
// condition when False (capi-steward's and the local stand-in's), else "".
func notCreatedBecause(cp *unstructured.Unstructured) string {
	typed, err := external.FromUnstructured[steward.StewardControlPlane](cp)
	if err != nil {
		return ""
	}
	c := meta.FindStatusCondition(typed.Status.Conditions, steward.ConditionTenantControlPlaneCreated)
	if c == nil || c.Status != metav1.ConditionFalse {
		return ""
	}
	if c.ObservedGeneration != 0 && c.ObservedGeneration < cp.GetGeneration() {
		return "" // of an earlier spec: the provider has not tried this one yet
	}
	return orDefault(c.Message, c.Reason)
}

// standaloneReady reads a KubeadmControlPlane's cluster: initialized, at the asked version, with
// CAPI's <cluster>-kubeconfig Secret.
func (c *Controller) standaloneReady(ctx context.Context, s *state, cluster, kcp *unstructured.Unstructured) (steps.Result, error) {
	typedCluster, err := external.FromUnstructured[clusterv1.Cluster](cluster)
	if err != nil {
		return steps.Result{}, err
	}
	typedKCP, err := external.FromUnstructured[controlplanev1.KubeadmControlPlane](kcp)
	if err != nil {
		return steps.Result{}, err
	}
	initialized := ptr.Deref(typedCluster.Status.Initialization.ControlPlaneInitialized, false)
	// status.versions lists the machines' versions oldest first: the control plane runs the first
	// until every machine runs the asked one (the deprecated status.version backfills the same).
	version := ""
	if vs := typedKCP.Status.Versions; len(vs) > 0 {
		version = vs[0].Version
	}
	endpoint := typedCluster.Spec.ControlPlaneEndpoint
	s.version = version
	if endpoint.Host != "" {
		s.endpoint = fmt.Sprintf("%s:%d", endpoint.Host, endpoint.Port)
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
// back when one comes), or the management cluster when they are not watched (yet, or asleep).
func (c *Controller) secretExists(ctx context.Context, ns, name string) (bool, error) {
	var err error
	if c.secrets != nil && c.secrets.Watching(ns) {
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

// providerFailure is what the control plane's provider says it cannot do for the cluster's spec
// (the control plane object's status.failureReason and failureMessage, Cluster API's contract):
// a Kubernetes version no image or build of which exists stays so, and waiting for it would keep
// the cluster Provisioning for ever. A failure is believed only once the TenantControlPlane asks
// for the version the cluster asks for: an older one was about the spec before.
func providerFailure(cp *unstructured.Unstructured, tcp *steward.TenantControlPlane, version string) (reason, message string) {
	failed, err := external.FromUnstructured[controlPlaneFailure](cp)
	if err != nil || failed.Status.FailureReason == "" || tcp.Spec.Kubernetes.Version != version {
		return "", ""
	}
	return failed.Status.FailureReason, failed.Status.FailureMessage
}

// controlPlaneFailure is the part of Cluster API's control plane contract providerFailure reads.
type controlPlaneFailure struct {
	Status struct {
		FailureReason  string `json:"failureReason,omitempty"`
		FailureMessage string `json:"failureMessage,omitempty"`
	} `json:"status"`
}
