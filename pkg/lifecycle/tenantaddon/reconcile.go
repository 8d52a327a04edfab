package tenantaddon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/addons"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/hibernation"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
)

// Reconcile brings one TenantAddon (key namespace/name) in line with its spec: its cluster
// ready for it, its release planned, then installed or upgraded.
func (c *Controller) Reconcile(ctx context.Context, key string) error {
	addon, err := controllerkit.Current(key, c.cached, &c.written)
	if addon == nil || err != nil {
		if err == nil {
			c.succeeded(key) // gone: its backoff with it
		}
		return err
	}
	if addon.DeletionTimestamp != nil {
		return c.remove(ctx, key, addon)
	}
	// The finalizer holds a deleted addon until its release is gone.
	update := c.butler.ButlerV1alpha1().TenantAddons(addon.Namespace).Update
	if addon, err = controllerkit.EnsureFinalizer(ctx, addon, Finalizer, update, &c.written); err != nil {
		return err
	}
	tc, done, err := c.readyCluster(ctx, addon)
	if done {
		return err
	}
	want, done, err := c.planRelease(ctx, addon, tc)
	if done {
		return err
	}
	return c.ensureRelease(ctx, key, addon, tc, want)
}

// cached is the informer's addon of namespace/name.
func (c *Controller) cached(namespace, name string) (*v1alpha1.TenantAddon, error) {
	return c.addons.TenantAddons(namespace).Get(name)
}

// readyCluster is the addon's TenantCluster when its control plane can take a release; done
// (with the wait written, or err) when not.
func (c *Controller) readyCluster(ctx context.Context, addon *v1alpha1.TenantAddon) (*v1alpha1.TenantCluster, bool, error) {
	tc, err := c.clusters.TenantClusters(addon.Namespace).Get(addon.Spec.ClusterRef.Name)
	switch {
	case apierrors.IsNotFound(err):
		return nil, true, c.wait(ctx, addon, "ClusterNotFound", fmt.Sprintf("TenantCluster %s not found", addon.Spec.ClusterRef.Name))
	case err != nil:
		return nil, true, err
	case tc.DeletionTimestamp != nil:
		return nil, true, c.wait(ctx, addon, "ClusterDeleting", fmt.Sprintf("TenantCluster %s is being deleted", tc.Name))
	case hibernation.Asleep(tc):
		// Left as it is: a connection to the sleeping endpoint would wake the cluster. The
		// cluster's wake brings the addon back (watch).
		return nil, true, nil
	case tc.Status.KubeconfigSecretRef == nil || tc.Status.TenantNamespace == "":
		return nil, true, c.wait(ctx, addon, "WaitingForControlPlane", fmt.Sprintf("waiting for the control plane of TenantCluster %s", tc.Name))
	}
	return tc, false, nil
}

// planRelease is the release the addon asks for, once its dependencies are Installed; done
// (with the failure or wait written, or err) when it cannot go ahead.
func (c *Controller) planRelease(ctx context.Context, addon *v1alpha1.TenantAddon, tc *v1alpha1.TenantCluster) (*desired, bool, error) {
	if cycle := c.cycle(addon); cycle != nil {
		return nil, true, c.fail(ctx, addon, "DependencyCycle", "dependsOn forms a cycle: "+strings.Join(cycle, " -> "), nil)
	}
	want, err := c.desiredRelease(addon, tc)
	var bad *specError
	if errors.As(err, &bad) {
		return nil, true, c.fail(ctx, addon, bad.reason, bad.Error(), nil)
	}
	if err != nil {
		return nil, true, err
	}
	if waiting := c.unmetDependencies(addon, want.definition); len(waiting) > 0 {
		// An addon already up to date stays Installed while a dependency changes.
		if addon.Status.Phase == v1alpha1.TenantAddonInstalled && addon.Status.ObservedGeneration == addon.Generation {
			return nil, true, nil
		}
		return nil, true, c.wait(ctx, addon, "WaitingForDependencies", "waiting for "+strings.Join(waiting, ", ")+" to be Installed")
	}
	return want, false, nil
}

