package controllerkit

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"

	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	butlerinformers "github.com/butlerdotdev/butler-apiserver/pkg/generated/informers/externalversions"
)

// Deps is what every controller is built from: the clients and the shared informer factories.
// The factories are started after every controller has asked them for its informers.
type Deps struct {
	// Butler reads and writes butler objects (the server's own loopback client).
	Butler clientset.Interface
	// Kube writes to the management cluster.
	Kube kubernetes.Interface
	// Dynamic writes the external kinds (Cluster API, Steward, providers) to the management cluster.
	Dynamic dynamic.Interface
	// Management is how the clients above reach the management cluster (nil: none): the
	// ManagementAddon controller's target, impersonating each addon's account.
	Management *rest.Config

	ButlerInformers butlerinformers.SharedInformerFactory
	// KubeInformers sees every object of the kinds asked for; prefer KubeInformersFor with a
	// label selector for kinds the management cluster holds many of (namespaces, secrets).
	KubeInformers    informers.SharedInformerFactory
	DynamicInformers dynamicinformer.DynamicSharedInformerFactory
	// MetadataInformers keep only objects' metadata: for kinds watched to learn that an object
	// exists, whose contents would be costly to cache (other providers' Secrets, CRDs).
	MetadataInformers metadatainformer.SharedInformerFactory

	// Clock is every time-dependent decision's clock (windows, schedules, waits, retention):
	// the real one in production (nil reads as it), a fake one in tests.
	Clock clock.PassiveClock

	// Fetch is the outbound fetch policy's settings for what controllers fetch for a tenant.
	Fetch FetchSettings

	filtered      map[string]informers.SharedInformerFactory
	tenantSecrets *TenantSecrets
	// broadcaster sends the Events of every Recorder; started with the informers.
	broadcaster events.EventBroadcaster
}

// KubeInformersFor returns the management cluster's informer factory over the objects that
// match selector (a label selector), one per selector.
func (d *Deps) KubeInformersFor(selector string) informers.SharedInformerFactory {
	if f, ok := d.filtered[selector]; ok {
		return f
	}
	if d.filtered == nil {
		d.filtered = map[string]informers.SharedInformerFactory{}
	}
	f := informers.NewSharedInformerFactoryWithOptions(d.Kube, Resync,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }),
		informers.WithTransform(DropManagedFields))
	d.filtered[selector] = f
	return f
}

// FetchSettings are the platform's settings of the outbound fetch policy (addons.FetchPolicy).
type FetchSettings struct {
	// MaxBytes bounds each download (0: the policy's default).
	MaxBytes int64
	// AllowedInternal lists host:port that may be fetched from though they are internal
	// (loopback, link-local, private); AddonDefinitions' repositories are allowed too.
	AllowedInternal []string
}

// Resync is the informers' resync period: a safety net, never how progress is made.
const Resync = 10 * time.Minute

// NewDeps returns Deps over the given clients with fresh informer factories (managedFields
// dropped from every cache). The management cluster's clients may be nil (no management cluster).
func NewDeps(butler clientset.Interface, kube kubernetes.Interface, dyn dynamic.Interface, md metadata.Interface) *Deps {
	d := &Deps{Butler: butler, Kube: kube, Dynamic: dyn,
		ButlerInformers: butlerinformers.NewSharedInformerFactoryWithOptions(butler, Resync,
			butlerinformers.WithTransform(DropManagedFields)),
	}
	if kube != nil {
		d.KubeInformers = informers.NewSharedInformerFactoryWithOptions(kube, Resync, informers.WithTransform(DropManagedFields))
	}
	if dyn != nil {
		d.DynamicInformers = droppingManagedFields{dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, Resync, "", nil)}
	}
	if md != nil {
		d.MetadataInformers = metadatainformer.NewSharedInformerFactory(md, Resync)
	}
	return d
}

// droppingManagedFields is a dynamic informer factory whose informers drop managedFields from
// what they cache, as the typed factories do (WithTransform): the dynamic factory takes no
// options, and no controller reads them.
type droppingManagedFields struct {
	dynamicinformer.DynamicSharedInformerFactory
}

func (f droppingManagedFields) ForResource(gvr schema.GroupVersionResource) informers.GenericInformer {
	inf := f.DynamicSharedInformerFactory.ForResource(gvr)
	// An informer already started (asked for again) has it set from its first ask.
	_ = inf.Informer().SetTransform(DropManagedFields)
	return inf
}

// Start starts every factory's informers; stop ends them.
func (d *Deps) Start(stop <-chan struct{}) {
	d.ButlerInformers.Start(stop)
	if d.KubeInformers != nil {
		d.KubeInformers.Start(stop)
	}
	if d.DynamicInformers != nil {
		d.DynamicInformers.Start(stop)
	}
	if d.MetadataInformers != nil {
		d.MetadataInformers.Start(stop)
	}
	for _, f := range d.filtered {
		f.Start(stop)
	}
	if d.broadcaster != nil {
		d.broadcaster.StartRecordingToSink(stop)
	}
	if d.tenantSecrets != nil {
		d.tenantSecrets.Start(stop)
	}
}

// Shutdown waits for the informers' goroutines to end.
func (d *Deps) Shutdown() {
	d.ButlerInformers.Shutdown()
	if d.KubeInformers != nil {
		d.KubeInformers.Shutdown()
	}
	if d.DynamicInformers != nil {
		d.DynamicInformers.Shutdown()
	}
	if d.MetadataInformers != nil {
		d.MetadataInformers.Shutdown()
	}
	for _, f := range d.filtered {
		f.Shutdown()
	}
	if d.broadcaster != nil {
		d.broadcaster.Shutdown()
	}
	if d.tenantSecrets != nil {
		d.tenantSecrets.Shutdown()
	}
}

// Now returns the controllers' clock: Clock, or the real one when none is set.
func (d *Deps) Now() clock.PassiveClock {
	if d.Clock == nil {
		return clock.RealClock{}
	}
	return d.Clock
}

// ClockFunc is a PassiveClock that reads the time from a function: for tests that move a
// variable rather than a fake clock.
type ClockFunc func() time.Time

// Now implements clock.PassiveClock.
func (f ClockFunc) Now() time.Time { return f() }

// Since implements clock.PassiveClock.
func (f ClockFunc) Since(t time.Time) time.Duration { return f().Sub(t) }
