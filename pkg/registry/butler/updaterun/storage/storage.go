// Package storage wires updateruns to etcd, with the approve subresource.
package storage

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/updaterun"
)

// Storage holds the endpoints of updateruns.
type Storage struct {
	UpdateRun *resource.REST
	// Status is updateruns/status.
	Status *resource.StatusREST
	// Approve is updateruns/approve: create only, so RBAC can grant approving alone.
	Approve *ApproveREST
}

// NewStorage returns the etcd-backed endpoints of updateruns.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (Storage, error) {
	strategy := updaterun.NewStrategy(scheme)
	main, err := resource.NewStore(optsGetter,
		resource.Names{Plural: "updateruns", Singular: "updaterun", ShortNames: []string{"ur"}},
		func() runtime.Object { return &butler.UpdateRun{} },
		func() runtime.Object { return &butler.UpdateRunList{} },
		strategy, updaterun.Table)
	if err != nil {
		return Storage{}, err
	}
	status := resource.NewStatusREST(main, strategy)
	return Storage{UpdateRun: main, Status: status, Approve: &ApproveREST{status: status, now: time.Now}}, nil
}

// Endpoints maps each served path of updateruns to its storage.
func (s Storage) Endpoints() map[string]rest.Storage {
	return map[string]rest.Storage{
		"updateruns":         s.UpdateRun,
		"updateruns/status":  s.Status,
		"updateruns/approve": s.Approve,
	}
}
