package validation

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

func validCatalogAddon() *butler.TenantAddon {
	return &butler.TenantAddon{
		ObjectMeta: metav1.ObjectMeta{Name: "prod-longhorn", Namespace: "team-a", ResourceVersion: "1"},
		Spec: butler.TenantAddonSpec{
			ClusterRef: butler.LocalObjectReference{Name: "prod"},
			Addon:      "longhorn",
			Version:    "1.7.2",
			Values:     raw(`{"defaultSettings":{"defaultReplicaCount":2}}`),
			DependsOn:  []butler.LocalObjectReference{{Name: "prod-cert-manager"}},
		},
	}
}

func validHelmAddon() *butler.TenantAddon {
	return &butler.TenantAddon{
		ObjectMeta: metav1.ObjectMeta{Name: "prod-podinfo", Namespace: "team-a", ResourceVersion: "1"},
		Spec: butler.TenantAddonSpec{
			ClusterRef: butler.LocalObjectReference{Name: "prod"},
			Helm: &butler.HelmChartSpec{
				Repository:      "https://stefanprodan.github.io/podinfo",
				Chart:           "podinfo",
				ReleaseName:     "podinfo",
				Namespace:       "podinfo",
				CreateNamespace: ptr.To(true),
			},
			Version: "6.7.0",
		},
	}
}

func TestValidateTenantAddon(t *testing.T) {
	runCreateCases(t, validCatalogAddon, ValidateTenantAddon, []createCase[butler.TenantAddon]{
		{"cluster scoped", func(o *butler.TenantAddon) { o.Namespace = "" }, []fieldErr{required("metadata.namespace")}},
		{"no clusterRef", func(o *butler.TenantAddon) { o.Spec.ClusterRef.Name = "" }, []fieldErr{required("spec.clusterRef.name")}},
		{"bad clusterRef", func(o *butler.TenantAddon) { o.Spec.ClusterRef.Name = "Prod!" }, []fieldErr{invalid("spec.clusterRef.name")}},
		{"neither addon nor helm", func(o *butler.TenantAddon) { o.Spec.Addon = "" }, []fieldErr{required("spec")}},
		{"both addon and helm", func(o *butler.TenantAddon) { o.Spec.Helm = validHelmAddon().Spec.Helm }, []fieldErr{forbidden("spec")}},
		{"bad addon name", func(o *butler.TenantAddon) { o.Spec.Addon = "Longhorn" }, []fieldErr{invalid("spec.addon")}},
		{"values not an object", func(o *butler.TenantAddon) { o.Spec.Values = raw(`"replicas: 2"`) }, []fieldErr{invalid("spec.values")}},
		{"depends on itself", func(o *butler.TenantAddon) {
			o.Spec.DependsOn = append(o.Spec.DependsOn, butler.LocalObjectReference{Name: "prod-longhorn"})
		}, []fieldErr{invalid("spec.dependsOn[1].name")}},
		{"duplicate dependency", func(o *butler.TenantAddon) {
			o.Spec.DependsOn = append(o.Spec.DependsOn, butler.LocalObjectReference{Name: "prod-cert-manager"})
		}, []fieldErr{dup("spec.dependsOn[1].name")}},
		{"bad dependency names", func(o *butler.TenantAddon) {
			o.Spec.DependsOn = []butler.LocalObjectReference{{}, {Name: "Cert_Manager"}}
		}, []fieldErr{required("spec.dependsOn[0].name"), invalid("spec.dependsOn[1].name")}},
	})
	runCreateCases(t, validHelmAddon, ValidateTenantAddon, []createCase[butler.TenantAddon]{
		{"oci repository", func(o *butler.TenantAddon) { o.Spec.Helm.Repository = "oci://ghcr.io/stefanprodan/charts" }, nil},
		{"optional fields unset", func(o *butler.TenantAddon) { o.Spec.Helm.ReleaseName, o.Spec.Helm.Namespace = "", "" }, nil},
		{"no repository or chart", func(o *butler.TenantAddon) { o.Spec.Helm.Repository, o.Spec.Helm.Chart = "", "" },
			[]fieldErr{required("spec.helm.repository"), required("spec.helm.chart")}},
		{"ftp repository", func(o *butler.TenantAddon) { o.Spec.Helm.Repository = "ftp://charts.example.com" }, []fieldErr{invalid("spec.helm.repository")}},
		{"repository without scheme", func(o *butler.TenantAddon) { o.Spec.Helm.Repository = "charts.example.com" }, []fieldErr{invalid("spec.helm.repository")}},
		{"bad release name and namespace", func(o *butler.TenantAddon) { o.Spec.Helm.ReleaseName, o.Spec.Helm.Namespace = "Pod_Info", "Pod Info" },
			[]fieldErr{invalid("spec.helm.releaseName"), invalid("spec.helm.namespace")}},
		{"release name over Helm's limit", func(o *butler.TenantAddon) { o.Spec.Helm.ReleaseName = strings.Repeat("a", 54) }, []fieldErr{tooLong("spec.helm.releaseName")}},
	})

	neither := validCatalogAddon()
	neither.Spec.Addon = ""
	expectDetail(t, ValidateTenantAddon(neither), "spec", "exactly one of addon or helm")
}

