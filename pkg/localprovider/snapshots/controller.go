// Package snapshots is the local provider's side of TenantClusterSnapshots: it owns the
// datastore's credentials, so it takes each snapshot (the tenant's prefix at one revision,
// compaction held off while it streams) into the snapshot store ButlerConfig names, deletes a
// snapshot's data with it, and restores a snapshot into a tenant's prefix while its control plane
// is stopped (a new cluster from spec.restoreFrom, with the source's identity dropped, or an
// existing one in place). A remote control plane provider has no contract for any of this.
package snapshots

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	listers "github.com/butlerdotdev/butler-apiserver/pkg/generated/listers/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane"
	"github.com/butlerdotdev/butler-apiserver/pkg/snapshot"
)

const (
	finalizer    = v1alpha1.SnapshotDataFinalizer
	butlerConfig = "butler"
)

// Options configure the snapshots.
type Options struct {
	// Dir is the snapshot store's directory when ButlerConfig names none.
	Dir string
	// PageSize is how many keys one range read returns.
	PageSize int64
}

// Controller takes and deletes snapshots and restores them.
type Controller struct {
	opts     Options
	deps     *controllerkit.Deps
	planes   *controlplane.Controller
	snaps    listers.TenantClusterSnapshotLister
	clusters listers.TenantClusterLister
	configs  listers.ButlerConfigLister
	queue    *controllerkit.Queue
	synced   []cache.InformerSynced

	// tenants holds one lock per TenantControlPlane UID: a snapshot streams and a restore
	// writes and switches the tenant's data under it, never both at once.
	tenantsMu sync.Mutex
	tenants   map[string]*sync.Mutex

	// turns shares the queue's takes fairly between Teams.
	turns *turns
}

// lockTenant takes the tenant's data lock and returns its release.
func (c *Controller) lockTenant(uid string) func() {
	c.tenantsMu.Lock()
	if c.tenants == nil {
		c.tenants = map[string]*sync.Mutex{}
	}
	m := c.tenants[uid]
	if m == nil {
		m = &sync.Mutex{}
		c.tenants[uid] = m
	}
	c.tenantsMu.Unlock()
	m.Lock()
	return m.Unlock
}

// New builds the controller; cp is the control plane controller whose datastores it reads.
func New(d *controllerkit.Deps, cp *controlplane.Controller, opts Options) (*Controller, error) {
	if opts.Dir == "" || !filepath.IsAbs(opts.Dir) {
		return nil, fmt.Errorf("the snapshot directory %q is not an absolute path", opts.Dir)
	}
	b := d.ButlerInformers.Butler().V1alpha1()
	c := &Controller{opts: opts, deps: d, planes: cp,
		snaps: b.TenantClusterSnapshots().Lister(), clusters: b.TenantClusters().Lister(), configs: b.ButlerConfigs().Lister()}
	c.turns = newTurns()
	c.queue = controllerkit.NewQueue("tenantclustersnapshots", c.reconcile)
	if _, err := b.TenantClusterSnapshots().Informer().AddEventHandler(c.queue.Handler(func(obj any) []string {
		s, ok := obj.(*v1alpha1.TenantClusterSnapshot)
		if !ok {
			return nil
		}
		key := s.Namespace + "/" + s.Name
		if toTake(s) && (s.Status.Phase == "" || s.Status.Message == waitingForTurn) {
			c.turns.want(s.Namespace, key) // new, or waiting for its turn before a restart
		}
		return []string{key}
	})); err != nil {
		return nil, err
	}
	c.synced = []cache.InformerSynced{b.TenantClusterSnapshots().Informer().HasSynced, b.TenantClusters().Informer().HasSynced, b.ButlerConfigs().Informer().HasSynced}
	return c, nil
}

// Run takes snapshots until ctx ends, one at a time (each streams a whole tenant).
func (c *Controller) Run(ctx context.Context) {
	c.queue.Run(ctx, 1, c.synced...)
}

