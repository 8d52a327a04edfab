package tenantcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/slots"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// ensureAddons keeps a TenantAddon per entry of spec.addons (and removes those of entries
// gone); ready once every addon of the cluster, its own and those users added, is Installed.
func (c *Controller) ensureAddons(ctx context.Context, s *state) (steps.Result, error) {
	want := slots.TenantAddons(s.in)
	client := c.butler.ButlerV1alpha1().TenantAddons(s.tc.Namespace)
	wanted := map[string]bool{}
	var created []string
	for _, a := range want {
		wanted[a.Name] = true
		got, err := c.addons.TenantAddons(s.tc.Namespace).Get(a.Name)
		switch {
		case apierrors.IsNotFound(err):
			if _, err := client.Create(ctx, a, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return steps.Result{}, err
			}
			created = append(created, a.Name)
		case err != nil:
			return steps.Result{}, err
		case !apiequality.Semantic.DeepEqual(got.Spec, a.Spec) || !hasLabels(got.Labels, a.Labels):
			updated := got.DeepCopy()
			updated.Spec = a.Spec
			for k, v := range a.Labels {
				if updated.Labels == nil {
					updated.Labels = map[string]string{}
				}
				updated.Labels[k] = v
			}
			if _, err := client.Update(ctx, updated, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
				return steps.Result{}, err
			}
		}
	}
	// The cluster's own addons whose entry is gone.
	own, err := c.addons.TenantAddons(s.tc.Namespace).List(k8slabels.SelectorFromSet(k8slabels.Set{external.TenantClusterLabel: s.tc.Name, external.TenantClusterNamespaceLabel: s.tc.Namespace}))
	if err != nil {
		return steps.Result{}, err
	}
	for _, a := range own {
		if !wanted[a.Name] && a.DeletionTimestamp == nil {
			if err := client.Delete(ctx, a.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return steps.Result{}, err
			}
		}
	}

	all, err := c.clusterAddons(s)
	if err != nil {
		return steps.Result{}, err
	}
	if len(created) > 0 {
		// Not in the cache yet: nothing of them is installed.
		return steps.Waiting("Installing", "created TenantAddons %s", strings.Join(created, ", ")), nil
	}
	if len(all) == 0 {
		return steps.Ready("NoAddons", "the cluster has no addons"), nil
	}
	var waiting, failed []string
	s.addons = s.addons[:0]
	for _, a := range all {
		version := a.Status.InstalledVersion
		if version == "" {
			version = a.Spec.Version
		}
		phase := orDefault(string(a.Status.Phase), string(v1alpha1.TenantAddonPending))
		s.addons = append(s.addons, v1alpha1.ObservedAddon{Name: a.Name, Version: version, Status: phase})
		switch {
		case wanted[a.Name] && a.Generation != 0 && a.Status.ObservedGeneration != a.Generation && a.Status.Phase == v1alpha1.TenantAddonInstalled:
			waiting = append(waiting, a.Name+" (changed)")
		case a.Status.Phase == v1alpha1.TenantAddonInstalled:
		case a.Status.Phase == v1alpha1.TenantAddonFailed:
			failed = append(failed, fmt.Sprintf("%s: %s", a.Name, a.Status.Message))
		default:
			waiting = append(waiting, fmt.Sprintf("%s (%s)", a.Name, phase))
		}
	}
	switch {
	case len(failed) > 0:
		return steps.Failure("AddonFailed", "%s", strings.Join(failed, "; ")), nil
	case len(waiting) > 0:
		return steps.Waiting("Installing", "%d of %d addons installed; waiting for %s", len(all)-len(waiting), len(all), strings.Join(waiting, ", ")), nil
	}
	return steps.Ready("AddonsInstalled", "%d addons installed", len(all)), nil
}

// clusterAddons are every TenantAddon of the cluster: its own and those users point at it.
func (c *Controller) clusterAddons(s *state) ([]*v1alpha1.TenantAddon, error) {
	in, err := c.addons.TenantAddons(s.tc.Namespace).List(k8slabels.Everything())
	if err != nil {
		return nil, err
	}
	out := slices.DeleteFunc(in, func(a *v1alpha1.TenantAddon) bool { return a.Spec.ClusterRef.Name != s.tc.Name })
	slices.SortFunc(out, func(a, b *v1alpha1.TenantAddon) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// cleanupAddons deletes every addon of the cluster and waits until the TenantAddon controller has
// uninstalled them (its finalizer), before the control plane they live in goes.
func (c *Controller) cleanupAddons(ctx context.Context, s *state) (bool, error) {
	all, err := c.clusterAddons(s)
	if err != nil {
		return false, err
	}
	for _, a := range all {
		if a.DeletionTimestamp != nil {
			continue
		}
		err := c.butler.ButlerV1alpha1().TenantAddons(a.Namespace).Delete(ctx, a.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
	}
	return len(all) == 0, nil
}
