package managementaddon

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"

	"github.com/butlerdotdev/butler-apiserver/pkg/addons"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	butlerinformers "github.com/butlerdotdev/butler-apiserver/pkg/generated/informers/externalversions/butler/v1alpha1"
	listers "github.com/butlerdotdev/butler-apiserver/pkg/generated/listers/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
)

const (
	// Finalizer holds a deleted ManagementAddon until its release is uninstalled.
	Finalizer = "butler.butlerlabs.dev/managementaddon"
	// ConditionReady is True exactly when the addon is Installed at its current spec.
	ConditionReady = "Ready"

	// workers is how many addons install at once: the management cluster's are few.
	workers = 2
	// resyncInstalled is how often an Installed addon is checked against its release.
	resyncInstalled = 10 * time.Minute
)

// Engine is what the controller needs of pkg/addons (an interface so tests can fake Helm).
type Engine interface {
	Ensure(ctx context.Context, req addons.Request, starting func(addons.Action)) (*addons.Result, error)
	Uninstall(ctx context.Context, target addons.Target, key addons.ReleaseKey, timeout time.Duration, restriction string) error
	Forget(cluster string)
}

// Controller reconciles ManagementAddons.
type Controller struct {
	butler clientset.Interface
	engine Engine
	// management is how the controller reaches the management cluster; each addon's target is
	// this, impersonating the addon's account.
	management  *rest.Config
	addons      listers.ManagementAddonLister
	definitions listers.AddonDefinitionLister
	configs     listers.ButlerConfigLister
	synced      []cache.InformerSynced
	queue       *controllerkit.Queue
	events      events.EventRecorder
	written     controllerkit.OwnWrites
	retries     workqueue.TypedRateLimiter[string]
}

// New builds the controller from the shared informers and the management cluster's client
// configuration, with a Helm engine of its own caching charts under the user's cache directory
// (or the temporary directory).
func New(d *controllerkit.Deps) (*Controller, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	b := d.ButlerInformers.Butler().V1alpha1()
	settings := addons.AllowHostPorts(d.Fetch.AllowedInternal)
	charts, err := addons.NewCharts(filepath.Join(dir, "butler-apiserver", "management-charts"), 0,
		addons.FetchPolicy{MaxBytes: d.Fetch.MaxBytes, Allowed: settings})
	if err != nil {
		return nil, err
	}
	c, err := NewController(d.Butler, addons.NewEngine(charts), d.Management, b.ManagementAddons(), b.AddonDefinitions(), b.ButlerConfigs())
	if err != nil {
		return nil, err
	}
	c.events = d.Recorder("butler-managementaddon")
	return c, nil
}

// NewController wires the controller to its informers and engine.
func NewController(butlerClient clientset.Interface, engine Engine, management *rest.Config,
	managementAddons butlerinformers.ManagementAddonInformer, definitions butlerinformers.AddonDefinitionInformer,
	configs butlerinformers.ButlerConfigInformer) (*Controller, error) {
	c := &Controller{
		butler: butlerClient, engine: engine, management: management,
		addons: managementAddons.Lister(), definitions: definitions.Lister(), configs: configs.Lister(),
		synced: []cache.InformerSynced{managementAddons.Informer().HasSynced, definitions.Informer().HasSynced,
			configs.Informer().HasSynced},
		events:  &events.FakeRecorder{},
		retries: workqueue.NewTypedItemExponentialFailureRateLimiter[string](15*time.Second, 5*time.Minute),
	}
	c.queue = controllerkit.NewQueue("managementaddon", c.Reconcile)
	addonHandler := c.queue.Handler(func(obj any) []string {
		if a, ok := obj.(*v1alpha1.ManagementAddon); ok {
			return []string{a.Name}
		}
		return nil
	})
	definitionHandler := c.queue.Handler(func(obj any) []string {
		d, ok := obj.(*v1alpha1.AddonDefinition)
		if !ok {
			return nil
		}
		return c.madeFrom(d.Name)
	})
	for _, h := range []struct {
		inf     cache.SharedIndexInformer
		handler cache.ResourceEventHandler
	}{
		{managementAddons.Informer(), addonHandler},
		{managementAddons.Informer(), c.written.ForgetDeleted()},
		{definitions.Informer(), definitionHandler},
	} {
		if _, err := h.inf.AddEventHandler(h.handler); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run processes ManagementAddons until ctx is done.
func (c *Controller) Run(ctx context.Context) { c.queue.Run(ctx, workers, c.synced...) }

// madeFrom lists the addons made from the AddonDefinition definition.
func (c *Controller) madeFrom(definition string) []string {
	all, err := c.addons.List(everything)
	if err != nil {
		return nil
	}
	var keys []string
	for _, a := range all {
		if a.Spec.Addon == definition {
			keys = append(keys, a.Name)
		}
	}
	return keys
}

func (c *Controller) backoff(key string) time.Duration { return c.retries.When(key) }

func (c *Controller) succeeded(key string) { c.retries.Forget(key) }
