package tenantcluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/butlerdotdev/butler-apiserver/pkg/addons"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	listers "github.com/butlerdotdev/butler-apiserver/pkg/generated/listers/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/hibernation"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// Controller provisions TenantClusters.
type Controller struct {
	butler  clientset.Interface
	kube    kubernetes.Interface
	objects *objects

	clusters    listers.TenantClusterLister
	providers   listers.ProviderConfigLister
	configs     listers.ButlerConfigLister
	teams       listers.TeamLister
	allocations listers.IPAllocationLister
	addons      listers.TenantAddonLister
	snaps       listers.TenantClusterSnapshotLister
	namespaces  corelisters.NamespaceLister
	// secrets lists the Secrets of the tenant namespaces; nil reads them live.
	secrets *controllerkit.TenantSecrets
	// self is butler-apiserver's own user name in the management cluster, which each tenant
	// namespace's RoleBinding lets read and write Secrets there ("" binds nothing).
	self  string
	bound sync.Map // tenant namespaces whose Secrets RoleBinding this process applied
	// repairsTold holds, per tenant namespace, the Machines whose failed health check an Event
	// told (map[types.UID]bool), so that it is told once.
	repairsTold sync.Map

	access accessApplied
	// audit is the service addresses step's: when it last looked at each tenant's Services.
	audit serviceAudit
	// newTenantClient makes a tenant's client from its admin kubeconfig (tests replace it).
	newTenantClient func(kubeconfig []byte) (kubernetes.Interface, error)
	// gitopsState and newTenantObjects are the GitOps step's: what it applied in each tenant,
	// and the dynamic client of a tenant (tests replace it).
	gitopsState      gitopsApplied
	newTenantObjects func(kubeconfig []byte) (*objects, error)
	// fetch is the outbound fetch policy a repository's URL passes before Flux is told of it;
	// lookup resolves its host (tests replace it).
	fetch  addons.FetchPolicy
	lookup addons.Resolver
	events events.EventRecorder

	// written tells a cluster's stale informer copy (one this process's own write replaced)
	// from a current one: a reconcile of the stale copy stops, the write's event follows.
	written controllerkit.OwnWrites

	plan steps.Plan[*state]
	// sleepPlan takes the cluster down when spec.hibernation.hibernated is true.
	sleepPlan steps.Plan[*state]
	// unstartedPlan makes a cluster created hibernated with wake on request, never started.
	unstartedPlan steps.Plan[*state]
	queue         *controllerkit.Queue
	synced        []cache.InformerSynced
	// clock is every time-dependent decision's (schedules, windows, resyncs).
	clock clock.PassiveClock
	// leases are the hosted control plane controllers' leader-election Leases, as last listed.
	leases leaseReads
	// unobserved holds, per control plane object (UID), the generation its provider has not
	// observed during a wake, and since when (nudgeMissedWake).
	unobserved sync.Map
}

