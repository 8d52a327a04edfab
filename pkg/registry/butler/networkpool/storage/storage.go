// Package storage wires networkpools to etcd.
package storage

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/ipam/store"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/networkpool"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Storage holds the endpoints of networkpools.
type Storage struct {
	// NetworkPool is the main resource, its status computed from the allocation state.
	NetworkPool *REST
	// Status is networkpools/status, read only.
	Status *StatusREST
	// Allocate is networkpools/allocate.
	Allocate *AllocateREST
}

// NewStorage returns the etcd-backed endpoints of networkpools. allocations is the
// ipallocations endpoint, which the allocate subresource creates through.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, ipam *store.Store, allocations interface {
	rest.Creater
	rest.Lister
}) (Storage, error) {
	strategy := networkpool.NewStrategy(scheme)
	main, err := resource.NewStore(optsGetter,
		resource.Names{Plural: "networkpools", Singular: "networkpool", ShortNames: []string{"np"}},
		func() runtime.Object { return &butler.NetworkPool{} },
		func() runtime.Object { return &butler.NetworkPoolList{} },
		strategy, networkpool.Table)
	if err != nil {
		return Storage{}, err
	}
	storage := Storage{NetworkPool: &REST{REST: main, ipam: ipam, allocations: allocations}}
	storage.Status = &StatusREST{status: resource.NewStatusREST(main, strategy)}
	storage.Allocate = &AllocateREST{allocations: allocations}
	return storage, nil
}

// Endpoints maps each served path of networkpools to its storage.
func (s Storage) Endpoints() map[string]rest.Storage {
	return map[string]rest.Storage{
		"networkpools":          s.NetworkPool,
		"networkpools/status":   s.Status,
		"networkpools/allocate": s.Allocate,
	}
}
