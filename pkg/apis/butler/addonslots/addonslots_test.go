package addonslots

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

func TestSlots(t *testing.T) {
	values := &runtime.RawExtension{Raw: []byte(`{"a": 1}`)}
	a := v1alpha1.AddonsSpec{
		CNI:          &v1alpha1.CNIAddon{Version: "1.17.0", Values: values},
		LoadBalancer: &v1alpha1.LoadBalancerAddon{},
		CertManager:  &v1alpha1.CertManagerAddon{Enabled: ptr.To(false), Version: "v1.19.0", Values: values},
		Storage:      &v1alpha1.StorageAddon{Provider: "linstor"},
		Ingress:      &v1alpha1.IngressAddon{Enabled: ptr.To(true)},
		Gitops:       &v1alpha1.GitOpsAddon{Provider: "flux2", Version: "2.7.0"},
	}
	var all, enabled []string
	for _, s := range All(a) {
		all = append(all, fmt.Sprintf("%s=%s@%s", s.Name, s.Addon, s.Version))
	}
	for _, s := range Enabled(a) {
		enabled = append(enabled, s.Name)
	}
	if got, want := fmt.Sprint(all), "[cni=cilium@1.17.0 loadBalancer=metallb@ certManager=cert-manager@v1.19.0 storage=linstor@ ingress=traefik@ gitops=flux2@2.7.0]"; got != want {
		t.Errorf("All = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(enabled), "[cni loadBalancer storage ingress gitops]"; got != want {
		t.Errorf("Enabled = %s, want %s", got, want)
	}
	// A disabled entry still has its version and values (an addon made for it earlier reads them).
	if s, ok := Get(a, CertManager); !ok || s.Enabled || s.Version != "v1.19.0" || s.Values != values {
		t.Errorf("Get(certManager) = %+v, %v", s, ok)
	}
	if s, ok := Get(a, GitOps); !ok || s.Values != nil {
		t.Errorf("Get(gitops) = %+v, %v", s, ok)
	}
	if _, ok := Get(v1alpha1.AddonsSpec{}, CNI); ok {
		t.Error("Get of an entry not set")
	}
	v := v1alpha1.AddonVersions{Cilium: "1", Metallb: "2", CertManager: "3", Longhorn: "4", Traefik: "5", Fluxcd: "6"}
	for addon, want := range map[string]string{"cilium": "1", "metallb": "2", "cert-manager": "3", "longhorn": "4", "traefik": "5",
		"fluxcd": "6", "flux2": "6", "argocd": "", "linstor": ""} {
		if got := DefaultVersion(v, addon); got != want {
			t.Errorf("DefaultVersion(%s) = %q, want %q", addon, got, want)
		}
	}
}
