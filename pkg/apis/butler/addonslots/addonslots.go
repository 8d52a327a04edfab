// Package addonslots is the one table of a TenantCluster's spec.addons: its slots in install
// order, the AddonDefinition each installs when it names no provider, and the ButlerConfig's
// default version of each catalog addon. The TenantCluster controller makes a TenantAddon per
// enabled slot from it, the TenantAddon controller reads a slot's version and values through it, and
// admission names a cluster's addons by it (allowedAddons/deniedAddons).
package addonslots

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// Label names the spec.addons slot a TenantAddon was made for.
const Label = "butler.butlerlabs.dev/addon-slot"

// The spec.addons slots, as Label names them.
const (
	CNI          = "cni"
	LoadBalancer = "loadBalancer"
	CertManager  = "certManager"
	Storage      = "storage"
	Ingress      = "ingress"
	GitOps       = "gitops"
)

// The AddonDefinitions the slots install when they name no provider.
const (
	Cilium           = "cilium"
	MetalLB          = "metallb"
	CertManagerAddon = "cert-manager"
	Longhorn         = "longhorn"
	Traefik          = "traefik"
	FluxCD           = "fluxcd"
)

// Slot is one spec.addons entry that is set.
type Slot struct {
	// Name is the slot: CNI, LoadBalancer, ...
	Name string
	// Addon is the AddonDefinition it installs: its provider, else the slot's default.
	Addon   string
	Version string
	// Values are the slot's values (gitops has none).
	Values *runtime.RawExtension
	// Enabled is false for an entry that says enabled: false (certManager, ingress).
	Enabled bool
	// ByWorker: the TenantCluster controller installs it itself, no TenantAddon does. The gitops
	// slot with Flux: its GitOps step applies Flux's controllers built here, with the
	// repository (docs/concepts/gitops.md), where the catalog's chart would be fetched from a
	// public chart repository and never told of the repository.
	ByWorker bool
}

// All lists the entries of a that are set, in install order.
func All(a v1alpha1.AddonsSpec) []Slot {
	var out []Slot
	if s := a.CNI; s != nil {
		out = append(out, Slot{CNI, or(s.Provider, Cilium), s.Version, s.Values, true, false})
	}
	if s := a.LoadBalancer; s != nil {
		out = append(out, Slot{LoadBalancer, or(s.Provider, MetalLB), s.Version, s.Values, true, false})
	}
	if s := a.CertManager; s != nil {
		out = append(out, Slot{CertManager, CertManagerAddon, s.Version, s.Values, ptr.Deref(s.Enabled, true), false})
	}
	if s := a.Storage; s != nil {
		out = append(out, Slot{Storage, or(s.Provider, Longhorn), s.Version, s.Values, true, false})
	}
	if s := a.Ingress; s != nil {
		out = append(out, Slot{Ingress, or(s.Provider, Traefik), s.Version, s.Values, ptr.Deref(s.Enabled, true), false})
	}
	if s := a.Gitops; s != nil {
		addon := or(s.Provider, FluxCD)
		out = append(out, Slot{GitOps, addon, s.Version, nil, true, addon == FluxCD})
	}
	return out
}

// Enabled lists the entries of a that install an addon, in install order.
func Enabled(a v1alpha1.AddonsSpec) []Slot {
	var out []Slot
	for _, s := range All(a) {
		if s.Enabled {
			out = append(out, s)
		}
	}
	return out
}

// Get returns the entry of a that the slot name names, enabled or not.
func Get(a v1alpha1.AddonsSpec, name string) (Slot, bool) {
	for _, s := range All(a) {
		if s.Name == name {
			return s, true
		}
	}
	return Slot{}, false
}

// DefaultVersion is the ButlerConfig's defaultAddonVersions entry of a catalog addon, or "".
// flux2, the community chart's name, takes fluxcd's.
func DefaultVersion(v v1alpha1.AddonVersions, addon string) string {
	return map[string]string{
		Cilium: v.Cilium, MetalLB: v.Metallb, CertManagerAddon: v.CertManager,
		Longhorn: v.Longhorn, Traefik: v.Traefik, FluxCD: v.Fluxcd, "flux2": v.Fluxcd,
	}[addon]
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
