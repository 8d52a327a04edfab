package addons

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/install"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/validation"
)

// bundledCharts is where butler-apiserver's image carries the repository's charts (hack/build-images.sh).
const bundledCharts = "/usr/share/butler/charts"

// TestCatalog checks every shipped AddonDefinition: it decodes strictly, passes the API
// server's validation, names an http(s) or oci repository (or butler's image's charts, which
// must be the repository's charts/ at that version), and its defaults are values a chart can
// take and a version Resolve accepts without a network for exact pins.
func TestCatalog(t *testing.T) {
	files, err := filepath.Glob("../../artifacts/catalog/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	install.Install(scheme)
	want := map[string]bool{"cilium": false, "metallb": false, "cert-manager": false, "longhorn": false,
		"traefik": false, "metrics-server": false, "fluxcd": false, "flux-management": false}
	charts, err := NewCharts(t.TempDir(), 0, FetchPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var def v1alpha1.AddonDefinition
		if err := yaml.UnmarshalStrict(data, &def); err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		var internal butler.AddonDefinition
		if err := scheme.Convert(&def, &internal, nil); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if errs := validation.ValidateAddonDefinition(&internal); len(errs) > 0 {
			t.Errorf("%s: %v", f, errs.ToAggregate())
		}
		if _, ok := want[def.Name]; !ok {
			t.Errorf("%s: unexpected addon %s", f, def.Name)
		}
		want[def.Name] = true
		ref := ChartRef{Repository: def.Spec.Chart.Repository, Name: def.Spec.Chart.Name, Version: def.Spec.Chart.DefaultVersion}
		switch r := ref.Repository; {
		case r == bundledCharts:
			// What hack/build-images.sh copies there.
			ref.Repository = "../../charts"
		case !strings.HasPrefix(r, "https://") && !strings.HasPrefix(r, "oci://"):
			t.Errorf("%s: repository %s is not an upstream URL", f, r)
		}
		if def.Spec.Chart.DefaultVersion == "" || def.Spec.Defaults == nil || def.Spec.Defaults.Namespace == "" || def.Spec.Defaults.Timeout == nil {
			t.Errorf("%s: a version, a namespace and a timeout are expected", f)
		}
		if def.Spec.Defaults != nil {
			if _, err := ValuesFrom(def.Spec.Defaults.Values); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
		if isExact(def.Spec.Chart.DefaultVersion) {
			if v, err := charts.Resolve(context.Background(), ref); err != nil || v != def.Spec.Chart.DefaultVersion {
				t.Errorf("%s: Resolve = %s, %v", f, v, err)
			}
		}
	}
	for name, seen := range want {
		if !seen {
			t.Errorf("the catalog lacks %s", name)
		}
	}
}