// ensureRelease installs or upgrades want in the cluster through the engine and reports the
// outcome.
func (c *Controller) ensureRelease(ctx context.Context, key string, addon *v1alpha1.TenantAddon, tc *v1alpha1.TenantCluster, want *desired) error {
	kubeconfig, err := c.kubeconfig(ctx, tc)
	if apierrors.IsNotFound(err) {
		return c.wait(ctx, addon, "WaitingForControlPlane", fmt.Sprintf("the kubeconfig Secret of TenantCluster %s is not there yet", tc.Name))
	}
	if err != nil {
		return err
	}
	req := addons.Request{
		Target:  addons.Target{Cluster: clusterID(tc), Kubeconfig: kubeconfig},
		Release: want.release, CreateNamespace: want.createNamespace,
		Chart: want.chart, Values: want.values, Timeout: want.timeout, Wait: true,
		Owner:       string(addon.UID),
		Restriction: restriction(addon, want),
	}
	if err := c.protectNamespace(ctx, req.Target, want, req.Restriction); err != nil {
		// Not installed into a namespace the Team's operators may hold; tried again.
		if werr := c.wait(ctx, addon, "NamespaceNotProtected", err.Error()); werr != nil {
			return werr
		}
		return controllerkit.RequeueAfter(c.backoff(key))
	}
	res, err := c.engine.Ensure(ctx, req, c.progress(ctx, addon, want))
	if err != nil {
		return c.failed(ctx, key, addon, err)
	}
	return c.installed(ctx, key, addon, tc, want, req.Target, res.Release)
}

// progress writes Installing or Upgrading when the engine starts one.
func (c *Controller) progress(ctx context.Context, addon *v1alpha1.TenantAddon, want *desired) func(addons.Action) {
	return func(a addons.Action) {
		phase, reason, verb := v1alpha1.TenantAddonInstalling, "Installing", "installing"
		if a == addons.ActionUpgrade {
			phase, reason, verb = v1alpha1.TenantAddonUpgrading, "Upgrading", "upgrading"
		}
		msg := fmt.Sprintf("%s chart %s into namespace %s", verb, want.chart, want.release.Namespace)
		// A failed progress write is not worth stopping Helm for; the outcome is written next.
		_ = c.writeStatus(ctx, addon, phase, reason, msg, metav1.ConditionFalse, nil)
	}
}

// installed reports a deployed release Installed (MetalLB only once its address pool is
// there) and looks again after resyncInstalled.
func (c *Controller) installed(ctx context.Context, key string, addon *v1alpha1.TenantAddon, tc *v1alpha1.TenantCluster, want *desired, target addons.Target, rel addons.ReleaseInfo) error {
	msg := fmt.Sprintf("chart %s %s, release %s/%s revision %d, values sha256:%.12s", rel.Chart, rel.ChartVersion,
		rel.Namespace, rel.Name, rel.Revision, rel.ValuesHash)
	if isMetalLB(want) {
		more, err := c.ensureMetalLBPool(ctx, target, tc, want.release.Namespace)
		if err != nil {
			// MetalLB runs but hands out no addresses: not Installed.
			if werr := c.writeStatus(ctx, addon, v1alpha1.TenantAddonDegraded, "LoadBalancerPoolFailed", msg+"; "+err.Error(), metav1.ConditionFalse, &rel); werr != nil {
				return werr
			}
			return controllerkit.RequeueAfter(c.backoff(key))
		}
		msg += more
	}
	c.succeeded(key)
	if err := c.writeStatus(ctx, addon, v1alpha1.TenantAddonInstalled, "Installed", msg, metav1.ConditionTrue, &rel); err != nil {
		return err
	}
	return controllerkit.RequeueAfter(resyncInstalled)
}

