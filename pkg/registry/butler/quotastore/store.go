// Package quotastore is the quota Ledger's Store over butler-apiserver's own registries. It
// lives in the registry layer, above pkg/quota, so that quota imports no registry.
package quotastore

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/quota"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Store is the quota.Store over butler-apiserver's own registries: reads go through the
// stores (a list with no resourceVersion is consistent; one with a resourceVersion and
// NotOlderThan is served by the watch cache once it has that version), and the Team
// compare-and-swap goes straight to the Team's storage, past strategies and admission, as only
// the Ledger's bookkeeping changes.
//
// Teams, the ButlerConfig and ProviderConfigs, read on every TenantCluster write (the
// ProviderConfig by two plugins), come from the watch cache, as Kubernetes' ResourceQuota and
// LimitRanger admission read theirs from informers: the object is decoded once per change, not
// per request, where a quorum read of each cost more than the rest of admission. The read asks
// for at least the resourceVersion of the last write of that kind through this server, so a
// change made here applies to the next request here; a change through another replica applies
// once this replica's cache has it (milliseconds). One absent from the cache is read from etcd,
// as it may be newer than the cache, and that it is absent is remembered for absentTTL, so a
// namespace without a Team, or a cluster naming a ProviderConfig not made yet, pays no quorum
// read per request. The Ledger's compare-and-swaps check aggregate limits against the Team or
// ProviderConfig they swap, whatever admission read.
type Store struct {
	teams, clusters, configs, providers, definitions, snapshots, strategies, managementAddons *genericregistry.Store
	absent                                                                                    *utilcache.LRUExpireCache
	// written is the resourceVersion of the last write through this server, per store.
	written map[*genericregistry.Store]*atomic.Uint64
}

var _ quota.Store = (*Store)(nil)

// absentTTL is how long a Team or ButlerConfig found in neither the watch cache nor etcd is
// taken as absent without asking etcd again; the watch cache answers as soon as it sees one.
const absentTTL = 10 * time.Second

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

// New returns the Store over the served resources (by path, as installed).
func New(resources map[string]rest.Storage) (*Store, error) {
	s := Store{absent: utilcache.NewLRUExpireCache(4096), written: map[*genericregistry.Store]*atomic.Uint64{}}
	var err error
	for _, f := range []struct {
		into **genericregistry.Store
		name string
	}{{&s.teams, "teams"}, {&s.clusters, "tenantclusters"}, {&s.configs, "butlerconfigs"}, {&s.providers, "providerconfigs"},
		{&s.definitions, "addondefinitions"}, {&s.snapshots, "tenantclustersnapshots"}, {&s.strategies, "updatestrategies"},
		{&s.managementAddons, "managementaddons"}} {
		if *f.into, err = storeOf(resources, f.name); err != nil {
			return nil, err
		}
	}
	for _, store := range []*genericregistry.Store{s.teams, s.configs, s.clusters, s.providers} {
		s.written[store] = recordWrites(store)
	}
	return &s, nil
}

// recordWrites chains the store's after-write hooks to remember the newest resourceVersion
// written.
func recordWrites(store *genericregistry.Store) *atomic.Uint64 {
	var written atomic.Uint64
	record := func(obj runtime.Object) {
		rv, err := store.Storage.Versioner().ObjectResourceVersion(obj)
		if err != nil {
			return
		}
		for {
			if old := written.Load(); rv <= old || written.CompareAndSwap(old, rv) {
				return
			}
		}
	}
	afterCreate, afterUpdate, afterDelete := store.AfterCreate, store.AfterUpdate, store.AfterDelete
	store.AfterCreate = func(obj runtime.Object, options *metav1.CreateOptions) {
		record(obj)
		if afterCreate != nil {
			afterCreate(obj, options)
		}
	}
	store.AfterUpdate = func(obj runtime.Object, options *metav1.UpdateOptions) {
		record(obj)
		if afterUpdate != nil {
			afterUpdate(obj, options)
		}
	}
	store.AfterDelete = func(obj runtime.Object, options *metav1.DeleteOptions) {
		record(obj)
		if afterDelete != nil {
			afterDelete(obj, options)
		}
	}
	return &written
}

func get(ctx context.Context, s *genericregistry.Store, namespace, name string) (runtime.Object, error) {
	ctx = genericapirequest.WithNamespace(ctx, namespace)
	return s.Get(ctx, name, &metav1.GetOptions{})
}

// getCached reads an object from the watch cache, then from etcd if the cache does not have it
// (unless etcd did not have it either within absentTTL) or cannot answer (it has not caught up
// with this server's last write within the cacher's wait). namespace is "" for a
// cluster-scoped object.
func (s *Store) getCached(ctx context.Context, store *genericregistry.Store, namespace, name string) (runtime.Object, error) {
	ctx = genericapirequest.WithNamespace(ctx, namespace)
	rv := s.written[store].Load() // 0: any state the cache has
	obj, err := store.Get(ctx, name, &metav1.GetOptions{ResourceVersion: strconv.FormatUint(rv, 10)})
	if err == nil {
		return obj, nil
	}
	key := store.DefaultQualifiedResource.String() + "/" + namespace + "/" + name
	if _, ok := s.absent.Get(key); ok && apierrors.IsNotFound(err) {
		return nil, err
	}
	obj, err = store.Get(ctx, name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		s.absent.Add(key, struct{}{}, absentTTL)
	}
	return obj, err
}