// New builds the controller from the shared informers. It watches the external kinds it writes
// that the management cluster serves now; a kind whose CRD is installed later is applied all
// the same, and read on every reconcile.
func New(d *controllerkit.Deps) (*Controller, error) {
	b := d.ButlerInformers.Butler().V1alpha1()
	nsInformer := d.KubeInformersFor(external.TenantClusterLabel).Core().V1().Namespaces()
	c := &Controller{
		butler: d.Butler, kube: d.Kube,
		objects: &objects{dyn: d.Dynamic, watched: map[schema.GroupVersionResource]cache.SharedIndexInformer{},
			mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(d.Kube.Discovery()))},
		clusters: b.TenantClusters().Lister(), providers: b.ProviderConfigs().Lister(), configs: b.ButlerConfigs().Lister(),
		teams: b.Teams().Lister(), allocations: b.IPAllocations().Lister(), addons: b.TenantAddons().Lister(),
		snaps:            b.TenantClusterSnapshots().Lister(),
		namespaces:       nsInformer.Lister(),
		access:           accessApplied{digest: map[string]string{}, granted: map[string]grant{}, clients: map[string]tenantClient{}},
		audit:            serviceAudit{looked: map[string]time.Time{}},
		newTenantClient:  newAdminClient,
		gitopsState:      gitopsApplied{applied: map[string]grant{}, clients: map[string]tenantObjects{}},
		newTenantObjects: newAdminObjects,
		fetch:            addons.FetchPolicy{Allowed: addons.AllowHostPorts(d.Fetch.AllowedInternal)},
		lookup:           lookupHost,
		events:           d.Recorder("butler-tenantcluster"),
		clock:            d.Now(),
	}
	c.self = selfName(context.Background(), d.Kube)
	c.plan = c.steps()
	c.sleepPlan = c.sleepSteps()
	c.unstartedPlan = c.unstartedSteps()
	c.queue = controllerkit.NewQueue("tenantcluster", c.Reconcile)

	byLabels := c.queue.Handler(keyOf)
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{b.TenantClusters().Informer(), c.queue.Handler(controllerkit.ByKey)},
		{b.TenantClusters().Informer(), c.written.ForgetDeleted()},
		{b.IPAllocations().Informer(), byLabels},
		{b.TenantAddons().Informer(), c.queue.Handler(addonCluster)},
		{b.ProviderConfigs().Informer(), c.queue.Handler(c.clustersOfProvider)},
		{b.ButlerConfigs().Informer(), c.queue.Handler(c.allClusters)},
		{b.Teams().Informer(), c.queue.Handler(c.clustersOfTeam)},
		{b.TenantClusterSnapshots().Informer(), c.queue.Handler(snapshotToTake)},
		{nsInformer.Informer(), byLabels},
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return nil, err
		}
		c.synced = append(c.synced, h.inf.HasSynced)
	}
	c.watchExternal(d)
	c.watchCRDs(d)
	return c, nil
}

var crdsGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// watchCRDs resets the cached discovery whenever a CRD comes, changes or goes, and brings every
// cluster back: one that failed because a kind was not installed goes on once it is. Metadata
// only; the CRDs of the first list are the ones discovery was loaded with.
func (c *Controller) watchCRDs(d *controllerkit.Deps) {
	if d.MetadataInformers == nil {
		return
	}
	inf := d.MetadataInformers.ForResource(crdsGVR).Informer()
	_ = inf.SetTransform(controllerkit.DropManagedFields)
	h := c.queue.Handler(func(any) []string {
		c.objects.mapper.Reset()
		return c.allClusters(nil)
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if !initial {
				h.OnAdd(obj, false)
			}
		},
		UpdateFunc: h.OnUpdate,
		DeleteFunc: h.OnDelete,
	})
}

// watchExternal adds watches on the external kinds the management cluster serves. Objects the
// controller wrote carry the cluster labels; those a provider made (a TenantControlPlane) are mapped
// through their namespace's labels.
func (c *Controller) watchExternal(d *controllerkit.Deps) {
	handler := c.queue.Handler(func(obj any) []string {
		if keys := keyOf(obj); len(keys) > 0 {
			return keys
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil
		}
		ns, err := c.namespaces.Get(m.GetNamespace())
		if err != nil {
			return nil
		}
		return keyOf(ns)
	})
	// The admin kubeconfig Secret Steward (or Kamaji) writes: its existence is part of a
	// ready control plane. Watched per tenant namespace: butler may not watch other Secrets.
	if c.secrets = d.TenantSecrets(); c.secrets != nil {
		c.secrets.AddEventHandler(handler)
	}
	for _, gvk := range watchedKinds() {
		m, err := c.objects.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			klog.InfoS("Not watching a kind the management cluster does not serve", "kind", gvk.String())
			continue
		}
		inf := d.DynamicInformers.ForResource(m.Resource).Informer()
		c.objects.watched[m.Resource] = inf
		// Not waited for: a kind that stops being served must not stop the controller.
		_, _ = inf.AddEventHandler(handler)
	}
}

