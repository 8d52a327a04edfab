// Package addons builds the TenantAddons of a TenantCluster's spec.addons: one per enabled slot,
// in the TenantCluster's own namespace, owned by it. Values stay empty: the addon controller
// layers the cluster's spec.addons.<slot>.values itself.
package addons

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
)

// SlotLabel names the spec.addons slot a TenantAddon comes from.
const SlotLabel = "butler.butlerlabs.dev/addon-slot"

// The spec.addons slots.
const (
	SlotCNI          = "cni"
	SlotLoadBalancer = "loadBalancer"
	SlotCertManager  = "certManager"
	SlotStorage      = "storage"
	SlotIngress      = "ingress"
	SlotGitOps       = "gitops"
)

// The default AddonDefinition of each slot.
const (
	Cilium      = "cilium"
	MetalLB     = "metallb"
	CertManager = "cert-manager"
	Longhorn    = "longhorn"
	Traefik     = "traefik"
	FluxCD      = "fluxcd"
)

// slot is one enabled spec.addons entry.
type slot struct {
	name, addon, version string
}

// enabled lists the enabled slots in install order.
func enabled(a v1alpha1.AddonsSpec) []slot {
	var out []slot
	if a.CNI != nil {
		out = append(out, slot{SlotCNI, or(a.CNI.Provider, Cilium), a.CNI.Version})
	}
	if a.LoadBalancer != nil {
		out = append(out, slot{SlotLoadBalancer, or(a.LoadBalancer.Provider, MetalLB), a.LoadBalancer.Version})
	}
	if a.CertManager != nil && ptr.Deref(a.CertManager.Enabled, true) {
		out = append(out, slot{SlotCertManager, CertManager, a.CertManager.Version})
	}
	if a.Storage != nil {
		out = append(out, slot{SlotStorage, or(a.Storage.Provider, Longhorn), a.Storage.Version})
	}
	if a.Ingress != nil && ptr.Deref(a.Ingress.Enabled, true) {
		out = append(out, slot{SlotIngress, or(a.Ingress.Provider, Traefik), a.Ingress.Version})
	}
	if a.Gitops != nil {
		out = append(out, slot{SlotGitOps, or(a.Gitops.Provider, FluxCD), a.Gitops.Version})
	}
	return out
}

// defaultVersion is ButlerConfig's defaultAddonVersions entry of an addon.
func defaultVersion(cfg *v1alpha1.ButlerConfig, addon string) string {
	if cfg == nil {
		return ""
	}
	v := cfg.Spec.DefaultAddonVersions
	return map[string]string{
		Cilium: v.Cilium, MetalLB: v.Metallb, CertManager: v.CertManager,
		Longhorn: v.Longhorn, Traefik: v.Traefik, FluxCD: v.Fluxcd,
	}[addon]
}

// Name is the TenantAddon of an addon of a cluster.
func Name(cluster, addon string) string { return cluster + "-" + addon }

// TenantAddons are the TenantAddons of the enabled spec.addons entries, named <tc>-<addon>. Every
// addon depends on the CNI addon (nothing runs without a pod network), and the ingress
// controller on the load balancer (its Service needs an address).
func TenantAddons(in component.Input) []*v1alpha1.TenantAddon {
	tc := in.Cluster
	slots := enabled(tc.Spec.Addons)
	names := map[string]string{}
	for _, s := range slots {
		names[s.name] = Name(tc.Name, s.addon)
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
		labels[SlotLabel] = s.name
		var deps []v1alpha1.LocalObjectReference
		if cni, ok := names[SlotCNI]; ok && s.name != SlotCNI {
			deps = append(deps, v1alpha1.LocalObjectReference{Name: cni})
		}
		if lb, ok := names[SlotLoadBalancer]; ok && s.name == SlotIngress {
			deps = append(deps, v1alpha1.LocalObjectReference{Name: lb})
		}
		out = append(out, &v1alpha1.TenantAddon{
			TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "TenantAddon"},
			ObjectMeta: metav1.ObjectMeta{
				Name:            names[s.name],
				Namespace:       tc.Namespace,
				Labels:          labels,
				OwnerReferences: []metav1.OwnerReference{owner},
			},
			Spec: v1alpha1.TenantAddonSpec{
				ClusterRef: v1alpha1.LocalObjectReference{Name: tc.Name},
				Addon:      s.addon,
				Version:    or(s.version, defaultVersion(in.Config, s.addon)),
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