func (s *Store) Team(ctx context.Context, name string) (*butler.Team, error) {
	obj, err := s.getCached(ctx, s.teams, "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*butler.Team), nil
}

func (s *Store) Config(ctx context.Context) (*butler.ButlerConfig, error) {
	obj, err := s.getCached(ctx, s.configs, "", butler.ButlerConfigName)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj.(*butler.ButlerConfig), nil
}

func (s *Store) Cluster(ctx context.Context, namespace, name string) (*butler.TenantCluster, error) {
	obj, err := get(ctx, s.clusters, namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*butler.TenantCluster), nil
}

func (s *Store) Clusters(ctx context.Context, namespace, notOlderThan string) ([]butler.TenantCluster, error) {
	ctx = genericapirequest.WithNamespace(ctx, namespace)
	opts := &metainternalversion.ListOptions{} // consistent
	if notOlderThan != "" {
		rv, err := strconv.ParseUint(notOlderThan, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("resourceVersion %q: %w", notOlderThan, err)
		}
		opts.ResourceVersion = strconv.FormatUint(max(rv, s.written[s.clusters].Load()), 10)
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	}
	obj, err := s.clusters.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	return obj.(*butler.TenantClusterList).Items, nil
}

// AddonDefinitions lists the catalog from the watch cache (resourceVersion 0): a catalog entry
// added a moment ago may be missed once, and the request retried.
func (s *Store) AddonDefinitions(ctx context.Context) ([]butler.AddonDefinition, error) {
	obj, err := s.definitions.List(genericapirequest.WithNamespace(ctx, ""), &metainternalversion.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	return obj.(*butler.AddonDefinitionList).Items, nil
}

// ManagementAddons lists them from etcd (no resourceVersion: a consistent read), since the
// check it serves is a permission: an addon made a moment ago counts.
func (s *Store) ManagementAddons(ctx context.Context) ([]butler.ManagementAddon, error) {
	obj, err := s.managementAddons.List(genericapirequest.WithNamespace(ctx, ""), &metainternalversion.ListOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*butler.ManagementAddonList).Items, nil
}

func (s *Store) ProviderConfig(ctx context.Context, namespace, name string) (*butler.ProviderConfig, error) {
	obj, err := s.getCached(ctx, s.providers, namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj.(*butler.ProviderConfig), nil
}

func (s *Store) Snapshot(ctx context.Context, namespace, name string) (*butler.TenantClusterSnapshot, error) {
	obj, err := get(ctx, s.snapshots, namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj.(*butler.TenantClusterSnapshot), nil
}

func (s *Store) Snapshots(ctx context.Context, namespace string) ([]butler.TenantClusterSnapshot, error) {
	obj, err := s.snapshots.List(genericapirequest.WithNamespace(ctx, namespace), &metainternalversion.ListOptions{}) // consistent
	if err != nil {
		return nil, err
	}
	return obj.(*butler.TenantClusterSnapshotList).Items, nil
}

func (s *Store) UpdateStrategy(ctx context.Context, namespace, name string) (*butler.UpdateStrategy, error) {
	obj, err := get(ctx, s.strategies, namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj.(*butler.UpdateStrategy), nil
}

func (s *Store) UpdateTeam(ctx context.Context, name string, update func(*butler.Team) error) error {
	return guaranteedUpdate(ctx, s.teams, "", name, &butler.Team{}, func(obj runtime.Object) error { return update(obj.(*butler.Team)) })
}

func (s *Store) UpdateProvider(ctx context.Context, namespace, name string, update func(*butler.ProviderConfig) error) error {
	return guaranteedUpdate(ctx, s.providers, namespace, name, &butler.ProviderConfig{},
		func(obj runtime.Object) error { return update(obj.(*butler.ProviderConfig)) })
}

// guaranteedUpdate is a compare-and-swap of one object straight on the store's storage.
func guaranteedUpdate(ctx context.Context, store *genericregistry.Store, namespace, name string, into runtime.Object,
	update func(runtime.Object) error) error {
	key, err := store.KeyFunc(genericapirequest.WithNamespace(ctx, namespace), name)
	if err != nil {
		return err
	}
	err = store.Storage.GuaranteedUpdate(ctx, key, into, false, nil,
		storage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) {
			obj = obj.DeepCopyObject()
			if err := update(obj); err != nil {
				return nil, err
			}
			return obj, nil
		}), false, nil)
	if storage.IsNotFound(err) {
		return apierrors.NewNotFound(store.DefaultQualifiedResource, name)
	}
	return err
}