func TestValidateTenantAddonUpdate(t *testing.T) {
	runUpdateCases(t, validCatalogAddon, ValidateTenantAddonUpdate, []updateCase[butler.TenantAddon]{
		{"upgrade", func(o *butler.TenantAddon) { o.Spec.Version = "1.8.0" }, nil},
		{"switch to helm", func(o *butler.TenantAddon) { o.Spec.Addon, o.Spec.Helm = "", validHelmAddon().Spec.Helm }, nil},
		{"move to another cluster", func(o *butler.TenantAddon) { o.Spec.ClusterRef.Name = "staging" }, []fieldErr{invalid("spec.clusterRef")}},
		{"spec rules apply", func(o *butler.TenantAddon) { o.Spec.Values = raw(`[]`) }, []fieldErr{invalid("spec.values")}},
	})
}

// A Team operator swaps their own chart for a catalog addon (a definition that may not exist)
// and deletes the TenantAddon before the switch is installed: the uninstall, decided from the
// spec, ran the old release's hooks ungated when Helm's record carried no restricted label.
func TestAttackTeamChartSwappedForCatalogBeforeDelete(t *testing.T) {
	runUpdateCases(t, validHelmAddon, ValidateTenantAddonUpdate, []updateCase[butler.TenantAddon]{
		{"swap spec.helm for a catalog addon", func(o *butler.TenantAddon) { o.Spec.Helm, o.Spec.Addon = nil, "cert-manager" }, []fieldErr{forbidden("spec.helm")}},
		{"another chart from a repository", func(o *butler.TenantAddon) { o.Spec.Helm.Chart = "other" }, nil},
	})
	runUpdateCases(t, validCatalogAddon, ValidateTenantAddonUpdate, []updateCase[butler.TenantAddon]{
		{"swap the catalog addon for another (one that does not exist)", func(o *butler.TenantAddon) { o.Spec.Addon = "no-such-definition" }, []fieldErr{invalid("spec.addon")}},
	})
}

func TestValidateTenantAddonStatusUpdate(t *testing.T) {
	runUpdateCases(t, validCatalogAddon, ValidateTenantAddonStatusUpdate, []updateCase[butler.TenantAddon]{
		{"installed", func(o *butler.TenantAddon) {
			o.Status = butler.TenantAddonStatus{Phase: butler.TenantAddonInstalled, InstalledVersion: "1.7.2",
				HelmRelease: &butler.HelmReleaseStatus{Name: "longhorn", Namespace: "longhorn-system", Revision: 1, Status: "deployed"}}
		}, nil},
		{"unknown phase", func(o *butler.TenantAddon) { o.Status.Phase = "Running" }, []fieldErr{notSupp("status.phase")}},
		{"negative revision", func(o *butler.TenantAddon) { o.Status.HelmRelease = &butler.HelmReleaseStatus{Revision: -1} }, []fieldErr{invalid("status.helmRelease.revision")}},
	})
}

func validAddonDefinition() *butler.AddonDefinition {
	return &butler.AddonDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "cert-manager", ResourceVersion: "1"},
		Spec: butler.AddonDefinitionSpec{
			DisplayName: "cert-manager",
			Category:    "certmanager",
			Chart: butler.ChartReference{
				Repository:        "https://charts.jetstack.io",
				Name:              "cert-manager",
				DefaultVersion:    "v1.16.2",
				AvailableVersions: []string{"v1.15.3", "v1.16.2"},
			},
			Defaults: &butler.AddonDefaults{
				Namespace:   "cert-manager",
				ReleaseName: "cert-manager",
				Values:      raw(`{"crds":{"enabled":true}}`),
				Timeout:     &metav1.Duration{Duration: 10 * time.Minute},
			},
			Platform:  true,
			DependsOn: []string{"cilium"},
		},
	}
}

