// Package storage wires managementaddons to etcd.
package storage

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/managementaddon"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Storage holds the endpoints of managementaddons.
type Storage struct {
	// ManagementAddon is the main resource.
	ManagementAddon *resource.REST
	// Status is managementaddons/status.
	Status *resource.StatusREST
}

// NewStorage returns the etcd-backed endpoints of managementaddons.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (Storage, error) {
	strategy := managementaddon.NewStrategy(scheme)
	main, err := resource.NewStore(optsGetter,
		resource.Names{Plural: "managementaddons", Singular: "managementaddon", ShortNames: []string{"ma"}},
		func() runtime.Object { return &butler.ManagementAddon{} },
		func() runtime.Object { return &butler.ManagementAddonList{} },
		strategy, managementaddon.Table)
	if err != nil {
		return Storage{}, err
	}
	storage := Storage{ManagementAddon: main}
	storage.Status = resource.NewStatusREST(main, strategy)
	return storage, nil
}

// Endpoints maps each served path of managementaddons to its storage.
func (s Storage) Endpoints() map[string]rest.Storage {
	return map[string]rest.Storage{
		"managementaddons":        s.ManagementAddon,
		"managementaddons/status": s.Status,
	}
}
