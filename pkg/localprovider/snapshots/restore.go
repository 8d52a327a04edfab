package snapshots

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/steward"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/datastore"
	"github.com/butlerdotdev/butler-apiserver/pkg/snapshot"
)

var _ controlplane.Restorer = &Controller{}

// Restore replaces the tenant's data with the snapshot its TenantCluster's spec.restoreFrom
// names, once (status.restore records it), while the control plane is stopped: a new cluster's
// before its first start, with what carries the source's identity dropped; an existing
// cluster's (in place) after stopping it, everything replaced. The snapshot is written into a
// fresh prefix and the tenant switched to it in one step, so the control plane starts on the old
// data or on the whole snapshot, never on part of it. A checksum that does not match or a snapshot of a newer
// version fails it, and the control plane stays stopped with the reason in its status.
func (c *Controller) Restore(ctx context.Context, tcp *unstructured.Unstructured, store controlplane.TenantStore, stop func()) (bool, string, error) {
	if tcp.GetAnnotations()[v1alpha1.RestoreFromAnnotation] == "" {
		return false, "", nil
	}
	run, pending, msg, err := c.restoreAsked(ctx, tcp, store)
	if run == nil {
		return pending, msg, err
	}
	target, err := external.FromUnstructured[steward.TenantControlPlane](tcp)
	if err != nil {
		return true, "", err
	}
	if msg := newerVersion(run.snap.Status.KubernetesVersion, target.Spec.Kubernetes.Version); msg != "" {
		return c.restoreFailed(ctx, run, msg)
	}
	if err := c.setRestore(ctx, run.tc, run.status); err != nil {
		return true, "", err
	}
	return c.writeRestore(ctx, tcp, store, stop, run)
}

// restoreRun is a restore to run: the cluster, its snapshot and the status it records.
type restoreRun struct {
	tc     *v1alpha1.TenantCluster
	snap   *v1alpha1.TenantClusterSnapshot
	status v1alpha1.RestoreStatus
}

// restoreAsked is the restore the cluster asks for and may run now; nil with Restore's answer
// (pending, the message, err) when there is none, or none yet.
func (c *Controller) restoreAsked(ctx context.Context, tcp *unstructured.Unstructured, store controlplane.TenantStore) (*restoreRun, bool, string, error) {
	// Read live, not from the informers: a provider just started may not have them yet, and a
	// new cluster must not start before its restore.
	labels := tcp.GetLabels()
	tc, err := c.deps.Butler.ButlerV1alpha1().TenantClusters(labels[external.TenantClusterNamespaceLabel]).Get(ctx, labels[external.TenantClusterLabel], metav1.GetOptions{})
	if err != nil {
		return nil, true, "reading the TenantCluster to restore", err
	}
	if tc.Spec.RestoreFrom == nil {
		return nil, false, "", nil
	}
	from := tc.Spec.RestoreFrom.Name
	rec := tc.Status.Restore
	if rec != nil && rec.SnapshotName == from && rec.Phase == v1alpha1.RestoreSucceeded {
		return nil, false, "", nil // done: it never runs twice
	}
	snap, err := c.deps.Butler.ButlerV1alpha1().TenantClusterSnapshots(tc.Namespace).Get(ctx, from, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, true, fmt.Sprintf("waiting for TenantClusterSnapshot %s to restore from: it does not exist", from), nil
	}
	if err != nil {
		return nil, true, "", err
	}
	if msg := notAdmitted(tc, snap); msg != "" {
		return nil, true, "restore from " + from + " refused: " + msg, nil
	}
	if rec != nil && rec.SnapshotUID == string(snap.UID) && rec.Phase == v1alpha1.RestoreFailed {
		return nil, true, "restore from " + from + " failed: " + rec.Message, nil
	}
	if snap.Status.Phase != v1alpha1.SnapshotReady {
		return nil, true, fmt.Sprintf("waiting for TenantClusterSnapshot %s to be Ready (it is %s)", from, orPending(snap.Status.Phase)), nil
	}
	// In place when the cluster has data of its own; a restore under way keeps what it was.
	inPlace := false
	if rec != nil && rec.SnapshotUID == string(snap.UID) && rec.Phase == v1alpha1.RestoreRunning {
		inPlace = rec.InPlace
	} else {
		resp, err := store.Client.Get(ctx, store.Prefix, clientv3.WithRange(datastore.ObjectsEnd(store.Prefix)), clientv3.WithCountOnly())
		if err != nil {
			return nil, true, "", err
		}
		inPlace = resp.Count > 0
	}
	return &restoreRun{tc: tc, snap: snap, status: v1alpha1.RestoreStatus{SnapshotName: from, SnapshotUID: string(snap.UID),
		Revision: snap.Status.Revision, InPlace: inPlace, Phase: v1alpha1.RestoreRunning}}, false, "", nil
}

// restoreFailed records the restore Failed with msg; the control plane stays stopped.
func (c *Controller) restoreFailed(ctx context.Context, run *restoreRun, msg string) (bool, string, error) {
	run.status.Phase, run.status.Message = v1alpha1.RestoreFailed, msg
	return true, "restore from " + run.status.SnapshotName + " failed: " + msg, c.setRestore(ctx, run.tc, run.status)
}

