// Package storage wires teams to etcd.
package storage

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/quota"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/team"
)

// Storage holds the endpoints of teams.
type Storage struct {
	// Team is the main resource.
	Team *resource.REST
	// Status is teams/status.
	Status *resource.StatusREST
}

// NewStorage returns the etcd-backed endpoints of teams.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (Storage, error) {
	strategy := team.NewStrategy(scheme)
	main, err := resource.NewStore(optsGetter,
		resource.Names{Plural: "teams", Singular: "team", ShortNames: []string{"tm"}},
		func() runtime.Object { return &butler.Team{} },
		func() runtime.Object { return &butler.TeamList{} },
		strategy, team.Table)
	if err != nil {
		return Storage{}, err
	}
	keep := resource.KeepAnnotation{Key: quota.SnapshotReservationsAnnotation,
		CreateUpdateStrategy: resource.KeepAnnotation{CreateUpdateStrategy: strategy, Key: quota.ReservationsAnnotation}}
	main.Store.CreateStrategy, main.Store.UpdateStrategy = keep, keep
	storage := Storage{Team: main}
	storage.Status = resource.NewStatusREST(main, strategy)
	return storage, nil
}

// Endpoints maps each served path of teams to its storage.
func (s Storage) Endpoints() map[string]rest.Storage {
	return map[string]rest.Storage{
		"teams":        s.Team,
		"teams/status": s.Status,
	}
}