// reconcilers is how many clusters are reconciled at once. A reconcile spends its time waiting
// on the API servers, not computing, and the queue never hands one cluster to two of them; what
// they share (the applied and access records, the tenant clients) is locked.
const reconcilers = 16

// Run provisions TenantClusters until ctx is done.
func (c *Controller) Run(ctx context.Context) { c.queue.Run(ctx, reconcilers, c.synced...) }

func (c *Controller) clustersOfProvider(obj any) []string {
	pc, ok := obj.(*v1alpha1.ProviderConfig)
	if !ok {
		return nil
	}
	all, _ := c.clusters.List(k8slabels.Everything())
	var keys []string
	for _, tc := range all {
		if ref, _ := c.providerRef(tc); ref.Name == pc.Name && ref.Namespace == pc.Namespace {
			keys = append(keys, tc.Namespace+"/"+tc.Name)
		}
	}
	return keys
}

// addonCluster maps a TenantAddon to its cluster: every addon of a cluster counts towards its
// AddonsReady, those users made too.
func addonCluster(obj any) []string {
	a, ok := obj.(*v1alpha1.TenantAddon)
	if !ok || a.Spec.ClusterRef.Name == "" {
		return nil
	}
	return []string{a.Namespace + "/" + a.Spec.ClusterRef.Name}
}

func (c *Controller) allClusters(any) []string {
	all, _ := c.clusters.List(k8slabels.Everything())
	keys := make([]string, 0, len(all))
	for _, tc := range all {
		keys = append(keys, tc.Namespace+"/"+tc.Name)
	}
	return keys
}