// writeRestore stops the control plane, writes the verified snapshot into the fresh prefix,
// switches the tenant to it and records the restore Succeeded.
func (c *Controller) writeRestore(ctx context.Context, tcp *unstructured.Unstructured, store controlplane.TenantStore, stop func(), run *restoreRun) (bool, string, error) {
	from, snap := run.status.SnapshotName, run.snap
	logger := klog.FromContext(ctx).WithValues("snapshot", run.tc.Namespace+"/"+from, "inPlace", run.status.InPlace)
	start := time.Now()
	stop() // in place: the control plane switch's stop; a new cluster has nothing running
	logger.Info("Restoring: the control plane is stopped", "took", time.Since(start).Round(time.Millisecond))
	// No snapshot of the tenant streams meanwhile (one that started before holds the data as it was).
	unlock := c.lockTenant(string(tcp.GetUID()))
	defer unlock()
	start = time.Now()
	st, err := c.storeOf(ctx, snap)
	if err != nil {
		return true, "restoring from " + from, err
	}
	if err := verify(ctx, st, snap); err != nil {
		var mismatch *snapshot.ChecksumMismatchError
		if errors.As(err, &mismatch) {
			return c.restoreFailed(ctx, run, err.Error())
		}
		return true, "", err
	}
	data, err := st.Open(ctx, DataName(snap))
	if err != nil {
		return true, "", err
	}
	defer data.Close()
	r, err := snapshot.NewReader(data)
	if err != nil {
		return c.restoreFailed(ctx, run, err.Error())
	}
	// Into a prefix nobody reads, then one switch: a restore cut short leaves the data as it was
	// (the next attempt writes the fresh prefix again from its start).
	stats, err := restoreData(ctx, store, r, run.status.InPlace)
	if err != nil {
		return true, "restoring from " + from, err
	}
	written := time.Now()
	if err := store.SwitchToFresh(ctx); err != nil {
		return true, "restoring from " + from, err
	}
	logger.Info("Restore written and switched to", "prefix", store.Fresh, "write", written.Sub(start).Round(time.Millisecond),
		"switch", time.Since(written).Round(time.Millisecond))
	now := metav1.Now()
	run.status.Phase, run.status.ObjectCount, run.status.Dropped, run.status.CompletionTime = v1alpha1.RestoreSucceeded, stats.Written, stats.Dropped, &now
	logger.Info("Restored", "objects", stats.Written, "dropped", stats.Dropped, "took", time.Since(start).Round(time.Millisecond))
	if err := c.setRestore(ctx, run.tc, run.status); err != nil {
		return true, "", err
	}
	return false, "", nil
}

// notAdmitted says why snap is not the snapshot admission admitted for tc's spec.restoreFrom
// (v1alpha1.RestorePinAnnotation): one deleted and made again under the name since, by someone
// who may take snapshots but not restore, or a restoreFrom set before restores were pinned. ""
// when it is the one. Nothing is written: the control plane waits with this message until a
// Team admin sets spec.restoreFrom again.
func notAdmitted(tc *v1alpha1.TenantCluster, snap *v1alpha1.TenantClusterSnapshot) string {
	pinned, found := tc.Annotations[v1alpha1.RestorePinAnnotation], v1alpha1.RestorePin(snap.Spec.ClusterRef.Name, string(snap.UID))
	switch {
	case pinned == "":
		return fmt.Sprintf("no snapshot was pinned when spec.restoreFrom was admitted (annotation %s): %s", v1alpha1.RestorePinAnnotation, setAgain)
	case pinned != found:
		return fmt.Sprintf("TenantClusterSnapshot %s is not the one admitted (cluster/uid %s; it is %s): it was deleted and made again since; %s",
			snap.Name, pinned, found, setAgain)
	}
	return ""
}

// setAgain is how a Team admin restores the snapshot there now.
const setAgain = "to restore it a Team admin sets spec.restoreFrom again (in place: remove it, then set it; a new cluster: make it again)"

