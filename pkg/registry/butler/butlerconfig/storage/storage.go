// Package storage wires butlerconfigs to etcd.
package storage

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/butlerconfig"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Storage holds the endpoints of butlerconfigs.
type Storage struct {
	// ButlerConfig is the main resource.
	ButlerConfig *resource.REST
	// Status is butlerconfigs/status.
	Status *resource.StatusREST
}

// NewStorage returns the etcd-backed endpoints of butlerconfigs.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (Storage, error) {
	strategy := butlerconfig.NewStrategy(scheme)
	main, err := resource.NewStore(optsGetter,
		resource.Names{Plural: "butlerconfigs", Singular: "butlerconfig", ShortNames: []string{"bc"}},
		func() runtime.Object { return &butler.ButlerConfig{} },
		func() runtime.Object { return &butler.ButlerConfigList{} },
		strategy, butlerconfig.Table)
	if err != nil {
		return Storage{}, err
	}
	storage := Storage{ButlerConfig: main}
	storage.Status = resource.NewStatusREST(main, strategy)
	return storage, nil
}

// Endpoints maps each served path of butlerconfigs to its storage.
func (s Storage) Endpoints() map[string]rest.Storage {
	return map[string]rest.Storage{
		"butlerconfigs":        s.ButlerConfig,
		"butlerconfigs/status": s.Status,
	}
}
