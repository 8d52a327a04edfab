// Package storage wires addondefinitions to etcd.
package storage

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/addondefinition"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Storage holds the endpoints of addondefinitions.
type Storage struct {
	// AddonDefinition is the main resource.
	AddonDefinition *resource.REST
}

// NewStorage returns the etcd-backed endpoints of addondefinitions.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (Storage, error) {
	strategy := addondefinition.NewStrategy(scheme)
	main, err := resource.NewStore(optsGetter,
		resource.Names{Plural: "addondefinitions", Singular: "addondefinition", ShortNames: []string{"ad"}},
		func() runtime.Object { return &butler.AddonDefinition{} },
		func() runtime.Object { return &butler.AddonDefinitionList{} },
		strategy, addondefinition.Table)
	if err != nil {
		return Storage{}, err
	}
	storage := Storage{AddonDefinition: main}
	return storage, nil
}

// Endpoints maps each served path of addondefinitions to its storage.
func (s Storage) Endpoints() map[string]rest.Storage {
	return map[string]rest.Storage{
		"addondefinitions": s.AddonDefinition,
	}
}
