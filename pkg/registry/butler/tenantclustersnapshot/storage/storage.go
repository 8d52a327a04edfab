// Package storage wires tenantclustersnapshots to etcd.
package storage

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/tenantclustersnapshot"
)

// Storage holds the endpoints of tenantclustersnapshots.
type Storage struct {
	// TenantClusterSnapshot is the main resource.
	TenantClusterSnapshot *resource.REST
	// Status is tenantclustersnapshots/status.
	Status *resource.StatusREST
}

// NewStorage returns the etcd-backed endpoints of tenantclustersnapshots.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (Storage, error) {
	strategy := tenantclustersnapshot.NewStrategy(scheme)
	main, err := resource.NewStore(optsGetter,
		resource.Names{Plural: "tenantclustersnapshots", Singular: "tenantclustersnapshot", ShortNames: []string{"tcs"}},
		func() runtime.Object { return &butler.TenantClusterSnapshot{} },
		func() runtime.Object { return &butler.TenantClusterSnapshotList{} },
		strategy, tenantclustersnapshot.Table)
	if err != nil {
		return Storage{}, err
	}
	return Storage{TenantClusterSnapshot: main, Status: resource.NewStatusREST(main, strategy)}, nil
}

// Endpoints maps each served path of tenantclustersnapshots to its storage.
func (s Storage) Endpoints() map[string]rest.Storage {
	return map[string]rest.Storage{
		"tenantclustersnapshots":        s.TenantClusterSnapshot,
		"tenantclustersnapshots/status": s.Status,
	}
}
