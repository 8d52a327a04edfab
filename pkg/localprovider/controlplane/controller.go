package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/steward"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
	"github.com/butlerdotdev/butler-apiserver/pkg/localports"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane/kubebuild"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane/wakeproxy"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/datastore"
)

// Options configure the control planes.
type Options struct {
	// DataStoreName names the etcd this provider runs for its tenants and publishes as a
	// Steward DataStore; DataStoresDir holds its directory (data, certificates, log).
	DataStoreName, DataStoresDir string
	// DataStoreSecretNamespace is where the Secret with the datastore's CA and root client
	// certificate is published (the DataStore's tlsConfig names it).
	DataStoreSecretNamespace string
	// DataStoreMaxTenants bounds the tenants placement puts on a DataStore without its own
	// limit annotation (0: no bound).
	DataStoreMaxTenants int
	// CompactionInterval is how often the datastore's history is compacted (to the revision of
	// the pass before): its tenants' kube-apiservers do not compact.
	CompactionInterval time.Duration
	// BinDir holds kube-apiserver, kube-controller-manager and kube-scheduler of PinnedVersion.
	BinDir        string
	PinnedVersion string
	// VersionsDir is where other versions are built, one directory each.
	VersionsDir string
	// StateDir holds one directory per tenant (certificates, kubeconfigs, logs, pid files).
	StateDir string
	// Ports bound the loopback ports given to tenant kube-apiservers (less the kernel's
	// ephemeral range).
	Ports localports.Range
	// Address is where tenant kube-apiservers listen and what their endpoints name (127.0.0.1
	// when empty). The one-node cluster gives its bridge's address: butler-apiserver's Pods
	// reach the tenants there, where the host's loopback is not theirs.
	Address string
	// Workers is how many tenants are reconciled at once.
	Workers int
	// WakeLimits bound the wake-on-request listeners (wakeproxy.DefaultLimits on the command line).
	WakeLimits wakeproxy.Limits
	// ExternalNamespaces are namespaces whose hosted control planes a real Steward and its
	// Cluster API provider run: their StewardControlPlanes and TenantControlPlanes are left
	// alone here, and only their machines are this provider's. A TenantCluster's namespace
	// counts for the objects butler makes for it in its tenant namespace (<tc>-<uid8>).
	ExternalNamespaces []string
	// SpareControlPlanes is how many spare control planes to keep started (spare.go): a new
	// tenant of their shape takes one instead of starting its kube-apiserver. 0: none.
	SpareControlPlanes int
	// ConcurrentStarts bounds the tenant kube-apiservers starting at once (startGate; 0: no bound).
	ConcurrentStarts int
}

// external says whether obj's control plane is a real Steward's: its namespace, or the
// namespace of the TenantCluster it was made for (its label, which the real provider copies
// from the StewardControlPlane to the TenantControlPlane), is in Options.ExternalNamespaces.
func (o Options) external(obj metav1.Object) bool {
	return external.MadeForNamespaces(obj, o.ExternalNamespaces)
}

// Controller runs the TenantControlPlane controller.
type Controller struct {
	opts     Options
	deps     *controllerkit.Deps
	recorder record.EventRecorder

	tcps, dataStores cache.SharedIndexInformer
	tcpQueue         *controllerkit.Queue

	ports    *localports.Allocator
	versions *kubebuild.Versions
	// restorer, if set, fills a tenant's prefix from a snapshot before its processes start.
	restorer Restorer
	// local is the datastore this provider runs; stores its connections to every datastore.
	local  *localDataStore
	stores stores

	mu     sync.Mutex
	planes map[string]*plane // by TenantControlPlane UID
	// wakeGate holds the wake-on-request listeners' shared counts.
	wakeGate *wakeproxy.Gate
	// placed is each tenant's datastore by UID, as placed or set up here: what placement counts,
	// rather than reading other tenants' records under their own locks.
	placed map[string]string
	// setupErr is the last join-setup failure per UID, for the status message.
	runCtx context.Context
	// spares are the spare control planes (nil when Options.SpareControlPlanes is 0).
	spares *sparePool
	// starts bounds the kube-apiservers starting at once (nil when Options.ConcurrentStarts is 0).
	starts *startGate
}

