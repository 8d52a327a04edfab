package stewardcontrolplane

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
)

// Options configure the controller.
type Options struct {
	// Workers is how many StewardControlPlanes are reconciled at once.
	Workers int
	// ExternalNamespaces are namespaces whose hosted control planes a real Steward and its
	// Cluster API provider run: their StewardControlPlanes are left alone here. A TenantCluster's
	// namespace counts for the objects butler makes for it in its tenant namespace (<tc>-<uid8>).
	ExternalNamespaces []string
}

// Controller runs the StewardControlPlane controller.
type Controller struct {
	opts Options
	deps *controllerkit.Deps
	// mapper finds the resource of a Cluster's infrastructure kind, whose endpoint it patches.
	mapper meta.RESTMapper

	scps, tcps, clusters cache.SharedIndexInformer
	queue                *controllerkit.Queue
}

// New builds the controller over deps' management cluster clients.
func New(d *controllerkit.Deps, opts Options) (*Controller, error) {
	if d.Dynamic == nil || d.Kube == nil || d.DynamicInformers == nil {
		return nil, errors.New("the StewardControlPlanes need the management cluster's dynamic and kube clients")
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	c := &Controller{
		opts: opts, deps: d,
		mapper:   restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(d.Kube.Discovery())),
		scps:     d.DynamicInformers.ForResource(external.StewardControlPlaneGVR).Informer(),
		tcps:     d.DynamicInformers.ForResource(external.TenantControlPlaneGVR).Informer(),
		clusters: d.DynamicInformers.ForResource(external.ClusterGVR).Informer(),
	}
	c.queue = controllerkit.NewQueue("stewardcontrolplanes", c.reconcileSCP)
	if _, err := c.scps.AddEventHandler(c.queue.Handler(controllerkit.ByKey)); err != nil {
		return nil, err
	}
	// A TenantControlPlane's changes (its status) wake the StewardControlPlane of its name.
	if _, err := c.tcps.AddEventHandler(c.queue.Handler(controllerkit.ByKey)); err != nil {
		return nil, err
	}
	// A Cluster wakes the StewardControlPlane it references (its ownerReference arrives after).
	if _, err := c.clusters.AddEventHandler(c.queue.Handler(controlPlaneOfCluster)); err != nil {
		return nil, err
	}
	return c, nil
}

// Run reconciles StewardControlPlanes until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	c.queue.Run(ctx, c.opts.Workers, c.scps.HasSynced, c.tcps.HasSynced, c.clusters.HasSynced)
}