// Store is the snapshot store ButlerConfig names, or the provider's directory. An S3 store's
// keys are read from its Secret on each use and kept nowhere else.
func (c *Controller) Store(ctx context.Context) (snapshot.Store, error) {
	bc, err := c.configs.Get(butlerConfig)
	if err != nil || bc.Spec.SnapshotStore == nil {
		return snapshot.Dir{Root: c.opts.Dir}, nil
	}
	switch s := bc.Spec.SnapshotStore; {
	case s.S3 != nil:
		return c.s3Store(ctx, s.S3)
	case s.Directory != nil:
		return snapshot.Dir{Root: s.Directory.Path}, nil
	}
	return snapshot.Dir{Root: c.opts.Dir}, nil
}

// Keys of an S3 store's credentials Secret.
const (
	accessKeyIDKey     = "accessKeyID"
	secretAccessKeyKey = "secretAccessKey"
)

func (c *Controller) s3Store(ctx context.Context, s *v1alpha1.S3SnapshotStore) (snapshot.Store, error) {
	ref := s.CredentialsSecretRef
	secret, err := c.deps.Kube.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the S3 snapshot store's credentials Secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	id, key := string(secret.Data[accessKeyIDKey]), string(secret.Data[secretAccessKeyKey])
	if id == "" || key == "" {
		return nil, fmt.Errorf("the S3 snapshot store's credentials Secret %s/%s needs the keys %s and %s", ref.Namespace, ref.Name, accessKeyIDKey, secretAccessKeyKey)
	}
	return snapshot.NewS3(snapshot.S3Config{Endpoint: s.Endpoint, Bucket: s.Bucket, Prefix: s.Prefix, Region: s.Region,
		AccessKeyID: id, SecretAccessKey: key})
}

// turnRecheck is how soon a snapshot waiting for its turn is looked at again: each other Team's
// waiting snapshot is taken in between, or found waiting for something else.
const turnRecheck = time.Second

// waitingForTurn is the message of a snapshot that waits for its turn.
const waitingForTurn = "waiting for its turn: other Teams' snapshots are taken first"

// toTake says whether the snapshot is still to be taken.
func toTake(s *v1alpha1.TenantClusterSnapshot) bool {
	return s.DeletionTimestamp == nil && s.Status.Phase != v1alpha1.SnapshotReady && s.Status.Phase != v1alpha1.SnapshotFailed
}

// DataName is a snapshot's name in the store.
func DataName(s *v1alpha1.TenantClusterSnapshot) string {
	return snapshot.Name(s.Namespace, s.Name, string(s.UID))
}

// reconcile takes one snapshot (key namespace/name) once its cluster, datastore, store and turn
// allow it, or deletes its data when it is deleted.
func (c *Controller) reconcile(ctx context.Context, key string) error {
	ns, name, _ := strings.Cut(key, "/")
	s, err := c.snaps.TenantClusterSnapshots(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.turns.done(ns, key)
		return nil
	}
	if err != nil {
		return err
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("snapshot", key))
	// Unless it waits for its turn below, it is taken or waits for something else.
	waitsForTurn := false
	defer func() {
		if !waitsForTurn {
			c.turns.done(ns, key)
		}
	}()
	if s.DeletionTimestamp != nil {
		return c.deleteData(ctx, s)
	}
	if !toTake(s) {
		return nil
	}
	tc, done, err := c.snapshotCluster(ctx, s)
	if done {
		return err
	}
	tcp, ok := c.planes.TenantControlPlane(tc.Status.TenantNamespace, tc.Name)
	if ok && !external.ProviderOffers(tcp.GetAnnotations(), external.CapabilitySnapshots) {
		// A real Steward's (--external-control-plane-namespaces): not this provider's to take;
		// butler's controllers fail it, as they would with no stand-in running at all.
		klog.FromContext(ctx).V(2).Info("Leaving the snapshot of a control plane this provider does not run")
		return nil
	}
	var store controlplane.TenantStore
	if ok {
		// Where the data is and the stream, under the tenant's lock: a restore's switch moves it.
		defer c.lockTenant(string(tcp.GetUID()))()
		store, err = c.planes.TenantStoreOf(ctx, tcp)
	}
	if !ok || err != nil {
		msg := "waiting for the cluster's control plane to have a datastore"
		if err != nil {
			msg += ": " + err.Error()
		}
		return c.waitPending(ctx, s, msg, 5*time.Second)
	}
	target, err := c.Store(ctx)
	if err != nil {
		return c.waitPending(ctx, s, "waiting for the snapshot store: "+err.Error(), 10*time.Second)
	}
	if !c.turns.take(ns, key) {
		waitsForTurn = true
		c.turns.want(ns, key)
		return c.waitPending(ctx, s, waitingForTurn, turnRecheck)
	}
	return c.takeAndReport(ctx, s, observedVersion(tc), target, store)
}

