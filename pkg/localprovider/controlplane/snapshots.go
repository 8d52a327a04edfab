package controlplane

import (
	"context"
	"fmt"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/datastore"
)

// TenantStore is where one tenant's data is, for its snapshots and restores: a root client of
// its datastore, its key prefix, and a hold on the datastore's compaction (this provider
// compacts only the datastore it runs; another's owner would have to hold off itself).
type TenantStore struct {
	DataStore string
	// Prefix is where the tenant's kube-apiserver keeps its objects.
	Prefix string
	Client *clientv3.Client
	// HoldCompaction keeps the datastore from compacting until release is called.
	HoldCompaction func() (release func())
	// Fresh and SwitchToFresh, given to a Restorer only: a prefix beside Prefix that no
	// kube-apiserver reads, for the restore to fill, and the step that then makes it the
	// tenant's data (the control plane starts on it) and deletes the rest.
	Fresh         string
	SwitchToFresh func(ctx context.Context) error
}

// Restorer fills a tenant's prefix from a snapshot while its control plane does not run. It
// is called on every reconcile of a TenantControlPlane before its processes are started (stop
// kills them: their state is being replaced): Pending says the control plane must stay stopped
// (a restore is due or under way); its message goes to the status.
type Restorer interface {
	Restore(ctx context.Context, tcp *unstructured.Unstructured, store TenantStore, stop func()) (pending bool, message string, err error)
}

// SetRestorer makes r restore tenants (pkg/localprovider/snapshots); call it before Run.
func (c *Controller) SetRestorer(r Restorer) { c.restorer = r }

// TenantStoreOf is where tcp's data is: as this provider's record of it says (a restore's
// switch changes it before the status), else as its status says; an error while it has none yet.
func (c *Controller) TenantStoreOf(ctx context.Context, tcp *unstructured.Unstructured) (TenantStore, error) {
	c.mu.Lock()
	pl := c.planes[string(tcp.GetUID())]
	c.mu.Unlock()
	if pl != nil {
		pl.mu.Lock()
		name, prefix := pl.rec.DataStore, pl.rec.DataStorePrefix
		pl.mu.Unlock()
		if name != "" && prefix != "" {
			return c.tenantStore(ctx, name, prefix)
		}
	}
	name, schema, user := publishedStorage(tcp)
	if name == "" || schema == "" || user == "" {
		return TenantStore{}, fmt.Errorf("TenantControlPlane %s/%s has no datastore yet", tcp.GetNamespace(), tcp.GetName())
	}
	return c.tenantStore(ctx, name, datastore.NewTenant(user, schema).Prefix)
}

func (c *Controller) tenantStore(ctx context.Context, name, prefix string) (TenantStore, error) {
	sc, err := c.storeClient(ctx, name)
	if err != nil {
		return TenantStore{}, err
	}
	ts := TenantStore{DataStore: name, Prefix: prefix, Client: sc.root, HoldCompaction: func() func() { return func() {} }}
	if local := c.localDataStore(); local != nil && local.name == name {
		ts.HoldCompaction = local.compactor.Hold
	}
	return ts, nil
}

var localMu sync.Mutex

func (c *Controller) localDataStore() *localDataStore {
	localMu.Lock()
	defer localMu.Unlock()
	return c.local
}

// TenantControlPlane reads a TenantControlPlane from the informer.
func (c *Controller) TenantControlPlane(namespace, name string) (*unstructured.Unstructured, bool) {
	obj, ok, err := c.tcps.GetIndexer().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	return obj.(*unstructured.Unstructured), true
}
