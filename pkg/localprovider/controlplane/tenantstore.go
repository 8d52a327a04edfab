package controlplane

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/datastore"
	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// Files of a tenant's datastore credentials in its PKI directory: the datastore's CA (to trust
// its serving certificate) and the tenant's own client certificate, never the CA's key.
const (
	dataStoreCAFile     = "datastore-ca.crt"
	dataStoreClientStem = "datastore-client"
)

// etcdConn is how a tenant's kube-apiserver reaches its datastore.
type etcdConn struct {
	URLs                      []string
	Prefix                    string // --etcd-prefix, "/<schema>"
	CAFile, CertFile, KeyFile string
}

// storeClient is a root connection to a datastore, kept while its DataStore is unchanged.
type storeClient struct {
	resourceVersion string
	creds           *datastore.Credentials
	root            *clientv3.Client
}

// stores are the datastores this provider connected to, by name.
type stores struct {
	mu      sync.Mutex
	clients map[string]*storeClient
}

// storeClient connects to the DataStore name as its root user (through the Secrets it names),
// reusing the connection while the object is unchanged.
func (c *Controller) storeClient(ctx context.Context, name string) (*storeClient, error) {
	obj, err := c.dataStoreObject(ctx, name)
	if err != nil {
		return nil, err
	}
	c.stores.mu.Lock()
	defer c.stores.mu.Unlock()
	if sc := c.stores.clients[name]; sc != nil && sc.resourceVersion == obj.GetResourceVersion() {
		return sc, nil
	}
	spec, err := datastore.Parse(obj)
	if err != nil {
		return nil, err
	}
	creds, err := datastore.Load(ctx, spec, c.readSecretKey)
	if err != nil {
		return nil, err
	}
	root, err := creds.Connect(creds.Root)
	if err != nil {
		return nil, err
	}
	if old := c.stores.clients[name]; old != nil {
		_ = old.root.Close()
	}
	sc := &storeClient{resourceVersion: obj.GetResourceVersion(), creds: creds, root: root}
	c.stores.clients[name] = sc
	return sc, nil
}

// dataStoreObject reads the DataStore from the informer, or from the management cluster when
// the informer has not seen it yet (this provider's own, just published).
func (c *Controller) dataStoreObject(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	if obj, ok, err := c.dataStores.GetStore().GetByKey(name); err == nil && ok {
		return obj.(*unstructured.Unstructured), nil
	}
	obj, err := c.deps.Dynamic.Resource(datastore.GVR).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("DataStore %s does not exist", name)
	}
	return obj, err
}

func (c *Controller) readSecretKey(ctx context.Context, namespace, name, key string) ([]byte, error) {
	s, err := c.deps.Kube.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	data, ok := s.Data[key]
	if !ok {
		return nil, fmt.Errorf("no key %s", key)
	}
	return data, nil
}

// placeTenant is the datastore a tenant's data goes to: the TenantControlPlane's spec.dataStore
// (the StewardControlPlane's dataStoreName, from the TenantCluster's dataStoreRef), else where it
// was placed before (its record, or its status), else the etcd DataStore with the fewest tenants
// below its limit (annotation localprovider.butlerlabs.dev/max-tenants, or the provider's
// default), none offered to named Teams only (admission's butler.butlerlabs.dev/teams: the
// clusters that name it use it). A placement is reserved at once, so tenants placed together
// count each other. A DataStore named by spec.dataStore holds the same limit: a tenant not on it yet waits for room
// (admission refuses the name when it is full; this holds for requests admitted together).
func (c *Controller) placeTenant(spec tenantSpec, published string, pl *plane) (string, error) {
	pl.mu.Lock()
	placed := pl.rec.DataStore
	pl.mu.Unlock()
	if placed == "" {
		placed = published
	}
	if placed != "" && (spec.DataStore == "" || spec.DataStore == placed) {
		return placed, nil
	}
	uid := spec.UID
	c.mu.Lock()
	defer c.mu.Unlock()
	count := map[string]int{}
	for other, name := range c.tenantsPlaced() {
		if other != uid {
			count[name]++
		}
	}
	var candidates []datastore.Candidate
	for _, obj := range c.dataStores.GetStore().List() {
		s, err := datastore.Parse(obj.(*unstructured.Unstructured))
		if err != nil {
			continue // another driver, or incomplete: not a place for a tenant of this provider
		}
		limit := s.MaxTenants
		if limit == 0 {
			limit = c.opts.DataStoreMaxTenants
		}
		candidate := datastore.Candidate{Name: s.Name, Tenants: count[s.Name], Limit: limit}
		if spec.DataStore == "" {
			if offeredToSomeTeams(obj.(*unstructured.Unstructured)) {
				continue // the platform offered it to Teams, who name it: placing others there would fill it
			}
			candidates = append(candidates, candidate)
		} else if s.Name == spec.DataStore {
			candidates = []datastore.Candidate{candidate}
		}
	}
	if spec.DataStore != "" && len(candidates) == 0 {
		return spec.DataStore, nil // not served by this provider's placement: its connection says why
	}
	name, err := datastore.Place(candidates)
	if err != nil {
		return "", err
	}
	c.placed[uid] = name
	return name, nil
}

