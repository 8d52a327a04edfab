package tenantaddon

import (
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// unmetDependencies names the dependencies of addon that are not Installed: its spec.dependsOn
// and, for a catalog addon, the cluster's addons of the definition's dependsOn.
func (c *Controller) unmetDependencies(addon *v1alpha1.TenantAddon, def *v1alpha1.AddonDefinition) []string {
	var waiting []string
	for _, dep := range addon.Spec.DependsOn {
		d, err := c.addons.TenantAddons(addon.Namespace).Get(dep.Name)
		switch {
		case apierrors.IsNotFound(err):
			waiting = append(waiting, dep.Name+" (not found)")
		case err != nil || d.Status.Phase != v1alpha1.TenantAddonInstalled:
			waiting = append(waiting, dep.Name)
		}
	}
	if def == nil || len(def.Spec.DependsOn) == 0 {
		return waiting
	}
	siblings, _ := c.addonIndex.ByIndex(byCluster, addon.Namespace+"/"+addon.Spec.ClusterRef.Name)
	for _, o := range siblings {
		s, ok := o.(*v1alpha1.TenantAddon)
		if !ok || s.Name == addon.Name || !slices.Contains(def.Spec.DependsOn, s.Spec.Addon) {
			continue
		}
		if s.Status.Phase != v1alpha1.TenantAddonInstalled && !slices.Contains(waiting, s.Name) {
			waiting = append(waiting, s.Name)
		}
	}
	return waiting
}

// cycle returns a dependsOn cycle through addon (its names, from addon back to addon), or nil.
func (c *Controller) cycle(addon *v1alpha1.TenantAddon) []string {
	visited := map[string]bool{}
	var path []string
	var walk func(name string) []string
	walk = func(name string) []string {
		if name == addon.Name && len(path) > 0 {
			return append(slices.Clone(path), name)
		}
		if visited[name] {
			return nil
		}
		visited[name] = true
		a := addon
		if name != addon.Name {
			var err error
			if a, err = c.addons.TenantAddons(addon.Namespace).Get(name); err != nil {
				return nil
			}
		}
		path = append(path, name)
		defer func() { path = path[:len(path)-1] }()
		for _, dep := range a.Spec.DependsOn {
			if found := walk(dep.Name); found != nil {
				return found
			}
		}
		return nil
	}
	return walk(addon.Name)
}