// snapshotCluster is the snapshot's cluster when its data can be read whole; done (with the
// status written, or err) when it is missing (Failed) or its restore is pending (Pending).
func (c *Controller) snapshotCluster(ctx context.Context, s *v1alpha1.TenantClusterSnapshot) (*v1alpha1.TenantCluster, bool, error) {
	tc, err := c.clusters.TenantClusters(s.Namespace).Get(s.Spec.ClusterRef.Name)
	if apierrors.IsNotFound(err) {
		return nil, true, c.setStatus(ctx, s, func(st *v1alpha1.TenantClusterSnapshotStatus) {
			st.Phase, st.Message = v1alpha1.SnapshotFailed, fmt.Sprintf("TenantCluster %s does not exist", s.Spec.ClusterRef.Name)
		})
	}
	if err != nil {
		return nil, true, err
	}
	if tc.RestorePending() {
		// Its data is being replaced, or is about to be: a snapshot now would hold part of it.
		return nil, true, c.waitPending(ctx, s, "waiting for the cluster's restore from "+tc.Spec.RestoreFrom.Name+" to finish", 5*time.Second)
	}
	return tc, false, nil
}

// waitPending writes the snapshot Pending with msg and looks again after after.
func (c *Controller) waitPending(ctx context.Context, s *v1alpha1.TenantClusterSnapshot, msg string, after time.Duration) error {
	if err := c.setStatus(ctx, s, func(st *v1alpha1.TenantClusterSnapshotStatus) { st.Phase, st.Message = v1alpha1.SnapshotPending, msg }); err != nil {
		return err
	}
	return controllerkit.RequeueAfter(after)
}

// observedVersion is the Kubernetes version the cluster runs (as observed; else as asked).
func observedVersion(tc *v1alpha1.TenantCluster) string {
	if tc.Status.ObservedState != nil && tc.Status.ObservedState.KubernetesVersion != "" {
		return tc.Status.ObservedState.KubernetesVersion
	}
	return tc.Spec.KubernetesVersion
}

// takeAndReport takes the snapshot (Running meanwhile) and writes it Ready or Failed.
func (c *Controller) takeAndReport(ctx context.Context, s *v1alpha1.TenantClusterSnapshot, version string, target snapshot.Store, store controlplane.TenantStore) error {
	start := metav1.Now()
	if err := c.setStatus(ctx, s, func(st *v1alpha1.TenantClusterSnapshotStatus) {
		st.Phase, st.StartTime, st.DataStoreName, st.Message = v1alpha1.SnapshotRunning, &start, store.DataStore, ""
	}); err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	stats, location, err := c.take(ctx, s, target, store, version)
	if err != nil {
		logger.Error(err, "Snapshot failed")
		return c.setStatus(ctx, s, func(st *v1alpha1.TenantClusterSnapshotStatus) {
			st.Phase, st.Message = v1alpha1.SnapshotFailed, err.Error()
		})
	}
	done := metav1.Now()
	logger.Info("Snapshot Ready", "revision", stats.Revision, "objects", stats.Objects, "bytes", stats.Bytes,
		"took", done.Sub(start.Time).Round(time.Millisecond))
	return c.setStatus(ctx, s, func(st *v1alpha1.TenantClusterSnapshotStatus) {
		st.Phase, st.Revision, st.ObjectCount, st.Bytes, st.Checksum = v1alpha1.SnapshotReady, stats.Revision, stats.Objects, stats.Bytes, stats.Checksum
		st.Location, st.KubernetesVersion, st.CompletionTime, st.Message = location, version, &done, ""
	})
}