// offeredToSomeTeams says whether a DataStore is offered to named Teams only
// (external.DataStoreTeamsAnnotation set, without "*"), as admission reads it.
func offeredToSomeTeams(ds *unstructured.Unstructured) bool {
	v, ok := ds.GetAnnotations()[external.DataStoreTeamsAnnotation]
	if !ok {
		return false
	}
	for _, t := range strings.Split(v, ",") {
		if strings.TrimSpace(t) == "*" {
			return false
		}
	}
	return true
}

// tenantsPlaced is each tenant's datastore by TenantControlPlane UID: what the
// TenantControlPlanes' statuses say (so that tenants not reconciled since a restart count), and
// over it what this provider placed or set up (c.placed). c.mu is held.
func (c *Controller) tenantsPlaced() map[string]string {
	out := map[string]string{}
	if c.tcps != nil {
		for _, obj := range c.tcps.GetStore().List() {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok || u.GetDeletionTimestamp() != nil {
				continue
			}
			if name, _, _ := publishedStorage(u); name != "" {
				out[string(u.GetUID())] = name
			}
		}
	}
	for uid, name := range c.placed {
		out[uid] = name
	}
	return out
}

// ensureTenantStore places the tenant on a datastore, gives it its etcd user and role there and
// its client certificate, records all three, and says how its kube-apiserver connects.
// published is the datastore the TenantControlPlane's status names ("" for a spare).
func (c *Controller) ensureTenantStore(ctx context.Context, spec tenantSpec, published string, pl *plane) (etcdConn, error) {
	name, err := c.placeTenant(spec, published, pl)
	if err != nil {
		return etcdConn{}, err
	}
	sc, err := c.storeClient(ctx, name)
	if err != nil {
		return etcdConn{}, err
	}
	pl.mu.Lock()
	rec := pl.rec
	done := pl.storeSetUp == name
	pl.mu.Unlock()
	tenant := storeTenant(spec, rec)
	if !done {
		if err := datastore.EnsureTenant(ctx, sc.root, tenant); err != nil {
			return etcdConn{}, fmt.Errorf("DataStore %s: %w", name, err)
		}
	}
	dir := pl.paths.pki()
	if _, err := sc.creds.ClientCertificate(dir, dataStoreClientStem, tenant); err != nil {
		return etcdConn{}, err
	}
	if err := pki.WriteFile(filepath.Join(dir, dataStoreCAFile), sc.creds.CA.CertPEM, 0o644); err != nil {
		return etcdConn{}, err
	}
	// The data is in the generation of the tenant's prefix a restore last switched to (on the
	// same datastore), else in the prefix itself.
	data := rec.DataStorePrefix
	if _, ok := datastore.GenerationOf(tenant.Prefix, data); !ok || rec.DataStore != name {
		data = tenant.Prefix
	}
	if rec.DataStore != name || rec.DataStoreUser != tenant.User || rec.DataStorePrefix != data {
		rec.DataStore, rec.DataStoreUser, rec.DataStorePrefix = name, tenant.User, data
		if err := writeRecord(pl.paths, rec); err != nil {
			return etcdConn{}, err
		}
		klog.FromContext(ctx).Info("Tenant placed on a datastore", "datastore", name, "user", tenant.User, "prefix", data)
	}
	c.setUpOn(pl, rec)
	return etcdConn{
		URLs: sc.creds.URLs(), Prefix: etcdPrefix(data),
		CAFile:   filepath.Join(dir, dataStoreCAFile),
		CertFile: pki.CertPath(dir, dataStoreClientStem), KeyFile: pki.KeyPath(dir, dataStoreClientStem),
	}, nil
}

// storeTenant is the tenant's etcd user and prefix: as its spec says (Steward's defaults), but
// for a tenant that took a spare, which keeps the spare's (its running kube-apiserver's).
func storeTenant(spec tenantSpec, rec tenantRecord) datastore.Tenant {
	if rec.FromSpare != "" && rec.DataStoreUser != "" && rec.DataStorePrefix != "" {
		return datastore.Tenant{User: rec.DataStoreUser, Prefix: datastore.RootOf(rec.DataStorePrefix)}
	}
	return datastore.NewTenant(spec.DataStoreUser, spec.DataStoreSchema)
}

