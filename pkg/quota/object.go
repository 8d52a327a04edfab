package quota

import (
	"fmt"
	"slices"
	"strings"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/addonslots"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// CheckCluster checks the limits that concern one TenantCluster alone: maxWorkersPerCluster,
// allowedKubernetesVersions, allowedProviders and allowed/denied addons. On update (old not nil)
// only what the update changes is checked, so a limit set later does not freeze existing
// clusters. provider is the provider type of the cluster's ProviderConfig, if known.
func CheckCluster(team string, limits *butler.ResourceLimits, tc, old *butler.TenantCluster, provider string) error {
	var msgs []string
	if max := limits.MaxWorkersPerCluster; max != nil && tc.Spec.Workers.Replicas > *max &&
		(old == nil || tc.Spec.Workers.Replicas > old.Spec.Workers.Replicas) {
		msgs = append(msgs, fmt.Sprintf("maxWorkersPerCluster is %d, requested %d", *max, tc.Spec.Workers.Replicas))
	}
	if allowed := limits.AllowedKubernetesVersions; len(allowed) > 0 &&
		(old == nil || tc.Spec.KubernetesVersion != old.Spec.KubernetesVersion) && !VersionAllowed(tc.Spec.KubernetesVersion, allowed) {
		msgs = append(msgs, fmt.Sprintf("allowedKubernetesVersions are [%s], requested %s", strings.Join(allowed, ", "), tc.Spec.KubernetesVersion))
	}
	if allowed := limits.AllowedProviders; len(allowed) > 0 && (old == nil || providerRef(tc) != providerRef(old)) {
		ref := providerRef(tc)
		if ref == "" || !slices.Contains(allowed, ref) && (provider == "" || !slices.Contains(allowed, provider)) {
			msgs = append(msgs, fmt.Sprintf("allowedProviders are [%s], requested %s", strings.Join(allowed, ", "), describeProvider(ref, provider)))
		}
	}
	var oldAddons []string
	if old != nil {
		oldAddons = ClusterAddons(old)
	}
	for _, a := range ClusterAddons(tc) {
		if slices.Contains(oldAddons, a) {
			continue
		}
		if msg := addonRefused(limits, a); msg != "" {
			msgs = append(msgs, msg)
		}
	}
	return joined(team, msgs)
}

// CheckAddon checks the addon a TenantAddon installs (AddonIdentity) against allowedAddons and
// deniedAddons; oldName is what it installed before an update ("" for a create).
func CheckAddon(team string, limits *butler.ResourceLimits, name, oldName string) error {
	if oldName != "" && oldName == name {
		return nil
	}
	if msg := addonRefused(limits, name); msg != "" {
		return joined(team, []string{msg})
	}
	return nil
}

func joined(team string, msgs []string) error {
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("exceeds the limits of team %q: %s", team, strings.Join(msgs, "; "))
}

func addonRefused(limits *butler.ResourceLimits, addon string) string {
	if slices.Contains(limits.DeniedAddons, addon) {
		return fmt.Sprintf("addon %s is in deniedAddons [%s]", addon, strings.Join(limits.DeniedAddons, ", "))
	}
	if len(limits.AllowedAddons) > 0 && !slices.Contains(limits.AllowedAddons, addon) {
		return fmt.Sprintf("addon %s is not in allowedAddons [%s]", addon, strings.Join(limits.AllowedAddons, ", "))
	}
	return ""
}

func providerRef(tc *butler.TenantCluster) string {
	if tc.Spec.ProviderConfigRef == nil {
		return ""
	}
	return tc.Spec.ProviderConfigRef.Name
}

func describeProvider(ref, provider string) string {
	switch {
	case ref == "":
		return "no providerConfigRef"
	case provider == "":
		return ref
	default:
		return fmt.Sprintf("%s (provider %s)", ref, provider)
	}
}

// VersionAllowed says whether version matches one of allowed: exactly ("v1.31.4"), or as a
// minor line ("v1.31", "v1.31.x", "1.31"). A leading "v" is optional on both sides.
func VersionAllowed(version string, allowed []string) bool {
	v := strings.TrimPrefix(version, "v")
	for _, a := range allowed {
		a = strings.TrimSuffix(strings.TrimPrefix(a, "v"), ".x")
		if v == a || strings.HasPrefix(v, a+".") {
			return true
		}
	}
	return false
}

// ClusterAddons names the addons a TenantCluster's spec installs, as the AddonDefinition
// catalog names them (cilium, metallb, cert-manager, longhorn, traefik, fluxcd, ...): the
// enabled slots of pkg/apis/butler/addonslots.
func ClusterAddons(tc *butler.TenantCluster) []string {
	var a v1alpha1.AddonsSpec
	if err := v1alpha1.Convert_butler_AddonsSpec_To_v1alpha1_AddonsSpec(&tc.Spec.Addons, &a, nil); err != nil {
		return nil // the generated conversion of these types returns no error
	}
	var out []string
	for _, s := range addonslots.Enabled(a) {
		out = append(out, s.Addon)
	}
	return out
}

// AddonIdentity is the addon a TenantAddon installs, as the platform's catalog names it: its
// spec.addon, or the AddonDefinition whose chart is the same repository and chart as its
// spec.helm (listed). A chart no AddonDefinition lists is named "<chart> from <repository>"
// (not listed): a chart's name alone says nothing of where it comes from.
func AddonIdentity(ta *butler.TenantAddon, definitions []butler.AddonDefinition) (name string, listed bool) {
	if ta.Spec.Addon != "" {
		return ta.Spec.Addon, true
	}
	h := ta.Spec.Helm
	if h == nil {
		return "", false
	}
	for _, d := range definitions {
		if d.Spec.Chart.Name == h.Chart && sameRepository(d.Spec.Chart.Repository, h.Repository) {
			return d.Name, true
		}
	}
	return h.Chart + " from " + h.Repository, false
}

func sameRepository(a, b string) bool {
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}
