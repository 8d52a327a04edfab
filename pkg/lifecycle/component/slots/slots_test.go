package slots_test

import (
	"fmt"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/componenttest"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/slots"
)

// summary is what a test checks of a TenantAddon: name addon@version slot deps.
func summary(a *v1alpha1.TenantAddon) string {
	var deps []string
	for _, d := range a.Spec.DependsOn {
		deps = append(deps, d.Name)
	}
	return fmt.Sprintf("%s %s@%s %s %v", a.Name, a.Spec.Addon, a.Spec.Version, a.Labels[slots.SlotLabel], deps)
}

func TestTenantAddons(t *testing.T) {
	for _, tc := range []struct {
		name   string
		addons v1alpha1.AddonsSpec
		config func(c *v1alpha1.ButlerConfig) *v1alpha1.ButlerConfig
		want   []string
	}{
		{"none", v1alpha1.AddonsSpec{}, nil, nil},
		{"the fixture: cni, load balancer, ingress", componenttest.Cluster().Spec.Addons, nil, []string{
			"prod-cilium cilium@1.18.2 cni []",
			"prod-metallb metallb@0.14.9 loadBalancer [prod-cilium]",
			"prod-traefik traefik@37.1.1 ingress [prod-cilium prod-metallb]",
		}},
		{"every slot, providers and versions", v1alpha1.AddonsSpec{
			CNI:          &v1alpha1.CNIAddon{Version: "1.17.0"},
			LoadBalancer: &v1alpha1.LoadBalancerAddon{},
			CertManager:  &v1alpha1.CertManagerAddon{},
			Storage:      &v1alpha1.StorageAddon{Provider: "linstor", Version: "2.1"},
			Ingress:      &v1alpha1.IngressAddon{Provider: "nginx"},
			Gitops:       &v1alpha1.GitOpsAddon{Provider: "argocd", Repository: &v1alpha1.GitRepository{URL: "https://git.example.com/prod"}},
		}, nil, []string{
			"prod-cilium cilium@1.17.0 cni []",
			"prod-metallb metallb@0.15.2 loadBalancer [prod-cilium]",
			"prod-cert-manager cert-manager@ certManager [prod-cilium]",
			"prod-linstor linstor@2.1 storage [prod-cilium]",
			"prod-nginx nginx@ ingress [prod-cilium prod-metallb]",
			"prod-argocd argocd@ gitops [prod-cilium]",
		}},
		{"disabled entries", v1alpha1.AddonsSpec{
			CertManager: &v1alpha1.CertManagerAddon{Enabled: ptr.To(false)},
			Ingress:     &v1alpha1.IngressAddon{Enabled: ptr.To(false), Provider: "traefik"},
			Gitops:      &v1alpha1.GitOpsAddon{},
		}, nil, nil},
		// Flux is the GitOps step's (the TenantCluster controller's), not a TenantAddon of the catalog's chart.
		{"gitops with Flux", v1alpha1.AddonsSpec{CNI: &v1alpha1.CNIAddon{}, Gitops: &v1alpha1.GitOpsAddon{Provider: "fluxcd",
			Repository: &v1alpha1.GitRepository{URL: "https://git.example.com/prod"}}}, nil, []string{"prod-cilium cilium@1.18.2 cni []"}},
		{"ingress without a load balancer or CNI", v1alpha1.AddonsSpec{Ingress: &v1alpha1.IngressAddon{}}, nil,
			[]string{"prod-traefik traefik@37.1.1 ingress []"}},
		{"no ButlerConfig: no default versions", v1alpha1.AddonsSpec{CNI: &v1alpha1.CNIAddon{}, Storage: &v1alpha1.StorageAddon{}},
			func(*v1alpha1.ButlerConfig) *v1alpha1.ButlerConfig { return nil },
			[]string{"prod-cilium cilium@ cni []", "prod-longhorn longhorn@ storage [prod-cilium]"}},
		{"defaults from ButlerConfig", v1alpha1.AddonsSpec{CertManager: &v1alpha1.CertManagerAddon{}, Storage: &v1alpha1.StorageAddon{}, Gitops: &v1alpha1.GitOpsAddon{}},
			func(c *v1alpha1.ButlerConfig) *v1alpha1.ButlerConfig {
				c.Spec.DefaultAddonVersions.CertManager, c.Spec.DefaultAddonVersions.Longhorn, c.Spec.DefaultAddonVersions.Fluxcd = "v1.19.1", "1.10.0", "2.7.0"
				return c
			},
			[]string{"prod-cert-manager cert-manager@v1.19.1 certManager []", "prod-longhorn longhorn@1.10.0 storage []"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := componenttest.Input(v1alpha1.ProviderLocal)
			in.Cluster.Spec.Addons = tc.addons
			if tc.config != nil {
				in.Config = tc.config(in.Config)
			}
			got := slots.TenantAddons(in)
			var sums []string
			for _, a := range got {
				sums = append(sums, summary(a))
				if a.Namespace != "team-a" || a.Spec.ClusterRef.Name != "prod" || a.Spec.Values != nil || a.Spec.Helm != nil {
					t.Errorf("%s: namespace %s, clusterRef %s, values %v, helm %v", a.Name, a.Namespace, a.Spec.ClusterRef.Name, a.Spec.Values, a.Spec.Helm)
				}
				if a.APIVersion != "butler.butlerlabs.dev/v1alpha1" || a.Kind != "TenantAddon" {
					t.Errorf("%s: %s %s", a.Name, a.APIVersion, a.Kind)
				}
				for k, v := range component.Labels(in) {
					if a.Labels[k] != v {
						t.Errorf("%s: label %s=%q, want %q", a.Name, k, a.Labels[k], v)
					}
				}
				if len(a.OwnerReferences) != 1 {
					t.Fatalf("%s: owner references %v", a.Name, a.OwnerReferences)
				}
				o := a.OwnerReferences[0]
				if o.Kind != "TenantCluster" || o.Name != "prod" || o.UID != in.Cluster.UID || !ptr.Deref(o.Controller, false) ||
					o.APIVersion != "butler.butlerlabs.dev/v1alpha1" {
					t.Errorf("%s: owner %+v", a.Name, o)
				}
			}
			if fmt.Sprint(sums) != fmt.Sprint(tc.want) {
				t.Errorf("got\n  %v\nwant\n  %v", sums, tc.want)
			}
		})
	}
}