// etcdPrefix is kube-apiserver's --etcd-prefix for data under prefix.
func etcdPrefix(prefix string) string { return strings.TrimSuffix(prefix, "/") }

// switchData makes the generation fresh, which a restore filled, the tenant's data: the record
// names it (one file renamed over the last: the step that replaces the data at once; the
// control plane is stopped and starts on it), then everything else under the tenant's prefix
// is deleted. A failed delete leaves only what no kube-apiserver reads, deleted by the next
// switch or with the tenant.
func (c *Controller) switchData(ctx context.Context, pl *plane, store TenantStore, fresh string) error {
	pl.mu.Lock()
	rec := pl.rec
	pl.mu.Unlock()
	root := datastore.RootOf(rec.DataStorePrefix)
	if _, ok := datastore.GenerationOf(root, fresh); !ok || rec.DataStore != store.DataStore {
		return fmt.Errorf("%q is not a generation of the tenant's prefix %q on DataStore %s", fresh, root, rec.DataStore)
	}
	old := rec.DataStorePrefix
	rec.DataStorePrefix = fresh
	if err := writeRecord(pl.paths, rec); err != nil {
		return err
	}
	pl.mu.Lock()
	pl.rec.DataStorePrefix = fresh
	pl.mu.Unlock()
	logger := klog.FromContext(ctx)
	deleted, err := datastore.KeepOnly(ctx, store.Client, root, fresh)
	if err != nil {
		logger.Error(err, "Switched the tenant's data; deleting the data before failed", "from", old, "to", fresh)
		return nil
	}
	logger.Info("Switched the tenant's data to its restored generation", "from", old, "to", fresh, "keysDeleted", deleted)
	return nil
}

// setUpOn records in the plane, and for placement, that the tenant's user and role are in
// rec.DataStore.
func (c *Controller) setUpOn(pl *plane, rec tenantRecord) {
	pl.mu.Lock()
	pl.rec.DataStore, pl.rec.DataStoreUser, pl.rec.DataStorePrefix = rec.DataStore, rec.DataStoreUser, rec.DataStorePrefix
	pl.storeSetUp = rec.DataStore
	pl.mu.Unlock()
	c.mu.Lock()
	c.placed[rec.UID] = rec.DataStore
	c.mu.Unlock()
}

// removeTenantStore deletes the tenant's keys, etcd user and role from its datastore. A
// datastore that no longer exists holds nothing of it.
func (c *Controller) removeTenantStore(ctx context.Context, rec tenantRecord) error {
	if rec.DataStore == "" {
		return nil
	}
	sc, err := c.storeClient(ctx, rec.DataStore)
	if err != nil {
		if _, getErr := c.deps.Dynamic.Resource(datastore.GVR).Get(ctx, rec.DataStore, metav1.GetOptions{}); apierrors.IsNotFound(getErr) {
			klog.FromContext(ctx).Info("The tenant's DataStore is gone; nothing to delete there", "datastore", rec.DataStore)
			return nil
		}
		return err
	}
	deleted, err := datastore.RemoveTenant(ctx, sc.root, datastore.Tenant{User: rec.DataStoreUser, Prefix: datastore.RootOf(rec.DataStorePrefix)})
	if err != nil {
		return fmt.Errorf("DataStore %s: %w", rec.DataStore, err)
	}
	klog.FromContext(ctx).Info("Removed the tenant from its datastore", "datastore", rec.DataStore, "user", rec.DataStoreUser, "keysDeleted", deleted)
	return nil
}

// recordFromStatus is what a TenantControlPlane's status says of its datastore, for a tenant
// whose state directory is gone.
func recordFromStatus(tcp *unstructured.Unstructured, rec tenantRecord) tenantRecord {
	var schema string
	rec.DataStore, schema, rec.DataStoreUser = publishedStorage(tcp)
	if schema != "" && rec.DataStoreUser != "" {
		rec.DataStorePrefix = datastore.NewTenant(rec.DataStoreUser, schema).Prefix
	} else {
		rec.DataStore = ""
	}
	return rec
}

// dataStoreHandler queues every TenantControlPlane when a DataStore comes or changes: one that
// waited for it (named by its dataStoreRef, or for room) may go on.
func (c *Controller) dataStoreHandler() cache.ResourceEventHandler {
	requeue := func() {
		for _, obj := range c.tcps.GetStore().List() {
			c.tcpQueue.Enqueue(obj)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { requeue() },
		UpdateFunc: func(any, any) { requeue() },
	}
}

// closeAll closes every datastore connection.
func (s *stores) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, sc := range s.clients {
		_ = sc.root.Close()
		delete(s.clients, name)
	}
}
