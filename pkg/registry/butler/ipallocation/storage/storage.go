// Package storage wires ipallocations to etcd.
package storage

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/ipam/store"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/ipallocation"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Storage holds the endpoints of ipallocations.
type Storage struct {
	// IPAllocation is the main resource; create and delete go through the allocator.
	IPAllocation *REST
	// Status is ipallocations/status.
	Status *resource.StatusREST
}

// NewStorage returns the etcd-backed endpoints of ipallocations, allocating through ipam.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, ipam *store.Store) (Storage, error) {
	strategy := ipallocation.NewStrategy(scheme)
	main, err := resource.NewStore(optsGetter,
		resource.Names{Plural: "ipallocations", Singular: "ipallocation", ShortNames: []string{"ipa"}},
		func() runtime.Object { return &butler.IPAllocation{} },
		func() runtime.Object { return &butler.IPAllocationList{} },
		strategy, ipallocation.Table)
	if err != nil {
		return Storage{}, err
	}
	storage := Storage{IPAllocation: &REST{REST: main, ipam: ipam}}
	storage.Status = resource.NewStatusREST(main, strategy)
	return storage, nil
}

// Endpoints maps each served path of ipallocations to its storage.
func (s Storage) Endpoints() map[string]rest.Storage {
	return map[string]rest.Storage{
		"ipallocations":        s.IPAllocation,
		"ipallocations/status": s.Status,
	}
}