// New builds the controller over deps' management cluster clients.
func New(d *controllerkit.Deps, opts Options) (*Controller, error) {
	if d.Dynamic == nil || d.Kube == nil || d.DynamicInformers == nil {
		return nil, errors.New("the control planes need the management cluster's dynamic and kube clients")
	}
	if opts.DataStoreName == "" || opts.DataStoresDir == "" || opts.DataStoreSecretNamespace == "" {
		return nil, errors.New("the datastore needs a name, a directory and a namespace for its Secret")
	}
	if opts.CompactionInterval <= 0 {
		opts.CompactionInterval = 5 * time.Minute
	}
	ports, err := localports.NewAllocator(opts.Ports)
	if err != nil {
		return nil, err
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.SpareControlPlanes < 0 {
		return nil, fmt.Errorf("spare control planes: %d is less than 0", opts.SpareControlPlanes)
	}
	for _, dir := range []string{opts.StateDir, opts.VersionsDir, opts.DataStoresDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: d.Kube.CoreV1().Events("")})
	c := &Controller{
		opts: opts, deps: d,
		recorder: broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: string(external.LocalProvider)}),
		ports:    ports,
		planes:   map[string]*plane{},
		wakeGate: wakeproxy.NewGate(opts.WakeLimits),
		placed:   map[string]string{},
		stores:   stores{clients: map[string]*storeClient{}},
	}
	if opts.SpareControlPlanes > 0 {
		c.spares = newSparePool(opts.SpareControlPlanes)
	}
	if opts.ConcurrentStarts > 0 {
		c.starts = newStartGate(opts.ConcurrentStarts)
	}
	c.versions = kubebuild.NewVersions(opts.PinnedVersion, opts.BinDir, opts.VersionsDir, c.versionBuilt)
	c.tcps = d.DynamicInformers.ForResource(tenantControlPlanes).Informer()
	c.dataStores = d.DynamicInformers.ForResource(datastore.GVR).Informer()
	c.tcpQueue = controllerkit.NewQueue("tenantcontrolplanes", c.reconcileTCP)

	if _, err := c.tcps.AddEventHandler(c.tcpQueue.Handler(controllerkit.ByKey)); err != nil {
		return nil, err
	}
	if _, err := c.dataStores.AddEventHandler(c.dataStoreHandler()); err != nil {
		return nil, err
	}
	return c, nil
}

// Run runs the controller until ctx is done, then stops every tenant's processes.
func (c *Controller) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("controlplane")
	ctx = klog.NewContext(ctx, logger)
	c.runCtx = ctx
	if err := c.loadState(ctx); err != nil {
		logger.Error(err, "Reading the state directory failed", "dir", c.opts.StateDir)
	}
	// The tenants' datastore first: no tenant starts without it.
	for {
		local, err := c.startDataStore(ctx)
		if err == nil {
			localMu.Lock()
			c.local = local
			localMu.Unlock()
			break
		}
		logger.Error(err, "Starting the datastore failed; trying again")
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); c.versions.Run(ctx) }()
	go func() {
		defer wg.Done()
		if cache.WaitForCacheSync(ctx.Done(), c.tcps.HasSynced, c.dataStores.HasSynced) {
			c.sweepOrphans(ctx)
			if c.spares != nil {
				wg.Add(1)
				go func() { defer wg.Done(); c.keepSpares(ctx) }()
			}
		}
		c.tcpQueue.Run(ctx, c.opts.Workers, c.tcps.HasSynced, c.dataStores.HasSynced)
	}()
	<-ctx.Done()
	wg.Wait()
	c.stopAll(klog.FromContext(ctx))
	c.stores.closeAll()
	// The datastore after its tenants' kube-apiservers: one whose etcd went first hangs.
	c.local.stop()
}

