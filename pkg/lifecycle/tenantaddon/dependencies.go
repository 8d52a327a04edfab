package tenantaddon

import (
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// sibling is the TenantAddon name of addon's cluster: dependsOn names addons of the same
// cluster only, so a same-named addon of another cluster in the namespace is not it.
func (c *Controller) sibling(addon *v1alpha1.TenantAddon, name string) (*v1alpha1.TenantAddon, error) {
	a, err := c.addons.TenantAddons(addon.Namespace).Get(name)
	if err != nil {
		return nil, err
	}
	if a.Spec.ClusterRef.Name != addon.Spec.ClusterRef.Name {
		return nil, apierrors.NewNotFound(v1alpha1.Resource("tenantaddons"), name)
	}
	return a, nil
}

// unmetDependencies names the dependencies of addon that are not Installed: its spec.dependsOn
// and, for a catalog addon, the cluster's addons of the definition's dependsOn.
func (c *Controller) unmetDependencies(addon *v1alpha1.TenantAddon, def *v1alpha1.AddonDefinition) []string {
	var waiting []string
	for _, dep := range addon.Spec.DependsOn {
		d, err := c.sibling(addon, dep.Name)
		switch {
		case apierrors.IsNotFound(err):
			waiting = append(waiting, fmt.Sprintf("%s (no such addon of TenantCluster %s)", dep.Name, addon.Spec.ClusterRef.Name))
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
			if a, err = c.sibling(addon, name); err != nil {
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

// dependents names the addons of addon's cluster that depend on it (by their spec.dependsOn, or
// by their definition's dependsOn naming addon's catalog addon) and are still there: a delete
// uninstalls addon only after them, so that nothing is left running on what it needs. Once the
// cluster is being deleted every dependent counts (all go); otherwise only those being deleted
// too (deleting a dependency alone is the user's choice).
func (c *Controller) dependents(addon *v1alpha1.TenantAddon, clusterDeleting bool) []string {
	siblings, _ := c.addonIndex.ByIndex(byCluster, addon.Namespace+"/"+addon.Spec.ClusterRef.Name)
	var names []string
	for _, o := range siblings {
		s, ok := o.(*v1alpha1.TenantAddon)
		if !ok || s.Name == addon.Name || (!clusterDeleting && s.DeletionTimestamp == nil) {
			continue
		}
		depends := slices.ContainsFunc(s.Spec.DependsOn, func(r v1alpha1.LocalObjectReference) bool { return r.Name == addon.Name })
		if !depends && s.Spec.Addon != "" && addon.Spec.Addon != "" && s.Spec.Addon != addon.Spec.Addon {
			if def, err := c.definitions.Get(s.Spec.Addon); err == nil {
				depends = slices.Contains(def.Spec.DependsOn, addon.Spec.Addon)
			}
		}
		if depends {
			names = append(names, s.Name)
		}
	}
	slices.Sort(names)
	return names
}
