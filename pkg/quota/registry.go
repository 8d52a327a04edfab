package quota

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// RegistryStore is the Store over butler-apiserver's own registries: reads go through the
// stores (a list with no resourceVersion is consistent), and the Team compare-and-swap goes
// straight to the Team's storage, past strategies and admission, as only the Ledger's
// bookkeeping changes.
type RegistryStore struct {
	teams, clusters, configs, providers *genericregistry.Store
}

// storeOf finds the genericregistry.Store behind a served resource.
func storeOf(resources map[string]rest.Storage, name string) (*genericregistry.Store, error) {
	s, ok := resources[name]
	if !ok {
		return nil, fmt.Errorf("resource %q is not served", name)
	}
	if r, ok := s.(*resource.REST); ok {
		return r.Store, nil
	}
	return nil, fmt.Errorf("resource %q is a %T, not a registry store", name, s)
}

// NewRegistryStore returns the Store over the served resources (by path, as installed).
func NewRegistryStore(resources map[string]rest.Storage) (*RegistryStore, error) {
	var s RegistryStore
	var err error
	for _, f := range []struct {
		into **genericregistry.Store
		name string
	}{{&s.teams, "teams"}, {&s.clusters, "tenantclusters"}, {&s.configs, "butlerconfigs"}, {&s.providers, "providerconfigs"}} {
		if *f.into, err = storeOf(resources, f.name); err != nil {
			return nil, err
		}
	}
	return &s, nil
}

func get(ctx context.Context, s *genericregistry.Store, namespace, name string) (runtime.Object, error) {
	ctx = genericapirequest.WithNamespace(ctx, namespace)
	return s.Get(ctx, name, &metav1.GetOptions{})
}

func (s *RegistryStore) Team(ctx context.Context, name string) (*butler.Team, error) {
	obj, err := get(ctx, s.teams, "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*butler.Team), nil
}

func (s *RegistryStore) Config(ctx context.Context) (*butler.ButlerConfig, error) {
	obj, err := get(ctx, s.configs, "", ButlerConfigName)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj.(*butler.ButlerConfig), nil
}

func (s *RegistryStore) Cluster(ctx context.Context, namespace, name string) (*butler.TenantCluster, error) {
	obj, err := get(ctx, s.clusters, namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*butler.TenantCluster), nil
}

func (s *RegistryStore) Clusters(ctx context.Context, namespace string) ([]butler.TenantCluster, error) {
	ctx = genericapirequest.WithNamespace(ctx, namespace)
	obj, err := s.clusters.List(ctx, &metainternalversion.ListOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*butler.TenantClusterList).Items, nil
}

func (s *RegistryStore) ProviderType(ctx context.Context, namespace, name string) (string, error) {
	obj, err := get(ctx, s.providers, namespace, name)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return string(obj.(*butler.ProviderConfig).Spec.Provider), nil
}

func (s *RegistryStore) UpdateTeam(ctx context.Context, name string, update func(*butler.Team) error) error {
	key, err := s.teams.KeyFunc(genericapirequest.WithNamespace(ctx, ""), name)
	if err != nil {
		return err
	}
	err = s.teams.Storage.GuaranteedUpdate(ctx, key, &butler.Team{}, false, nil,
		storage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) {
			team := obj.(*butler.Team).DeepCopy()
			if err := update(team); err != nil {
				return nil, err
			}
			return team, nil
		}), false, nil)
	if storage.IsNotFound(err) {
		return apierrors.NewNotFound(butler.Resource("teams"), name)
	}
	return err
}