// loadState claims the ports recorded in the state directory, so a restarted provider gives
// each tenant its port again and no other tenant the same.
func (c *Controller) loadState(ctx context.Context) error {
	entries, err := os.ReadDir(c.opts.StateDir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		rec, err := readRecord(filepath.Join(c.opts.StateDir, e.Name()))
		if err != nil {
			continue
		}
		if rec.FromSpare != "" {
			// A claim recorded the tenant in the spare's directory before linking it.
			if err := c.linkTenant(rec.UID, e.Name()); err != nil {
				klog.FromContext(ctx).Error(err, "Linking a tenant to the spare it claimed failed", "uid", rec.UID, "dir", e.Name())
			}
		}
		if !c.ports.Claim(rec.Port, rec.UID) {
			klog.FromContext(ctx).Info("Two tenants recorded the same port; the second gets another", "port", rec.Port, "uid", rec.UID)
		}
		if rec.InternalPort != 0 && !c.ports.Claim(rec.InternalPort, rec.UID) {
			klog.FromContext(ctx).Info("Two tenants recorded the same port; the second gets another", "port", rec.InternalPort, "uid", rec.UID)
		}
	}
	return nil
}

// sweepOrphans removes the tenants recorded in the state directory whose TenantControlPlane is
// gone (deleted while the provider was down, with its finalizer removed by hand), and the spare
// control planes of the provider's last run: a spare's CA may have gone to a tenant whose claim
// a crash cut short, so none is used again.
func (c *Controller) sweepOrphans(ctx context.Context) {
	live := map[string]bool{}
	for _, obj := range c.tcps.GetStore().List() {
		if m, err := meta.Accessor(obj); err == nil {
			live[string(m.GetUID())] = true
		}
	}
	logger := klog.FromContext(ctx)
	entries, _ := os.ReadDir(c.opts.StateDir)
	for _, e := range entries {
		dir := filepath.Join(c.opts.StateDir, e.Name())
		if e.Type()&fs.ModeSymlink != 0 {
			if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
				_ = os.Remove(dir) // a claimed spare's link whose directory went
			}
			continue
		}
		if !e.IsDir() {
			continue
		}
		paths := tenantPaths{dir: dir}
		rec, err := readRecord(paths.dir)
		if err != nil || live[rec.UID] {
			continue
		}
		if rec.Spare {
			logger.Info("Removing a spare control plane of the provider's last run", "spare", rec.UID)
		} else {
			logger.Info("Removing a tenant whose TenantControlPlane is gone", "uid", rec.UID, "tenant", rec.Namespace+"/"+rec.Name)
		}
		if err := c.removeTenant(ctx, rec, paths, nil); err != nil {
			klog.FromContext(ctx).Error(err, "Removing an orphaned tenant failed", "uid", rec.UID)
		}
	}
}

// shutdownGrace is how long a tenant's process has after SIGTERM when the provider stops: the
// controllers, then kube-apiserver, each within it, so that all are gone before whoever stops the
// provider kills it (the local plane gives it 30 s). A killed kube-apiserver loses nothing: what it
// acknowledged is in etcd. A tenant stopped on its own keeps process.StopGrace.
const shutdownGrace = 5 * time.Second

// stopAll stops every tenant's processes and the spares', many at once.
func (c *Controller) stopAll(logger klog.Logger) {
	c.mu.Lock()
	planes := c.planes
	c.planes = map[string]*plane{}
	c.mu.Unlock()
	spares := c.spares.takeAll()
	for _, sp := range spares {
		planes[sp.pl.rec.UID] = sp.pl
	}
	if len(planes) == 0 {
		return
	}
	logger.Info("Stopping the tenant control planes", "count", len(planes), "spares", len(spares))
	var wg sync.WaitGroup
	for _, pl := range planes {
		wg.Add(1)
		go func() { defer wg.Done(); pl.closeProxy(); pl.stopWithin(shutdownGrace) }()
	}
	wg.Wait()
	logger.Info("Stopped the tenant control planes")
}

// versionBuilt queues every TenantControlPlane that waits for version.
func (c *Controller) versionBuilt(version string) {
	for _, obj := range c.tcps.GetStore().List() {
		if tcp, err := external.FromObject[steward.TenantControlPlane](obj); err == nil && normalizeVersion(tcp.Spec.Kubernetes.Version) == version {
			c.tcpQueue.Enqueue(obj)
		}
	}
}