// Reconcile brings one TenantCluster's objects and status in line with its spec.
func (c *Controller) Reconcile(ctx context.Context, key string) error {
	tc, err := controllerkit.Current(key, c.cached, &c.written)
	if tc == nil || err != nil {
		return err
	}
	if tc.DeletionTimestamp != nil {
		return c.delete(ctx, tc)
	}
	if tc.Annotations[external.TenantClusterPausedAnnotation] == "true" {
		klog.FromContext(ctx).V(2).Info("Paused; only the Team's access is kept")
		return c.accessWhilePaused(ctx, tc)
	}
	if !slices.Contains(tc.Finalizers, Finalizer) {
		// The update brings the cluster back here through the informer.
		update := c.butler.ButlerV1alpha1().TenantClusters(tc.Namespace).Update
		_, err := controllerkit.EnsureFinalizer(ctx, tc, Finalizer, update, &c.written)
		if apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
	if wrote, err := c.applySchedules(ctx, tc); wrote || err != nil {
		return err
	}
	if wrote, err := c.takeOperation(ctx, tc); wrote || err != nil {
		return err
	}
	if plan := c.asleepPlan(tc); plan != nil {
		return c.reconcileAsleep(ctx, tc, plan)
	}
	if c.secrets != nil {
		c.secrets.Wake(TenantNamespace(tc))
	}
	s := c.newState(tc)
	outcome, ensureErr := c.plan.Ensure(ctx, s, tc.Generation)
	status := c.status(tc, s, outcome, ensureErr)
	wakeCondition(tc, status)
	if stored, err := c.writeStatus(ctx, tc, status); !stored || err != nil {
		return err
	}
	c.recordReconcile(tc, outcome, ensureErr, status)
	c.recordWake(tc, status)
	if err := c.refuseSnapshots(ctx, s); err != nil {
		return err
	}
	if ensureErr == nil && s.recheckAfter > 0 {
		return controllerkit.RequeueAfter(s.recheckAfter)
	}
	return ensureErr
}

// cached is the informer's cluster of namespace/name.
func (c *Controller) cached(namespace, name string) (*v1alpha1.TenantCluster, error) {
	return c.clusters.TenantClusters(namespace).Get(name)
}

// servedOnce says whether the cluster's control plane has been Ready, or readied without
// starting for wake on request (either way the status names its admin kubeconfig Secret, which
// minting a kubeconfig needs). Without wake on request, a cluster created hibernated is
// provisioned first, then put to sleep: its data (the kubeadm setup, RBAC's bootstrap), its
// endpoint and its kubeconfigs must exist to be kept.
func servedOnce(tc *v1alpha1.TenantCluster) bool {
	return tc.Status.KubeconfigSecretRef != nil
}

// delete runs the plan backwards and lets the cluster go once everything it made is gone.
func (c *Controller) delete(ctx context.Context, tc *v1alpha1.TenantCluster) error {
	if !slices.Contains(tc.Finalizers, Finalizer) {
		return nil
	}
	if hibernation.Asleep(tc) {
		// Cluster API acts on no object of a paused Cluster, its deletion included. The
		// control plane stays stopped: the deletion needs nothing from inside the tenant.
		if err := c.objects.unpause(ctx, TenantNamespace(tc), tc.Name); err != nil {
			return err
		}
	}
	if err := c.deleteScheduledSnapshots(ctx, tc); err != nil {
		return err
	}
	s := c.newState(tc)
	left, err := c.plan.Cleanup(ctx, s)
	if err != nil || left != "" {
		status := tc.Status.DeepCopy()
		status.Phase = v1alpha1.TenantClusterDeleting
		desc := fmt.Sprintf("removing the %s", left)
		state := "Processing"
		if err != nil {
			desc, state = err.Error(), "Error"
		}
		c.setLastOperation(status, "Delete", state, deleteProgress(c.plan, left), desc)
		stored, werr := c.writeStatus(ctx, tc, status)
		if werr != nil && err == nil {
			err = werr
		}
		// Only a stored move is told: one that lost to a newer version was told by its
		// reconcile, and telling it again made the Event a series.
		if stored || err != nil {
			c.recordDelete(tc, desc, err)
		}
		return err
	}
	klog.FromContext(ctx).Info("Everything the tenant cluster made is gone; removing the finalizer")
	c.forgetAccess(string(tc.UID))
	c.forgetAudit(string(tc.UID))
	c.forgetGitOps(string(tc.UID))
	c.repairsTold.Delete(TenantNamespace(tc))
	c.objects.forget(TenantNamespace(tc))
	tc.Finalizers = slices.DeleteFunc(tc.Finalizers, func(f string) bool { return f == Finalizer })
	_, err = c.butler.ButlerV1alpha1().TenantClusters(tc.Namespace).Update(ctx, tc, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// deleteProgress is the share of the steps already cleaned up, left being the one in progress.
func deleteProgress(plan steps.Plan[*state], left string) int32 {
	for i, s := range plan {
		if s.Name == left {
			return int32((len(plan) - 1 - i) * 100 / len(plan))
		}
	}
	return 100
}

// writeStatus writes status if it differs from what is stored. stored says whether status is
// what the cluster now holds: false when the write lost to a newer version, whose reconcile
// will then tell the same transitions, so Events are made only of stored ones (otherwise one
// transition became an Event series of two, seen during a Lease failover).
func (c *Controller) writeStatus(ctx context.Context, tc *v1alpha1.TenantCluster, status *v1alpha1.TenantClusterStatus) (stored bool, err error) {
	setKstatusConditions(status, tc.Generation)
	if apiequality.Semantic.DeepEqual(&tc.Status, status) {
		return true, nil
	}
	updated := tc.DeepCopy()
	updated.Status = *status
	got, err := c.butler.ButlerV1alpha1().TenantClusters(tc.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return false, nil // a newer cluster is on its way through the informer
	}
	if err != nil {
		return false, err
	}
	c.written.Wrote(tc.UID, tc.ResourceVersion, got.ResourceVersion)
	return true, nil
}
