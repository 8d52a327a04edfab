package lifecycle

import (
	"context"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	butlerinformers "github.com/butlerdotdev/butler-apiserver/pkg/generated/informers/externalversions/butler/v1alpha1"
	listers "github.com/butlerdotdev/butler-apiserver/pkg/generated/listers/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/quota"
)

// ButlerConfigController keeps the ButlerConfig singleton's status: how many Teams and
// TenantClusters there are, and the control plane exposure mode in effect.
type ButlerConfigController struct {
	butler   clientset.Interface
	configs  listers.ButlerConfigLister
	teams    listers.TeamLister
	clusters listers.TenantClusterLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
}

// NewButlerConfigController wires the controller to its informers.
func NewButlerConfigController(butlerClient clientset.Interface, configs butlerinformers.ButlerConfigInformer,
	teams butlerinformers.TeamInformer, clusters butlerinformers.TenantClusterInformer) (*ButlerConfigController, error) {
	c := &ButlerConfigController{
		butler: butlerClient, configs: configs.Lister(), teams: teams.Lister(), clusters: clusters.Lister(),
		synced: []cache.InformerSynced{configs.Informer().HasSynced, teams.Informer().HasSynced, clusters.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "butlerconfig"}),
	}
	now := func(any) { c.queue.Add(quota.ButlerConfigName) }
	// Counts change only when objects come and go; a burst of them is one status write.
	counted := func(any) { c.queue.AddAfter(quota.ButlerConfigName, usageDelay) }
	for _, h := range []struct {
		inf     cache.SharedIndexInformer
		handler cache.ResourceEventHandler
	}{
		{configs.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: now, UpdateFunc: func(_, n any) { now(n) }, DeleteFunc: now}},
		{teams.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: counted, DeleteFunc: counted}},
		{clusters.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: counted, DeleteFunc: counted}},
	} {
		if _, err := h.inf.AddEventHandler(h.handler); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run processes the ButlerConfig until ctx is done.
func (c *ButlerConfigController) Run(ctx context.Context) {
	defer utilruntime.HandleCrashWithContext(ctx)
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx).WithValues("controller", "butlerconfig")
	ctx = klog.NewContext(ctx, logger)
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		return
	}
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		for c.next(ctx) {
		}
	}, time.Second)
	<-ctx.Done()
}

func (c *ButlerConfigController) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.Reconcile(ctx); err != nil {
		klog.FromContext(ctx).Error(err, "Writing the ButlerConfig status failed; retrying")
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// Reconcile writes the ButlerConfig's status if it changed. It leaves observedGeneration alone:
// a status write on every spec change would only make clients' read-modify-write of the
// singleton conflict more often. A missing ButlerConfig is no error: its creation brings it
// back here.
func (c *ButlerConfigController) Reconcile(ctx context.Context) error {
	config, err := c.configs.Get(quota.ButlerConfigName)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	teams, err := c.teams.List(labels.Everything())
	if err != nil {
		return err
	}
	clusters, err := c.clusters.List(labels.Everything())
	if err != nil {
		return err
	}
	status := config.Status.DeepCopy()
	status.TeamCount = int32(len(teams))
	status.ClusterCount = int32(len(clusters))
	status.ControlPlaneExposureMode = config.Spec.ControlPlaneExposure.Mode
	if apiequality.Semantic.DeepEqual(&config.Status, status) {
		return nil
	}
	updated := config.DeepCopy()
	updated.Status = *status
	_, err = c.butler.ButlerV1alpha1().ButlerConfigs().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // a newer ButlerConfig, or none, is on its way through the informer
	}
	return err
}