// failed reports an engine failure and asks for a retry after the key's backoff.
func (c *Controller) failed(ctx context.Context, key string, addon *v1alpha1.TenantAddon, err error) error {
	var op *addons.OperationError
	if !errors.As(err, &op) {
		op = &addons.OperationError{Err: err}
	}
	phase, reason := v1alpha1.TenantAddonFailed, "" // each case below names the reason
	var refused *addons.PrivilegeError
	switch {
	case errors.As(err, &refused):
		// The allow-list refused the chart before Helm wrote anything: what ran still runs.
		reason = "Refused"
		if op.Release != nil && op.Release.Status == "deployed" {
			phase = v1alpha1.TenantAddonDegraded
		}
	case op.Action == addons.ActionInstall:
		reason = "InstallFailed"
	case op.Action == addons.ActionUpgrade && op.RolledBack:
		// The previous revision runs again: the addon works, at its old version or values.
		phase, reason = v1alpha1.TenantAddonDegraded, "UpgradeFailed"
	case op.Action == addons.ActionUpgrade:
		reason = "UpgradeFailed"
	case unreachable(err):
		reason = "ClusterUnreachable"
		if addon.Status.Phase == v1alpha1.TenantAddonInstalled {
			phase = v1alpha1.TenantAddonDegraded
		}
	case op.Release != nil && op.Release.Status == "deployed":
		// The chart cannot be had (or the release is another object's), but a revision runs.
		phase, reason = v1alpha1.TenantAddonDegraded, "ChartUnavailable"
	default:
		reason = "ChartUnavailable"
	}
	if strings.Contains(op.Err.Error(), "belongs to another object") {
		reason = "ReleaseConflict"
	}
	klog.FromContext(ctx).Info("Addon operation failed", "reason", reason, "err", err)
	if werr := c.writeStatus(ctx, addon, phase, reason, err.Error(), metav1.ConditionFalse, op.Release); werr != nil {
		return werr
	}
	return controllerkit.RequeueAfter(c.backoff(key))
}

