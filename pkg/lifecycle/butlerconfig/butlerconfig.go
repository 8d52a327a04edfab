// Package butlerconfig keeps the ButlerConfig singleton's status: the Teams and TenantClusters
// counted and the control plane exposure mode in effect.
package butlerconfig

import (
	"context"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	butlerinformers "github.com/butlerdotdev/butler-apiserver/pkg/generated/informers/externalversions/butler/v1alpha1"
	listers "github.com/butlerdotdev/butler-apiserver/pkg/generated/listers/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
)

// Controller keeps the ButlerConfig singleton's status: how many Teams and
// TenantClusters there are, and the control plane exposure mode in effect.
type Controller struct {
	butler   clientset.Interface
	configs  listers.ButlerConfigLister
	teams    listers.TeamLister
	clusters listers.TenantClusterLister
	synced   []cache.InformerSynced
	queue    *controllerkit.Queue
}

// New builds the controller from the shared informers.
func New(d *controllerkit.Deps) (*Controller, error) {
	b := d.ButlerInformers.Butler().V1alpha1()
	return NewController(d.Butler, b.ButlerConfigs(), b.Teams(), b.TenantClusters())
}

// usageDelay is how long the counts may lag: a burst of Teams or clusters is one status write.
const usageDelay = 500 * time.Millisecond

// NewController wires the controller to its informers.
func NewController(butlerClient clientset.Interface, configs butlerinformers.ButlerConfigInformer,
	teams butlerinformers.TeamInformer, clusters butlerinformers.TenantClusterInformer) (*Controller, error) {
	c := &Controller{
		butler: butlerClient, configs: configs.Lister(), teams: teams.Lister(), clusters: clusters.Lister(),
		synced: []cache.InformerSynced{configs.Informer().HasSynced, teams.Informer().HasSynced, clusters.Informer().HasSynced},
	}
	c.queue = controllerkit.NewQueue("butlerconfig", func(ctx context.Context, _ string) error { return c.Reconcile(ctx) })
	now := func(any) { c.queue.Add(butler.ButlerConfigName) }
	// Counts change only when objects come and go; a burst of them is one status write.
	counted := func(any) { c.queue.AddAfter(butler.ButlerConfigName, usageDelay) }
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
func (c *Controller) Run(ctx context.Context) { c.queue.Run(ctx, 1, c.synced...) }

// Reconcile writes the ButlerConfig's status if it changed. It leaves observedGeneration alone:
// a status write on every spec change would only make clients' read-modify-write of the
// singleton conflict more often. A missing ButlerConfig is no error: its creation brings it
// back here.
func (c *Controller) Reconcile(ctx context.Context) error {
	config, err := c.configs.Get(butler.ButlerConfigName)
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
