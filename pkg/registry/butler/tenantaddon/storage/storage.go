// Package storage wires tenantaddons to etcd.
package storage

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/tenantaddon"
)

// Storage holds the endpoints of tenantaddons.
type Storage struct {
	// TenantAddon is the main resource.
	TenantAddon *resource.REST
	// Status is tenantaddons/status.
	Status *resource.StatusREST
}

// NewStorage returns the etcd-backed endpoints of tenantaddons.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (Storage, error) {
	strategy := tenantaddon.NewStrategy(scheme)
	main, err := resource.NewStore(optsGetter,
		resource.Names{Plural: "tenantaddons", Singular: "tenantaddon", ShortNames: []string{"ta"}},
		func() runtime.Object { return &butler.TenantAddon{} },
		func() runtime.Object { return &butler.TenantAddonList{} },
		strategy, tenantaddon.Table)
	if err != nil {
		return Storage{}, err
	}
	storage := Storage{TenantAddon: main}
	storage.Status = resource.NewStatusREST(main, strategy)
	return storage, nil
}

// Endpoints maps each served path of tenantaddons to its storage.
func (s Storage) Endpoints() map[string]rest.Storage {
	return map[string]rest.Storage{
		"tenantaddons":        s.TenantAddon,
		"tenantaddons/status": s.Status,
	}
}