// remove uninstalls a deleted addon's release and lets the object go.
func (c *Controller) remove(ctx context.Context, key string, addon *v1alpha1.TenantAddon) error {
	if !slices.Contains(addon.Finalizers, Finalizer) {
		return nil
	}
	logger := klog.FromContext(ctx)
	if addon.Status.Phase != v1alpha1.TenantAddonDeleting {
		if err := c.writeStatus(ctx, addon, v1alpha1.TenantAddonDeleting, "Deleting", "uninstalling the release", metav1.ConditionFalse, addon.Status.HelmRelease); err != nil {
			return err
		}
	}
	tc, err := c.clusters.TenantClusters(addon.Namespace).Get(addon.Spec.ClusterRef.Name)
	if apierrors.IsNotFound(err) {
		logger.Info("TenantCluster is gone: nothing to uninstall from; releasing the addon", "cluster", addon.Spec.ClusterRef.Name)
		return c.dropFinalizer(ctx, addon)
	}
	if err != nil {
		return err
	}
	clusterDeleting := tc.DeletionTimestamp != nil
	// Reverse dependency order: what depends on this addon goes first. Their deletion (an event
	// on this cluster's addons) brings this one back.
	if waiting := c.dependents(addon, clusterDeleting); len(waiting) > 0 {
		return c.writeStatus(ctx, addon, v1alpha1.TenantAddonDeleting, "WaitingForDependents",
			"waiting for "+strings.Join(waiting, ", ")+", which depend on it, to be uninstalled first", metav1.ConditionFalse, addon.Status.HelmRelease)
	}
	if hibernation.Asleep(tc) {
		if clusterDeleting {
			// The release lives only inside the tenant, whose data goes with it: uninstalling
			// would wake the cluster to delete what is deleted anyway.
			logger.Info("TenantCluster is hibernated and being deleted: releasing the addon without waking it to uninstall", "cluster", tc.Name)
			return c.dropFinalizer(ctx, addon)
		}
		return c.writeStatus(ctx, addon, v1alpha1.TenantAddonDeleting, "ClusterHibernated",
			"the cluster is hibernated; the release is uninstalled when it wakes", metav1.ConditionFalse, addon.Status.HelmRelease)
	}
	if tc.Status.KubeconfigSecretRef == nil || tc.Status.TenantNamespace == "" {
		// No control plane was ever reached, so nothing was installed through this controller.
		logger.Info("TenantCluster has no control plane: nothing to uninstall; releasing the addon", "cluster", tc.Name)
		return c.dropFinalizer(ctx, addon)
	}
	kubeconfig, err := c.kubeconfig(ctx, tc)
	if apierrors.IsNotFound(err) && clusterDeleting {
		logger.Info("TenantCluster is being deleted and its kubeconfig is gone: releasing the addon without uninstalling", "cluster", tc.Name)
		return c.dropFinalizer(ctx, addon)
	}
	if err != nil {
		return err
	}
	key2 := addons.ReleaseKey{Name: addon.Name, Namespace: "default"}
	timeout := addons.DefaultTimeout
	want, wantErr := c.desiredRelease(addon, tc)
	if rel := addon.Status.HelmRelease; rel != nil && rel.Name != "" {
		key2 = addons.ReleaseKey{Name: rel.Name, Namespace: rel.Namespace}
	} else if wantErr == nil {
		key2, timeout = want.release, want.timeout
	}
	target := addons.Target{Cluster: clusterID(tc), Kubeconfig: kubeconfig}
	restriction := uninstallRestriction(addon, want, wantErr)
	if restriction == "" && wantErr == nil {
		restriction = c.recordedRestriction(ctx, target, key2, want)
	}
	err = c.engine.Uninstall(ctx, target, key2, timeout, restriction)
	if err != nil && clusterDeleting && unreachable(err) {
		logger.Info("TenantCluster is being deleted and its control plane is unreachable: releasing the addon without uninstalling", "cluster", tc.Name, "err", err)
		_ = c.writeStatus(ctx, addon, v1alpha1.TenantAddonDeleting, "ClusterUnreachable",
			"the cluster is being deleted and its control plane is unreachable; the release was not uninstalled: "+err.Error(), metav1.ConditionFalse, addon.Status.HelmRelease)
		return c.dropFinalizer(ctx, addon)
	}
	if err != nil {
		if werr := c.writeStatus(ctx, addon, v1alpha1.TenantAddonDeleting, "UninstallFailed", err.Error(), metav1.ConditionFalse, addon.Status.HelmRelease); werr != nil {
			return werr
		}
		return controllerkit.RequeueAfter(c.backoff(key))
	}
	c.succeeded(key)
	return c.dropFinalizer(ctx, addon)
}

// dropFinalizer lets the deleted addon go.
func (c *Controller) dropFinalizer(ctx context.Context, addon *v1alpha1.TenantAddon) error {
	client := c.butler.ButlerV1alpha1().TenantAddons(addon.Namespace)
	return controllerkit.RemoveFinalizer(ctx, addon.Name, Finalizer, client.Get, client.Update)
}

// kubeconfig reads the cluster's admin kubeconfig from the management cluster.
func (c *Controller) kubeconfig(ctx context.Context, tc *v1alpha1.TenantCluster) ([]byte, error) {
	s, err := c.kube.CoreV1().Secrets(tc.Status.TenantNamespace).Get(ctx, tc.Status.KubeconfigSecretRef.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	for _, k := range component.ManagementKubeconfigKeys {
		if v := s.Data[k]; len(v) > 0 {
			return v, nil
		}
	}
	return nil, apierrors.NewNotFound(v1alpha1.Resource("secrets"), s.Name+" (key "+strings.Join(component.ManagementKubeconfigKeys, ", ")+")")
}

// unreachable says whether err means the cluster's API server could not be reached.
func unreachable(err error) bool {
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"connection refused", "no such host", "i/o timeout", "cluster unreachable", "no route to host", "connection reset"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
