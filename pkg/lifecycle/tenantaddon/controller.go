package tenantaddon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"

	"github.com/butlerdotdev/butler-apiserver/pkg/addons"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/addonslots"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	butlerinformers "github.com/butlerdotdev/butler-apiserver/pkg/generated/informers/externalversions/butler/v1alpha1"
	listers "github.com/butlerdotdev/butler-apiserver/pkg/generated/listers/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
)

const (
	// Finalizer holds a deleted TenantAddon until its release is uninstalled.
	Finalizer = "butler.butlerlabs.dev/tenantaddon"
	// SlotLabel names the spec.addons entry of the cluster a TenantAddon was made for.
	SlotLabel = addonslots.Label

	// Workers is how many addons install at once.
	Workers = 5
	// resyncInstalled is how often an Installed addon is checked against its release.
	resyncInstalled = 10 * time.Minute

	byCluster = "tenantaddon:cluster"
	byAddon   = "tenantaddon:addon"
)

// Engine is what the controller needs of pkg/addons (an interface so tests can fake Helm).
type Engine interface {
	Ensure(ctx context.Context, req addons.Request, starting func(addons.Action)) (*addons.Result, error)
	Uninstall(ctx context.Context, target addons.Target, key addons.ReleaseKey, timeout time.Duration, restriction string) error
	Get(ctx context.Context, target addons.Target, key addons.ReleaseKey) (*addons.ReleaseInfo, error)
	Apply(ctx context.Context, target addons.Target, objs []*unstructured.Unstructured) error
	Forget(cluster string)
}

// Controller reconciles TenantAddons.
type Controller struct {
	butler clientset.Interface
	kube   kubernetes.Interface
	engine Engine
	// namespaceLabels reads a namespace of the tenant: its labels and whether it exists.
	namespaceLabels func(ctx context.Context, target addons.Target, name string) (map[string]string, bool, error)
	addons          listers.TenantAddonLister
	addonIndex      cache.Indexer
	clusters        listers.TenantClusterLister
	definitions     listers.AddonDefinitionLister
	configs         listers.ButlerConfigLister
	allocations     listers.IPAllocationLister
	synced          []cache.InformerSynced
	queue           *controllerkit.Queue
	workers         int
	// events records the addon's phase and reason changes (a no-op recorder until set).
	events events.EventRecorder
	// written tells an addon's stale informer copy (one this process's own write replaced)
	// from a current one: a reconcile of the stale copy stops, the write's event follows.
	written controllerkit.OwnWrites

	// retries paces a failed addon's next attempt: 15 s after the first failure, doubling to
	// 5 min; a success forgets the key.
	retries workqueue.TypedRateLimiter[string]
}

// New builds the controller from the shared informers, with a Helm engine caching charts under
// the user's cache directory (or the temporary directory).
func New(d *controllerkit.Deps) (*Controller, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	b := d.ButlerInformers.Butler().V1alpha1()
	charts, err := addons.NewCharts(filepath.Join(dir, "butler-apiserver", "charts"), 0, fetchPolicy(d.Fetch, b.AddonDefinitions().Lister()))
	if err != nil {
		return nil, err
	}
	c, err := NewController(d.Butler, d.Kube, addons.NewEngine(charts), b.TenantAddons(), b.TenantClusters(),
		b.AddonDefinitions(), b.ButlerConfigs(), b.IPAllocations())
	if err != nil {
		return nil, err
	}
	c.events = d.Recorder("butler-tenantaddon")
	return c, nil
}

