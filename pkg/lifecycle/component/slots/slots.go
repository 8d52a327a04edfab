// Package slots builds the TenantAddons of a TenantCluster's spec.addons: one per enabled slot
// (the table is pkg/apis/butler/addonslots), in the TenantCluster's own namespace, owned by it. Values stay empty: the addon controller
// layers the cluster's spec.addons.<slot>.values itself.
package slots

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/addonslots"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
)

// SlotLabel names the spec.addons slot a TenantAddon comes from.
const SlotLabel = addonslots.Label

// defaultVersion is ButlerConfig's defaultAddonVersions entry of an addon.
func defaultVersion(cfg *v1alpha1.ButlerConfig, addon string) string {
	if cfg == nil {
		return ""
	}
	return addonslots.DefaultVersion(cfg.Spec.DefaultAddonVersions, addon)
}

// Name is the TenantAddon of an addon of a cluster.
func Name(cluster, addon string) string { return cluster + "-" + addon }

// TenantAddons are the TenantAddons of the enabled spec.addons entries, named <tc>-<addon>. Every
// addon depends on the CNI addon (nothing runs without a pod network), and the ingress
// controller on the load balancer (its Service needs an address).
func TenantAddons(in component.Input) []*v1alpha1.TenantAddon {
	tc := in.Cluster
	// A slot the TenantCluster controller installs itself (gitops with Flux) has no TenantAddon.
	slots := slices.DeleteFunc(addonslots.Enabled(tc.Spec.Addons), func(s addonslots.Slot) bool { return s.ByWorker })
	names := map[string]string{}
	for _, s := range slots {
		names[s.Name] = Name(tc.Name, s.Addon)
	}
	owner := metav1.OwnerReference{
		APIVersion:         v1alpha1.SchemeGroupVersion.String(),
		Kind:               "TenantCluster",
		Name:               tc.Name,
		UID:                tc.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
	out := make([]*v1alpha1.TenantAddon, 0, len(slots))
	for _, s := range slots {
		labels := component.Labels(in)
		labels[SlotLabel] = s.Name
		var deps []v1alpha1.LocalObjectReference
		if cni, ok := names[addonslots.CNI]; ok && s.Name != addonslots.CNI {
			deps = append(deps, v1alpha1.LocalObjectReference{Name: cni})
		}
		if lb, ok := names[addonslots.LoadBalancer]; ok && s.Name == addonslots.Ingress {
			deps = append(deps, v1alpha1.LocalObjectReference{Name: lb})
		}
		out = append(out, &v1alpha1.TenantAddon{
			TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "TenantAddon"},
			ObjectMeta: metav1.ObjectMeta{
				Name:            names[s.Name],
				Namespace:       tc.Namespace,
				Labels:          labels,
				OwnerReferences: []metav1.OwnerReference{owner},
			},
			Spec: v1alpha1.TenantAddonSpec{
				ClusterRef: v1alpha1.LocalObjectReference{Name: tc.Name},
				Addon:      s.Addon,
				Version:    or(s.Version, defaultVersion(in.Config, s.Addon)),
				DependsOn:  deps,
			},
		})
	}
	return out
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
