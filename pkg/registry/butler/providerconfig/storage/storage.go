// Package storage wires providerconfigs to etcd.
package storage

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/quota"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/providerconfig"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Storage holds the endpoints of providerconfigs.
type Storage struct {
	// ProviderConfig is the main resource.
	ProviderConfig *resource.REST
	// Status is providerconfigs/status.
	Status *resource.StatusREST
}

// NewStorage returns the etcd-backed endpoints of providerconfigs. teams reads Teams, to warn of
// a ProviderConfig shared with the platform from a Team's namespace.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, teams rest.Getter) (Storage, error) {
	strategy := providerconfig.NewStrategy(scheme, teams)
	main, err := resource.NewStore(optsGetter,
		resource.Names{Plural: "providerconfigs", Singular: "providerconfig", ShortNames: []string{"pc"}},
		func() runtime.Object { return &butler.ProviderConfig{} },
		func() runtime.Object { return &butler.ProviderConfigList{} },
		strategy, providerconfig.Table)
	if err != nil {
		return Storage{}, err
	}
	keep := resource.KeepAnnotation{CreateUpdateStrategy: strategy, Key: quota.ReservationsAnnotation}
	main.Store.CreateStrategy, main.Store.UpdateStrategy = keep, keep
	storage := Storage{ProviderConfig: main}
	storage.Status = resource.NewStatusREST(main, strategy)
	return storage, nil
}

// Endpoints maps each served path of providerconfigs to its storage.
func (s Storage) Endpoints() map[string]rest.Storage {
	return map[string]rest.Storage{
		"providerconfigs":        s.ProviderConfig,
		"providerconfigs/status": s.Status,
	}
}
