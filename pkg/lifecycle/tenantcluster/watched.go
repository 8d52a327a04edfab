package tenantcluster

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/infra"
)

// watchedKinds are the external kinds whose changes bring a cluster back.
func watchedKinds() []schema.GroupVersionKind {
	kinds := []schema.GroupVersionKind{
		external.ClusterGVK, external.MachineDeploymentGVK, external.MachineHealthCheckGVK,
		external.StewardControlPlaneGVK, external.KamajiControlPlaneGVK, external.KubeadmControlPlaneGVK,
		external.TenantControlPlaneGVK, external.KamajiTenantControlPlaneGVK,
		// The templates are watched only so that their applies, repeated on every reconcile
		// of the workers step, are skipped when they would change nothing (objects.apply).
		external.BootstrapConfigTemplateGVK,
	}
	for _, p := range allProviders {
		cluster, template := infra.Kinds(p)
		kinds = append(kinds, cluster, template)
	}
	return kinds
}

var allProviders = []v1alpha1.ProviderType{v1alpha1.ProviderHarvester, v1alpha1.ProviderNutanix, v1alpha1.ProviderProxmox,
	v1alpha1.ProviderAWS, v1alpha1.ProviderAzure, v1alpha1.ProviderGCP, v1alpha1.ProviderLocal}
