package managementaddon

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/addons"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
)

// fail reports a problem a spec change must fix (no retry until the objects change).
func (c *Controller) fail(ctx context.Context, addon *v1alpha1.ManagementAddon, reason, msg string, rel *addons.ReleaseInfo) error {
	return c.writeStatus(ctx, addon, v1alpha1.TenantAddonFailed, reason, msg, metav1.ConditionFalse, rel)
}

// writeStatus sets phase, message, the Ready condition and (when given) the release, and
// writes the status if it changed. A nil rel keeps the release already reported.
func (c *Controller) writeStatus(ctx context.Context, addon *v1alpha1.ManagementAddon, phase v1alpha1.TenantAddonPhase,
	reason, msg string, ready metav1.ConditionStatus, rel any) error {
	status := addon.Status.DeepCopy()
	status.Phase, status.Message, status.ObservedGeneration = phase, msg, addon.Generation
	switch r := rel.(type) {
	case *addons.ReleaseInfo:
		if r != nil {
			status.HelmRelease = &v1alpha1.HelmReleaseStatus{Name: r.Name, Namespace: r.Namespace, Version: r.ChartVersion,
				Revision: int32(r.Revision), Status: r.Status}
			if r.Status == "deployed" {
				status.InstalledVersion = r.ChartVersion
			}
		}
	case *v1alpha1.HelmReleaseStatus:
		status.HelmRelease = r
	}
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: ConditionReady, Status: ready, Reason: reason, Message: msg, ObservedGeneration: addon.Generation,
	})
	if apiequality.Semantic.DeepEqual(status, &addon.Status) {
		return nil
	}
	before := addon.DeepCopy()
	addon.Status = *status
	updated, err := c.butler.ButlerV1alpha1().ManagementAddons().UpdateStatus(ctx, addon, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	c.written.Wrote(addon.UID, before.ResourceVersion, updated.ResourceVersion)
	c.recordStatus(before, status, reason)
	*addon = *updated
	return nil
}

// recordStatus makes an Event when the phase or the Ready condition's reason moves (a Warning
// when it moves to Failed or Degraded).
func (c *Controller) recordStatus(addon *v1alpha1.ManagementAddon, status *v1alpha1.TenantAddonStatus, reason string) {
	old := meta.FindStatusCondition(addon.Status.Conditions, ConditionReady)
	if addon.Status.Phase == status.Phase && old != nil && old.Reason == reason {
		return
	}
	eventType := corev1.EventTypeNormal
	if status.Phase == v1alpha1.TenantAddonFailed || status.Phase == v1alpha1.TenantAddonDegraded {
		eventType = corev1.EventTypeWarning
	}
	from := string(addon.Status.Phase)
	if from == "" {
		from = string(v1alpha1.TenantAddonPending)
	}
	c.events.Eventf(addon, nil, eventType, reason, "Reconcile", "%s", controllerkit.EventNote(fmt.Sprintf("phase %s -> %s: %s", from, status.Phase, status.Message)))
}