func TestValidateAddonDefinition(t *testing.T) {
	runCreateCases(t, validAddonDefinition, ValidateAddonDefinition, []createCase[butler.AddonDefinition]{
		{"namespaced", func(o *butler.AddonDefinition) { o.Namespace = "default" }, []fieldErr{forbidden("metadata.namespace")}},
		{"oci repository", func(o *butler.AddonDefinition) { o.Spec.Chart.Repository = "oci://quay.io/jetstack/charts" }, nil},
		{"absolute local path", func(o *butler.AddonDefinition) { o.Spec.Chart.Repository = "/charts/cert-manager" }, nil},
		{"relative local path", func(o *butler.AddonDefinition) { o.Spec.Chart.Repository = "./charts/cert-manager" }, nil},
		{"bare local path", func(o *butler.AddonDefinition) { o.Spec.Chart.Repository = "charts/cert-manager" }, nil},
		{"ftp repository", func(o *butler.AddonDefinition) { o.Spec.Chart.Repository = "ftp://charts.example.com" }, []fieldErr{invalid("spec.chart.repository")}},
		{"URL without host", func(o *butler.AddonDefinition) { o.Spec.Chart.Repository = "https://" }, []fieldErr{invalid("spec.chart.repository")}},
		{"no repository or name", func(o *butler.AddonDefinition) { o.Spec.Chart.Repository, o.Spec.Chart.Name = "", "" },
			[]fieldErr{required("spec.chart.repository"), required("spec.chart.name")}},
		{"no category", func(o *butler.AddonDefinition) { o.Spec.Category = "" }, []fieldErr{required("spec.category")}},
		{"unknown category", func(o *butler.AddonDefinition) { o.Spec.Category = "networking" }, []fieldErr{notSupp("spec.category")}},
		{"service-mesh category", func(o *butler.AddonDefinition) { o.Spec.Category = "service-mesh" }, nil},
		{"default version not available", func(o *butler.AddonDefinition) { o.Spec.Chart.DefaultVersion = "v1.17.0" }, []fieldErr{notSupp("spec.chart.defaultVersion")}},
		{"default version without list", func(o *butler.AddonDefinition) { o.Spec.Chart.AvailableVersions = nil }, nil},
		{"duplicate available version", func(o *butler.AddonDefinition) { o.Spec.Chart.AvailableVersions = []string{"v1.16.2", "v1.16.2"} },
			[]fieldErr{dup("spec.chart.availableVersions[1]")}},
		{"zero timeout", func(o *butler.AddonDefinition) { o.Spec.Defaults.Timeout = &metav1.Duration{} }, []fieldErr{invalid("spec.defaults.timeout")}},
		{"negative timeout", func(o *butler.AddonDefinition) { o.Spec.Defaults.Timeout = &metav1.Duration{Duration: -time.Second} }, []fieldErr{invalid("spec.defaults.timeout")}},
		{"bad defaults", func(o *butler.AddonDefinition) {
			o.Spec.Defaults.Namespace, o.Spec.Defaults.ReleaseName, o.Spec.Defaults.Values = "Cert Manager", "cert_manager", raw(`[]`)
		}, []fieldErr{invalid("spec.defaults.namespace"), invalid("spec.defaults.releaseName"), invalid("spec.defaults.values")}},
		{"depends on itself", func(o *butler.AddonDefinition) { o.Spec.DependsOn = []string{"cilium", "cert-manager"} }, []fieldErr{invalid("spec.dependsOn[1]")}},
		{"bad dependency", func(o *butler.AddonDefinition) { o.Spec.DependsOn = []string{"", "cilium", "cilium"} },
			[]fieldErr{required("spec.dependsOn[0]"), dup("spec.dependsOn[2]")}},
	})
}

func TestValidateAddonDefinitionUpdate(t *testing.T) {
	runUpdateCases(t, validAddonDefinition, ValidateAddonDefinitionUpdate, []updateCase[butler.AddonDefinition]{
		{"new version", func(o *butler.AddonDefinition) {
			o.Spec.Chart.AvailableVersions = append(o.Spec.Chart.AvailableVersions, "v1.17.0")
			o.Spec.Chart.DefaultVersion = "v1.17.0"
		}, nil},
		{"spec rules apply", func(o *butler.AddonDefinition) { o.Spec.Category = "misc" }, []fieldErr{notSupp("spec.category")}},
		{"rename", func(o *butler.AddonDefinition) { o.Name = "certmanager" }, []fieldErr{invalid("metadata.name")}},
	})
}
