package managementaddon

import (
	"cmp"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/butlerdotdev/butler-apiserver/pkg/addons"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/addonslots"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// desired is the release one ManagementAddon asks for.
type desired struct {
	release         addons.ReleaseKey
	createNamespace bool
	chart           addons.ChartRef
	values          addons.Values
	timeout         time.Duration
}

// specError is a problem in the objects themselves: waiting will not fix it, a change will.
type specError struct {
	reason string
	err    error
}

func (e *specError) Error() string { return e.err.Error() }

// desiredRelease works out the release of addon: the definition's chart and defaults, or
// spec.helm, and the values layered (the definition's defaults, then spec.values).
func (c *Controller) desiredRelease(addon *v1alpha1.ManagementAddon) (*desired, error) {
	d := &desired{timeout: addons.DefaultTimeout, createNamespace: true}
	var layers []*runtime.RawExtension
	switch {
	case addon.Spec.Helm != nil:
		h := addon.Spec.Helm
		d.chart = addons.ChartRef{Repository: h.Repository, Name: h.Chart, Version: addon.Spec.Version}
		d.release = addons.ReleaseKey{Name: cmp.Or(h.ReleaseName, addon.Name), Namespace: h.Namespace}
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
		version := cmp.Or(addon.Spec.Version, c.platformVersion(def.Name), def.Spec.Chart.DefaultVersion)
		d.chart = addons.ChartRef{Repository: def.Spec.Chart.Repository, Name: def.Spec.Chart.Name, Version: version}
		d.release = addons.ReleaseKey{Name: addon.Name}
		if df := def.Spec.Defaults; df != nil {
			d.release = addons.ReleaseKey{Name: cmp.Or(df.ReleaseName, addon.Name), Namespace: df.Namespace}
			if df.CreateNamespace != nil {
				d.createNamespace = *df.CreateNamespace
			}
			if df.Timeout != nil && df.Timeout.Duration > 0 {
				d.timeout = df.Timeout.Duration
			}
			layers = append(layers, df.Values)
		}
		if d.release.Namespace == "" {
			// A management release never lands in default by omission (spec.helm requires one).
			return nil, &specError{reason: "NoNamespace", err: fmt.Errorf("AddonDefinition %q sets no defaults.namespace for the release", def.Name)}
		}
	default:
		return nil, &specError{reason: "InvalidSpec", err: fmt.Errorf("neither spec.addon nor spec.helm is set")}
	}
	values, err := mergeValues(append(layers, addon.Spec.Values)...)
	if err != nil {
		return nil, &specError{reason: "InvalidValues", err: err}
	}
	d.values = values
	return d, nil
}

func mergeValues(raws ...*runtime.RawExtension) (addons.Values, error) {
	layers := make([]addons.Values, 0, len(raws))
	for _, raw := range raws {
		v, err := addons.ValuesFrom(raw)
		if err != nil {
			return nil, err
		}
		layers = append(layers, v)
	}
	return addons.Merge(layers...)
}

// platformVersion is the ButlerConfig's default version for a catalog addon, if it has one.
func (c *Controller) platformVersion(definition string) string {
	cfg, err := c.configs.Get(butler.ButlerConfigName)
	if err != nil {
		return ""
	}
	return addonslots.DefaultVersion(cfg.Spec.DefaultAddonVersions, definition)
}
