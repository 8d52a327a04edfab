// Package storage wires updatestrategies to etcd.
package storage

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/updatestrategy"
)

// Storage holds the endpoint of updatestrategies.
type Storage struct {
	UpdateStrategy *resource.REST
}

// NewStorage returns the etcd-backed endpoint of updatestrategies.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (Storage, error) {
	main, err := resource.NewStore(optsGetter,
		resource.Names{Plural: "updatestrategies", Singular: "updatestrategy", ShortNames: []string{"ustr"}},
		func() runtime.Object { return &butler.UpdateStrategy{} },
		func() runtime.Object { return &butler.UpdateStrategyList{} },
		updatestrategy.NewStrategy(scheme), updatestrategy.Table)
	return Storage{UpdateStrategy: main}, err
}

// Endpoints maps each served path of updatestrategies to its storage.
func (s Storage) Endpoints() map[string]rest.Storage {
	return map[string]rest.Storage{"updatestrategies": s.UpdateStrategy}
}
