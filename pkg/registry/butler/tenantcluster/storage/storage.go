// Package storage wires tenantclusters to etcd.
package storage

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/tenantcluster"
)

// Storage holds the endpoints of tenantclusters.
type Storage struct {
	// TenantCluster is the main resource.
	TenantCluster *resource.REST
	// Status is tenantclusters/status.
	Status *resource.StatusREST
	// Scale is tenantclusters/scale: an autoscaling/v1 Scale over spec.workers.replicas.
	Scale *ScaleREST
	// Kubeconfig is tenantclusters/kubeconfig: a kubeconfig for the asker, create only.
	Kubeconfig *KubeconfigREST
	// ViewerKubeconfig is tenantclusters/viewerkubeconfig: a read-only one, which viewers may mint.
	ViewerKubeconfig *KubeconfigREST
	// BreakGlassKubeconfig is tenantclusters/breakglasskubeconfig: the platform's short-lived way
	// into a Team's cluster, recorded as an Event.
	BreakGlassKubeconfig *KubeconfigREST
}

// NewStorage returns the etcd-backed endpoints of tenantclusters. teams reads the Teams that own
// clusters; secrets reads kubeconfig Secrets in the management cluster (nil when there is none).
// events records break-glass kubeconfigs (nil with secrets). maxKubeconfigExpiration caps minted
// kubeconfigs.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, teams rest.Getter, secrets corev1client.SecretsGetter, events corev1client.EventsGetter, maxKubeconfigExpiration time.Duration) (Storage, error) {
	strategy := tenantcluster.NewStrategy(scheme)
	main, err := resource.NewStore(optsGetter,
		resource.Names{Plural: "tenantclusters", Singular: "tenantcluster", ShortNames: []string{"tc"}},
		func() runtime.Object { return &butler.TenantCluster{} },
		func() runtime.Object { return &butler.TenantClusterList{} },
		strategy, tenantcluster.Table)
	if err != nil {
		return Storage{}, err
	}
	storage := Storage{TenantCluster: main}
	storage.Status = resource.NewStatusREST(main, strategy)
	storage.Scale = NewScaleREST(main.Store)
	storage.Kubeconfig = NewKubeconfigREST(main.Store, teams, secrets, maxKubeconfigExpiration, false)
	storage.ViewerKubeconfig = NewKubeconfigREST(main.Store, teams, secrets, maxKubeconfigExpiration, true)
	storage.BreakGlassKubeconfig = NewBreakGlassKubeconfigREST(main.Store, secrets, events, maxKubeconfigExpiration)
	return storage, nil
}

// Endpoints maps each served path of tenantclusters to its storage.
func (s Storage) Endpoints() map[string]rest.Storage {
	return map[string]rest.Storage{
		"tenantclusters":                      s.TenantCluster,
		"tenantclusters/status":               s.Status,
		"tenantclusters/scale":                s.Scale,
		"tenantclusters/kubeconfig":           s.Kubeconfig,
		"tenantclusters/viewerkubeconfig":     s.ViewerKubeconfig,
		"tenantclusters/breakglasskubeconfig": s.BreakGlassKubeconfig,
	}
}
