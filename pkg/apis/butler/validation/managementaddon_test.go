package validation

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

func validManagementAddon() *butler.ManagementAddon {
	return &butler.ManagementAddon{
		ObjectMeta: metav1.ObjectMeta{Name: "flux", ResourceVersion: "1"},
		Spec: butler.ManagementAddonSpec{
			Addon:             "flux-management",
			Version:           "2.9.5",
			Values:            raw(`{"logLevel":"info"}`),
			ServiceAccountRef: butler.NamespacedObjectReference{Namespace: "butler-management-addons", Name: "flux-installer"},
		},
	}
}

func validManagementChart() *butler.ManagementAddon {
	o := validManagementAddon()
	o.Spec.Addon = ""
	o.Spec.Helm = validHelmAddon().Spec.Helm
	return o
}

func TestValidateManagementAddon(t *testing.T) {
	runCreateCases(t, validManagementAddon, ValidateManagementAddon, []createCase[butler.ManagementAddon]{
		{"namespaced", func(o *butler.ManagementAddon) { o.Namespace = "team-a" }, []fieldErr{forbidden("metadata.namespace")}},
		{"neither addon nor helm", func(o *butler.ManagementAddon) { o.Spec.Addon = "" }, []fieldErr{required("spec")}},
		{"both addon and helm", func(o *butler.ManagementAddon) { o.Spec.Helm = validManagementChart().Spec.Helm }, []fieldErr{forbidden("spec")}},
		{"bad addon name", func(o *butler.ManagementAddon) { o.Spec.Addon = "Flux!" }, []fieldErr{invalid("spec.addon")}},
		{"values not an object", func(o *butler.ManagementAddon) { o.Spec.Values = raw(`[1]`) }, []fieldErr{invalid("spec.values")}},
		{"no account", func(o *butler.ManagementAddon) { o.Spec.ServiceAccountRef = butler.NamespacedObjectReference{} },
			[]fieldErr{required("spec.serviceAccountRef.namespace"), required("spec.serviceAccountRef.name")}},
		{"bad account", func(o *butler.ManagementAddon) {
			o.Spec.ServiceAccountRef = butler.NamespacedObjectReference{Namespace: "Butler System", Name: "flux_installer"}
		}, []fieldErr{invalid("spec.serviceAccountRef.namespace"), invalid("spec.serviceAccountRef.name")}},
	})
	runCreateCases(t, validManagementChart, ValidateManagementAddon, []createCase[butler.ManagementAddon]{
		{"no namespace", func(o *butler.ManagementAddon) { o.Spec.Helm.Namespace = "" }, []fieldErr{required("spec.helm.namespace")}},
		{"the chart's rules apply", func(o *butler.ManagementAddon) { o.Spec.Helm.Repository = "ftp://charts.example.com" }, []fieldErr{invalid("spec.helm.repository")}},
	})
	noAccount := validManagementAddon()
	noAccount.Spec.ServiceAccountRef.Name = ""
	expectDetail(t, ValidateManagementAddon(noAccount), "spec.serviceAccountRef.name", "installed as")
}

// What names the release stays, so the uninstall at delete removes the release that was made.
func TestValidateManagementAddonUpdate(t *testing.T) {
	runUpdateCases(t, validManagementAddon, ValidateManagementAddonUpdate, []updateCase[butler.ManagementAddon]{
		{"upgrade", func(o *butler.ManagementAddon) { o.Spec.Version = "2.10.0" }, nil},
		{"another account", func(o *butler.ManagementAddon) { o.Spec.ServiceAccountRef.Name = "flux-narrower" }, nil},
		{"another addon", func(o *butler.ManagementAddon) { o.Spec.Addon = "cert-manager" }, []fieldErr{invalid("spec.addon")}},
		{"swap for a chart", func(o *butler.ManagementAddon) { o.Spec.Addon, o.Spec.Helm = "", validManagementChart().Spec.Helm },
			[]fieldErr{invalid("spec.addon"), forbidden("spec.helm")}},
		{"spec rules apply", func(o *butler.ManagementAddon) { o.Spec.ServiceAccountRef.Namespace = "" }, []fieldErr{required("spec.serviceAccountRef.namespace")}},
	})
	runUpdateCases(t, validManagementChart, ValidateManagementAddonUpdate, []updateCase[butler.ManagementAddon]{
		{"another repository", func(o *butler.ManagementAddon) { o.Spec.Helm.Repository = "oci://ghcr.io/example/charts" }, nil},
		{"another chart", func(o *butler.ManagementAddon) { o.Spec.Helm.Chart = "other" }, []fieldErr{invalid("spec.helm.chart")}},
		{"another release", func(o *butler.ManagementAddon) { o.Spec.Helm.ReleaseName = "other" }, []fieldErr{invalid("spec.helm.releaseName")}},
		{"another namespace", func(o *butler.ManagementAddon) { o.Spec.Helm.Namespace = "other" }, []fieldErr{invalid("spec.helm.namespace")}},
	})
}

func TestValidateManagementAddonStatusUpdate(t *testing.T) {
	runUpdateCases(t, validManagementAddon, ValidateManagementAddonStatusUpdate, []updateCase[butler.ManagementAddon]{
		{"installed", func(o *butler.ManagementAddon) {
			o.Status = butler.TenantAddonStatus{Phase: butler.TenantAddonInstalled, InstalledVersion: "2.9.5",
				HelmRelease: &butler.HelmReleaseStatus{Name: "flux", Namespace: "flux-system", Revision: 1, Status: "deployed"}}
		}, nil},
		{"unknown phase", func(o *butler.ManagementAddon) { o.Status.Phase = "Running" }, []fieldErr{notSupp("status.phase")}},
		{"negative revision", func(o *butler.ManagementAddon) { o.Status.HelmRelease = &butler.HelmReleaseStatus{Revision: -1} }, []fieldErr{invalid("status.helmRelease.revision")}},
	})
}
