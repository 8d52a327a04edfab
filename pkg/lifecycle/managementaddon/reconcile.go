package managementaddon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/addons"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
)

var everything = labels.Everything()

// Reconcile brings one ManagementAddon (key: its name) in line with its spec: its release
// planned, then installed or upgraded as its account.
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
	update := c.butler.ButlerV1alpha1().ManagementAddons().Update
	if addon, err = controllerkit.EnsureFinalizer(ctx, addon, Finalizer, update, &c.written); err != nil {
		return err
	}
	target, err := c.target(addon)
	if err != nil {
		return c.fail(ctx, addon, "NoManagementCluster", err.Error(), nil)
	}
	want, err := c.desiredRelease(addon)
	var bad *specError
	if errors.As(err, &bad) {
		return c.fail(ctx, addon, bad.reason, bad.Error(), nil)
	}
	if err != nil {
		return err
	}
	return c.ensureRelease(ctx, key, addon, target, want)
}

// cached is the informer's addon of name (ManagementAddons have no namespace).
func (c *Controller) cached(_, name string) (*v1alpha1.ManagementAddon, error) {
	return c.addons.Get(name)
}

// ensureRelease installs or upgrades want as the addon's account and reports the outcome.
func (c *Controller) ensureRelease(ctx context.Context, key string, addon *v1alpha1.ManagementAddon, target addons.Target, want *desired) error {
	req := addons.Request{
		Target: target, Release: want.release, CreateNamespace: want.createNamespace,
		Chart: want.chart, Values: want.values, Timeout: want.timeout, Wait: true,
		Owner: string(addon.UID),
	}
	res, err := c.engine.Ensure(ctx, req, c.progress(ctx, addon, want))
	if err != nil {
		return c.failed(ctx, key, addon, err)
	}
	rel := res.Release
	c.succeeded(key)
	msg := fmt.Sprintf("chart %s %s, release %s/%s revision %d, installed as ServiceAccount %s/%s", rel.Chart, rel.ChartVersion,
		rel.Namespace, rel.Name, rel.Revision, addon.Spec.ServiceAccountRef.Namespace, addon.Spec.ServiceAccountRef.Name)
	if err := c.writeStatus(ctx, addon, v1alpha1.TenantAddonInstalled, "Installed", msg, metav1.ConditionTrue, &rel); err != nil {
		return err
	}
	return controllerkit.RequeueAfter(resyncInstalled)
}

// progress writes Installing or Upgrading when the engine starts one.
func (c *Controller) progress(ctx context.Context, addon *v1alpha1.ManagementAddon, want *desired) func(addons.Action) {
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

// failed reports an engine failure and asks for a retry after the key's backoff.
func (c *Controller) failed(ctx context.Context, key string, addon *v1alpha1.ManagementAddon, err error) error {
	var op *addons.OperationError
	if !errors.As(err, &op) {
		op = &addons.OperationError{Err: err}
	}
	phase, reason := v1alpha1.TenantAddonFailed, "ChartUnavailable"
	msg := err.Error()
	switch {
	case notGranted(err):
		reason, msg = "AccountNotGranted", accountHint(addon)+": "+msg
	case op.Action == addons.ActionInstall:
		reason = "InstallFailed"
	case op.Action == addons.ActionUpgrade && op.RolledBack:
		phase, reason = v1alpha1.TenantAddonDegraded, "UpgradeFailed"
	case op.Action == addons.ActionUpgrade:
		reason = "UpgradeFailed"
	case op.Release != nil && op.Release.Status == "deployed":
		phase = v1alpha1.TenantAddonDegraded
	}
	if strings.Contains(op.Err.Error(), "belongs to another object") {
		reason = "ReleaseConflict"
	}
	klog.FromContext(ctx).Info("Management addon operation failed", "addon", addon.Name, "reason", reason, "err", err)
	if werr := c.writeStatus(ctx, addon, phase, reason, msg, metav1.ConditionFalse, op.Release); werr != nil {
		return werr
	}
	return controllerkit.RequeueAfter(c.backoff(key))
}

// notGranted says whether kube-apiserver refused butler-apiserver's impersonation of the account
// (its words: `cannot impersonate resource "serviceaccounts"`).
func notGranted(err error) bool {
	return strings.Contains(err.Error(), `cannot impersonate resource "serviceaccounts"`)
}

func accountHint(addon *v1alpha1.ManagementAddon) string {
	a := addon.Spec.ServiceAccountRef
	return fmt.Sprintf("butler-apiserver may not impersonate ServiceAccount %s/%s: list %q in the chart's managementAddons.serviceAccounts, with managementAddons.namespace %q",
		a.Namespace, a.Name, a.Name, a.Namespace)
}

// remove uninstalls a deleted addon's release as its account and lets the object go.
func (c *Controller) remove(ctx context.Context, key string, addon *v1alpha1.ManagementAddon) error {
	if !slices.Contains(addon.Finalizers, Finalizer) {
		return nil
	}
	if addon.Status.Phase != v1alpha1.TenantAddonDeleting {
		if err := c.writeStatus(ctx, addon, v1alpha1.TenantAddonDeleting, "Deleting", "uninstalling the release", metav1.ConditionFalse, addon.Status.HelmRelease); err != nil {
			return err
		}
	}
	release, timeout, known := c.releaseToRemove(addon)
	if !known {
		klog.FromContext(ctx).Info("No release was recorded or can be worked out: nothing to uninstall; releasing the addon", "addon", addon.Name)
		return c.dropFinalizer(ctx, addon)
	}
	target, err := c.target(addon)
	if err == nil {
		err = c.engine.Uninstall(ctx, target, release, timeout, "")
	}
	if err != nil {
		msg := err.Error()
		if notGranted(err) {
			msg = accountHint(addon) + ": " + msg
		}
		if werr := c.writeStatus(ctx, addon, v1alpha1.TenantAddonDeleting, "UninstallFailed", msg, metav1.ConditionFalse, addon.Status.HelmRelease); werr != nil {
			return werr
		}
		return controllerkit.RequeueAfter(c.backoff(key))
	}
	c.succeeded(key)
	c.engine.Forget(target.Cluster)
	return c.dropFinalizer(ctx, addon)
}

// releaseToRemove is the release a deleted addon made: the one its status recorded, else the
// one its spec names now.
func (c *Controller) releaseToRemove(addon *v1alpha1.ManagementAddon) (addons.ReleaseKey, time.Duration, bool) {
	want, err := c.desiredRelease(addon)
	timeout := addons.DefaultTimeout
	if err == nil {
		timeout = want.timeout
	}
	if rel := addon.Status.HelmRelease; rel != nil && rel.Name != "" {
		return addons.ReleaseKey{Name: rel.Name, Namespace: rel.Namespace}, timeout, true
	}
	if err != nil {
		return addons.ReleaseKey{}, 0, false
	}
	return want.release, timeout, true
}

// dropFinalizer lets the deleted addon go.
func (c *Controller) dropFinalizer(ctx context.Context, addon *v1alpha1.ManagementAddon) error {
	client := c.butler.ButlerV1alpha1().ManagementAddons()
	return controllerkit.RemoveFinalizer(ctx, addon.Name, Finalizer, client.Get, client.Update)
}