// restoreData writes the snapshot into store.Fresh: in place, with what fromNow names taken
// from the data it replaces instead of from the snapshot (the Nodes of the Machines that exist,
// RBAC, ServiceAccounts and their tokens, the API endpoint's policy of now) and the namespaces protected now kept
// protected (keepProtected); for a new cluster, without what carries the source's identity or
// its Team's access.
func restoreData(ctx context.Context, store controlplane.TenantStore, r *snapshot.Reader, inPlace bool) (snapshot.RestoreStats, error) {
	if !inPlace {
		return snapshot.RestoreInto(ctx, store.Client, store.Fresh, r, snapshot.RestoreOptions{Keep: keepForNewIdentity})
	}
	// The restored namespaces: a binding (or account) of now in a namespace the snapshot lacks
	// would be left there, unseen by the access step, for whoever recreates the namespace.
	namespaces := map[string]bool{}
	stats, err := snapshot.RestoreInto(ctx, store.Client, store.Fresh, r, snapshot.RestoreOptions{
		Keep: func(rec snapshot.Record) bool {
			if ns, ok := strings.CutPrefix(rec.Key, "namespaces/"); ok {
				namespaces[ns] = true
			}
			return !isFromNow(rec)
		}})
	if err != nil {
		return stats, err
	}
	for _, p := range fromNow {
		var opts []clientv3.OpOption
		if !p.exact {
			opts = append(opts, clientv3.WithPrefix())
		}
		resp, err := store.Client.Get(ctx, store.Prefix+p.prefix, opts...)
		if err != nil {
			return stats, err
		}
		var ops []clientv3.Op
		for _, kv := range resp.Kvs {
			key := strings.TrimPrefix(string(kv.Key), store.Prefix)
			if p.take != nil && !p.take(kv.Value) {
				continue
			}
			if ns := namespaceOf(key); ns != "" && !namespaces[ns] {
				continue
			}
			ops = append(ops, clientv3.OpPut(store.Fresh+key, string(kv.Value)))
		}
		stats.Written += int64(len(ops))
		for len(ops) > 0 { // etcd's default bound of 128 operations a transaction
			n := min(len(ops), 100)
			if _, err := store.Client.Txn(ctx).Then(ops[:n]...).Commit(); err != nil {
				return stats, err
			}
			ops = ops[n:]
		}
	}
	// The snapshot's Nodes, RBAC and accounts are replaced by those of now, not left out: Dropped
	// counts only what a new cluster leaves out (status.restore.dropped).
	stats.Dropped = 0
	return stats, keepProtected(ctx, store, namespaces)
}

// keepProtected labels external.ProtectedNamespaceLabel=true each restored namespace that is
// protected now. The rule: a namespace protected now or in the snapshot is protected after the
// restore. The label is only ever added, never removed, so a restore cannot reopen a namespace
// to operators (their bindings of now were made knowing it closed).
func keepProtected(ctx context.Context, store controlplane.TenantStore, namespaces map[string]bool) error {
	resp, err := store.Client.Get(ctx, store.Prefix+"namespaces/", clientv3.WithPrefix())
	if err != nil {
		return err
	}
	for _, kv := range resp.Kvs {
		key := strings.TrimPrefix(string(kv.Key), store.Prefix)
		if !namespaces[strings.TrimPrefix(key, "namespaces/")] {
			continue
		}
		now, err := decodeNamespace(kv.Value)
		if err != nil {
			return fmt.Errorf("%s of now: %w", key, err)
		}
		if now.Labels[external.ProtectedNamespaceLabel] == "true" {
			if err := protect(ctx, store, key); err != nil {
				return fmt.Errorf("%s restored: %w", key, err)
			}
		}
	}
	return nil
}

// protect sets external.ProtectedNamespaceLabel=true on the restored Namespace at key.
func protect(ctx context.Context, store controlplane.TenantStore, key string) error {
	resp, err := store.Client.Get(ctx, store.Fresh+key)
	if err != nil {
		return err
	}
	if len(resp.Kvs) == 0 {
		return errors.New("not found")
	}
	ns, err := decodeNamespace(resp.Kvs[0].Value)
	if err != nil || ns.Labels[external.ProtectedNamespaceLabel] == "true" {
		return err
	}
	metav1.SetMetaDataLabel(&ns.ObjectMeta, external.ProtectedNamespaceLabel, "true")
	var buf bytes.Buffer
	if err := namespaceEncoder.Encode(ns, &buf); err != nil {
		return err
	}
	_, err = store.Client.Put(ctx, store.Fresh+key, buf.String())
	return err
}

func verify(ctx context.Context, st snapshot.Store, snap *v1alpha1.TenantClusterSnapshot) error {
	data, err := st.Open(ctx, DataName(snap))
	if err != nil {
		return err
	}
	defer data.Close()
	_, err = snapshot.Verify(data, snap.Status.Checksum)
	return err
}

// setRestore writes the TenantCluster's status.restore (a merge patch of that field only).
func (c *Controller) setRestore(ctx context.Context, tc *v1alpha1.TenantCluster, rs v1alpha1.RestoreStatus) error {
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"restore": rs}})
	_, err := c.deps.Butler.ButlerV1alpha1().TenantClusters(tc.Namespace).Patch(ctx, tc.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

// newerVersion says why a snapshot of version from cannot be restored into a cluster of
// version to; "" when it can.
func newerVersion(from, to string) string {
	f, errF := version.ParseSemantic(from)
	t, errT := version.ParseSemantic(to)
	if errF != nil || errT != nil || !f.GreaterThan(t) {
		return ""
	}
	return fmt.Sprintf("the snapshot is of Kubernetes %s, newer than the cluster's %s: its objects may not read in an older version", from, to)
}

func orPending(p v1alpha1.SnapshotPhase) v1alpha1.SnapshotPhase {
	if p == "" {
		return v1alpha1.SnapshotPending
	}
	return p
}
