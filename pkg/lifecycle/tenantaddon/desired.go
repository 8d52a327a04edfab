package tenantaddon

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/butlerdotdev/butler-apiserver/pkg/addons"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/addonslots"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// desired is the release one TenantAddon asks for, without the cluster it goes to.
type desired struct {
	release         addons.ReleaseKey
	createNamespace bool
	chart           addons.ChartRef
	values          addons.Values
	timeout         time.Duration
	// definition is the catalog entry (nil for spec.helm).
	definition *v1alpha1.AddonDefinition
	// teamValues names the value layers a Team set that hold any value (see restriction).
	teamValues []string
}

// specError is a problem in the objects themselves: waiting will not fix it, a change will.
type specError struct {
	reason string
	err    error
}

func (e *specError) Error() string { return e.err.Error() }

// desiredRelease works out the release of addon in cluster tc.
func (c *Controller) desiredRelease(addon *v1alpha1.TenantAddon, tc *v1alpha1.TenantCluster) (*desired, error) {
	d := &desired{timeout: addons.DefaultTimeout, createNamespace: true}
	var layers []addons.Values
	// add layers one source of values; byTeam says a Team member wrote it (restriction).
	add := func(what string, raw *runtime.RawExtension, byTeam bool) error {
		v, err := addons.ValuesFrom(raw)
		if err != nil {
			return &specError{reason: "InvalidValues", err: fmt.Errorf("%s: %w", what, err)}
		}
		layers = append(layers, v)
		if byTeam && len(v) > 0 {
			d.teamValues = append(d.teamValues, what)
		}
		return nil
	}

	switch {
	case addon.Spec.Helm != nil:
		h := addon.Spec.Helm
		d.chart = addons.ChartRef{Repository: h.Repository, Name: h.Chart, Version: addon.Spec.Version}
		d.release = addons.ReleaseKey{Name: orDefault(h.ReleaseName, addon.Name), Namespace: orDefault(h.Namespace, "default")}
		if h.CreateNamespace != nil {
			d.createNamespace = *h.CreateNamespace
		}
	case addon.Spec.Addon != "":
		def, err := c.definitions.Get(addon.Spec.Addon)
		if apierrors.IsNotFound(err) {
			return nil, &specError{reason: "AddonDefinitionNotFound", err: fmt.Errorf("AddonDefinition %q not found", addon.Spec.Addon)}
		}
		if err != nil {
			return nil, err
		}
		d.definition = def
		slot, _ := addonslots.Get(tc.Spec.Addons, addon.Labels[SlotLabel])
		slotVersion, slotValues := slot.Version, slot.Values
		version := firstSet(addon.Spec.Version, slotVersion, c.platformVersion(def.Name), def.Spec.Chart.DefaultVersion)
		d.chart = addons.ChartRef{Repository: def.Spec.Chart.Repository, Name: def.Spec.Chart.Name, Version: version}
		d.release = addons.ReleaseKey{Name: addon.Name, Namespace: "default"}
		if df := def.Spec.Defaults; df != nil {
			d.release.Name = orDefault(df.ReleaseName, d.release.Name)
			d.release.Namespace = orDefault(df.Namespace, d.release.Namespace)
			if df.CreateNamespace != nil {
				d.createNamespace = *df.CreateNamespace
			}
			if df.Timeout != nil && df.Timeout.Duration > 0 {
				d.timeout = df.Timeout.Duration
			}
			if err := add("AddonDefinition "+def.Name+" defaults.values", df.Values, false); err != nil {
				return nil, err
			}
		}
		if err := add("TenantCluster "+tc.Name+" spec.addons."+addon.Labels[SlotLabel]+".values", slotValues, true); err != nil {
			return nil, err
		}
	default:
		return nil, &specError{reason: "InvalidSpec", err: fmt.Errorf("neither spec.addon nor spec.helm is set")}
	}
	if err := add("spec.values", addon.Spec.Values, true); err != nil {
		return nil, err
	}
	values, err := addons.Merge(layers...)
	if err != nil {
		return nil, &specError{reason: "InvalidValues", err: err}
	}
	d.values = values
	return d, nil
}

// restriction says why the release must install with the least privilege of a Team's own
// chart (addons.Request.Restriction), or "" when it installs as its chart is.
//
// Who set the values decides it. A TenantAddon and its TenantCluster live in a Team's namespace,
// where the Team's operators write them: values on either (spec.values, the cluster's
// spec.addons.<slot>.values) count as a Team's, even when a platform admin happened to write
// them, because the controller cannot tell afterwards and an operator could have. The
// AddonDefinition's defaults.values are the platform's (only a platform admin writes
// definitions), so a catalog chart with those alone is what the platform vetted. A chart with a
// Team's values is rendered and checked, as a chart named by repository always is, unless its
// AddonDefinition sets trustTeamValues: a value can turn into any object (an extraObjects-style
// value), or steer what runs under the chart's own privileged roles (an image), so only the
// platform can vouch for a chart with values it has not seen. The chart's version is the
// platform's repository's to offer and does not count.
func restriction(addon *v1alpha1.TenantAddon, d *desired) string {
	switch {
	case addon.Spec.Helm != nil:
		return "a chart from a repository (not a platform AddonDefinition)"
	case d.definition != nil && len(d.teamValues) > 0 && !d.definition.Spec.TrustTeamValues:
		return fmt.Sprintf("a catalog chart with a Team's values (%s), unless AddonDefinition %s sets trustTeamValues,",
			strings.Join(d.teamValues, ", "), d.definition.Name)
	}
	return ""
}

// uninstallRestriction is the allow-list a release's uninstall goes through: the restriction
// the addon installs with, whatever label Helm's record of the release carries (a release
// recorded before addons.RestrictedLabel existed has none, and its hooks would run ungated).
// When the addon's release can no longer be worked out (its AddonDefinition gone), only a Team's
// own chart (spec.helm) is known to be restricted.
func uninstallRestriction(addon *v1alpha1.TenantAddon, want *desired, err error) string {
	if err != nil || want == nil {
		want = &desired{}
	}
	return restriction(addon, want)
}

// recordedRestriction is the restriction of an uninstall the spec says is the platform's: none
// when Helm's record of the release was made with the values the spec gives now. One made with
// others may hold what a Team's values made (the values were removed, and the addon deleted,
// before an upgrade replaced them), and a release recorded before addons.RestrictedLabel existed
// does not say so itself. A record that cannot be read restricts too (the uninstall then meets
// the same error, which remove handles).
func (c *Controller) recordedRestriction(ctx context.Context, target addons.Target, key addons.ReleaseKey, want *desired) string {
	rel, err := c.engine.Get(ctx, target, key)
	switch {
	case err != nil:
		return "a release whose record could not be read (" + err.Error() + ")"
	case rel == nil || rel.ValuesHash == addons.Hash(want.values):
		return ""
	}
	return fmt.Sprintf("a release made with other values than the spec's now (values sha256:%.12s, the spec's %.12s), perhaps a Team's,",
		rel.ValuesHash, addons.Hash(want.values))
}

// platformVersion is the ButlerConfig's default version for a catalog addon, if it has one.
func (c *Controller) platformVersion(definition string) string {
	cfg, err := c.configs.Get(butler.ButlerConfigName)
	if err != nil {
		return ""
	}
	return addonslots.DefaultVersion(cfg.Spec.DefaultAddonVersions, definition)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func firstSet(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