// NewController wires the controller to its informers and engine.
func NewController(butlerClient clientset.Interface, kube kubernetes.Interface, engine Engine,
	tenantAddons butlerinformers.TenantAddonInformer, clusters butlerinformers.TenantClusterInformer,
	definitions butlerinformers.AddonDefinitionInformer, configs butlerinformers.ButlerConfigInformer,
	allocations butlerinformers.IPAllocationInformer) (*Controller, error) {
	c := &Controller{
		butler: butlerClient, kube: kube, engine: engine, namespaceLabels: tenantNamespaceLabels,
		addons: tenantAddons.Lister(), addonIndex: tenantAddons.Informer().GetIndexer(),
		clusters: clusters.Lister(), definitions: definitions.Lister(), configs: configs.Lister(),
		allocations: allocations.Lister(),
		synced: []cache.InformerSynced{tenantAddons.Informer().HasSynced, clusters.Informer().HasSynced,
			definitions.Informer().HasSynced, configs.Informer().HasSynced, allocations.Informer().HasSynced},
		workers: Workers,
		retries: workqueue.NewTypedItemExponentialFailureRateLimiter[string](15*time.Second, 5*time.Minute),
		events:  &events.FakeRecorder{},
	}
	c.queue = controllerkit.NewQueue("tenantaddon", c.Reconcile)
	if err := tenantAddons.Informer().AddIndexers(cache.Indexers{
		byCluster: func(obj any) ([]string, error) {
			a, ok := obj.(*v1alpha1.TenantAddon)
			if !ok {
				return nil, nil
			}
			return []string{a.Namespace + "/" + a.Spec.ClusterRef.Name}, nil
		},
		byAddon: func(obj any) ([]string, error) {
			a, ok := obj.(*v1alpha1.TenantAddon)
			if !ok || a.Spec.Addon == "" {
				return nil, nil
			}
			return []string{a.Spec.Addon}, nil
		},
	}); err != nil {
		return nil, fmt.Errorf("tenantaddon indexers: %w", err)
	}

	// An addon's change may unblock (or cycle with) any addon of its cluster: queue them all.
	addonHandler := c.queue.Handler(func(obj any) []string {
		a, ok := obj.(*v1alpha1.TenantAddon)
		if !ok {
			return nil
		}
		return append(c.keysFor(byCluster, a.Namespace+"/"+a.Spec.ClusterRef.Name), a.Namespace+"/"+a.Name)
	})
	clusterHandler := c.queue.Handler(func(obj any) []string {
		tc, ok := obj.(*v1alpha1.TenantCluster)
		if !ok {
			return nil
		}
		return c.keysFor(byCluster, tc.Namespace+"/"+tc.Name)
	})
	definitionHandler := c.queue.Handler(func(obj any) []string {
		d, ok := obj.(*v1alpha1.AddonDefinition)
		if !ok {
			return nil
		}
		return c.keysFor(byAddon, d.Name)
	})
	// The ButlerConfig's default versions apply to every catalog addon.
	configHandler := c.queue.Handler(func(any) []string { return c.keysFor("", "") })
	for _, h := range []struct {
		inf     cache.SharedIndexInformer
		handler cache.ResourceEventHandler
	}{
		{tenantAddons.Informer(), addonHandler},
		{tenantAddons.Informer(), c.written.ForgetDeleted()},
		{clusters.Informer(), clusterHandler},
		{clusters.Informer(), cache.ResourceEventHandlerFuncs{DeleteFunc: c.forgetCluster}},
		{definitions.Informer(), definitionHandler},
		{configs.Informer(), configHandler},
	} {
		if _, err := h.inf.AddEventHandler(h.handler); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run processes TenantAddons with several workers until ctx is done.
func (c *Controller) Run(ctx context.Context) { c.queue.Run(ctx, c.workers, c.synced...) }

// keysFor lists the keys of the addons in index under value (every addon when index is "").
func (c *Controller) keysFor(index, value string) []string {
	var objs []any
	if index == "" {
		objs = c.addonIndex.List()
	} else {
		var err error
		if objs, err = c.addonIndex.ByIndex(index, value); err != nil {
			return nil
		}
	}
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		if a, ok := o.(*v1alpha1.TenantAddon); ok {
			keys = append(keys, a.Namespace+"/"+a.Name)
		}
	}
	return keys
}

// forgetCluster drops the engine's clients of a deleted cluster.
func (c *Controller) forgetCluster(obj any) {
	if tc, ok := controllerkit.Unwrap(obj).(*v1alpha1.TenantCluster); ok {
		c.engine.Forget(clusterID(tc))
	}
}

// clusterID names a cluster for the engine's cache: a re-created cluster of the same name is
// another cluster.
func clusterID(tc *v1alpha1.TenantCluster) string {
	return tc.Namespace + "/" + tc.Name + "/" + string(tc.UID)
}

// backoff returns how long to wait after the key's latest failure, counting it.
func (c *Controller) backoff(key string) time.Duration { return c.retries.When(key) }

func (c *Controller) succeeded(key string) { c.retries.Forget(key) }

// fetchPolicy is the outbound policy of chart fetches: the platform's settings, and the
// repositories of its AddonDefinitions allowed by host:port though they are internal (a
// platform admin listed them).
func fetchPolicy(settings controllerkit.FetchSettings, definitions listers.AddonDefinitionLister) addons.FetchPolicy {
	static := addons.AllowHostPorts(settings.AllowedInternal)
	return addons.FetchPolicy{
		MaxBytes: settings.MaxBytes,
		Allowed: func(hostport string) bool {
			if static(hostport) {
				return true
			}
			defs, err := definitions.List(labels.Everything())
			if err != nil {
				return false
			}
			repos := make([]string, 0, len(defs))
			for _, d := range defs {
				repos = append(repos, d.Spec.Chart.Repository)
			}
			return addons.AllowHostPorts(repos)(hostport)
		},
	}
}