// take streams the tenant's prefix into the store with compaction held off.
func (c *Controller) take(ctx context.Context, s *v1alpha1.TenantClusterSnapshot, st snapshot.Store, store controlplane.TenantStore, version string) (snapshot.Stats, string, error) {
	pending, err := st.Create(ctx, DataName(s))
	if err != nil {
		return snapshot.Stats{}, "", err
	}
	release := store.HoldCompaction()
	stats, err := snapshot.Take(ctx, store.Client, store.Prefix, snapshot.Header{KubernetesVersion: version}, c.opts.PageSize, pending)
	release()
	if err != nil {
		pending.Abort()
		return stats, "", err
	}
	if err := pending.Commit(); err != nil {
		return stats, "", err
	}
	return stats, st.Location(DataName(s)), nil
}

// deleteData deletes a deleted snapshot's data, then lets the object go.
func (c *Controller) deleteData(ctx context.Context, s *v1alpha1.TenantClusterSnapshot) error {
	if !slices.Contains(s.Finalizers, finalizer) {
		return nil
	}
	// Without a location the snapshot never became Ready: there is data only if the provider
	// stopped between committing it and writing Ready, so a store that cannot be reached (its
	// Secret gone) does not hold the object forever.
	if err := c.deleteStored(ctx, s); err != nil {
		if s.Status.Location != "" {
			return err
		}
		klog.FromContext(ctx).Info("Could not delete what a snapshot that never became Ready may have left", "err", err)
	}
	patch := fmt.Sprintf(`{"metadata":{"finalizers":[%s],"resourceVersion":%q}}`, quotedExcept(s.Finalizers, finalizer), s.ResourceVersion)
	_, err := c.deps.Butler.ButlerV1alpha1().TenantClusterSnapshots(s.Namespace).Patch(ctx, s.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		klog.FromContext(ctx).Info("Snapshot data deleted", "location", s.Status.Location)
	}
	return err
}

func (c *Controller) deleteStored(ctx context.Context, s *v1alpha1.TenantClusterSnapshot) error {
	st, err := c.storeOf(ctx, s)
	if err == nil {
		err = st.Delete(ctx, DataName(s))
	}
	if err != nil {
		return fmt.Errorf("deleting the snapshot's data: %w", err)
	}
	return nil
}

// storeOf is the store that holds s: a directory snapshot's location names its directory (the
// ButlerConfig may have named another since); others are in the store ButlerConfig names.
func (c *Controller) storeOf(ctx context.Context, s *v1alpha1.TenantClusterSnapshot) (snapshot.Store, error) {
	if loc, suffix := s.Status.Location, "/"+DataName(s)+".snap"; strings.HasSuffix(loc, suffix) && filepath.IsAbs(loc) {
		return snapshot.Dir{Root: strings.TrimSuffix(loc, suffix)}, nil
	}
	return c.Store(ctx)
}

func quotedExcept(list []string, drop string) string {
	var out []string
	for _, f := range list {
		if f != drop {
			out = append(out, fmt.Sprintf("%q", f))
		}
	}
	return strings.Join(out, ",")
}

// setStatus writes the status change mutate makes, if it changes anything.
func (c *Controller) setStatus(ctx context.Context, s *v1alpha1.TenantClusterSnapshot, mutate func(*v1alpha1.TenantClusterSnapshotStatus)) error {
	updated := s.DeepCopy()
	mutate(&updated.Status)
	if equalStatus(updated.Status, s.Status) {
		return nil
	}
	got, err := c.deps.Butler.ButlerV1alpha1().TenantClusterSnapshots(s.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	*s = *got
	return nil
}

func equalStatus(a, b v1alpha1.TenantClusterSnapshotStatus) bool {
	return a.Phase == b.Phase && a.Message == b.Message && a.Revision == b.Revision && a.Checksum == b.Checksum &&
		a.DataStoreName == b.DataStoreName && a.StartTime.Equal(b.StartTime)
}
