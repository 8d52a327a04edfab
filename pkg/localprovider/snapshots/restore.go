package snapshots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane"
	"github.com/butlerdotdev/butler-apiserver/pkg/snapshot"
)

var _ controlplane.Restorer = &Controller{}

// Restore fills the tenant's prefix from the snapshot its TenantCluster's spec.restoreFrom
// names, once (status.restore records it), while the control plane is stopped: a new cluster's
// prefix before its first start, with what carries the source's identity dropped; an existing
// cluster's (in place) after stopping it, everything replaced. The control plane starts again
// only when the restore is whole. A checksum that does not match or a snapshot of a newer
// version fails it, and the control plane stays stopped with the reason in its status.
func (c *Controller) Restore(ctx context.Context, tcp *unstructured.Unstructured, store controlplane.TenantStore, stop func()) (bool, string, error) {
	if tcp.GetAnnotations()[v1alpha1.RestoreFromAnnotation] == "" {
		return false, "", nil
	}
	// Read live, not from the informers: a provider just started may not have them yet, and a
	// new cluster must not start before its restore.
	labels := tcp.GetLabels()
	tc, err := c.deps.Butler.ButlerV1alpha1().TenantClusters(labels[component.TenantClusterNamespaceLabel]).Get(ctx, labels[component.TenantClusterLabel], metav1.GetOptions{})
	if err != nil {
		return true, "reading the TenantCluster to restore", err
	}
	if tc.Spec.RestoreFrom == nil {
		return false, "", nil
	}
	from := tc.Spec.RestoreFrom.Name
	rec := tc.Status.Restore
	if rec != nil && rec.SnapshotName == from && rec.Phase == v1alpha1.RestoreSucceeded {
		return false, "", nil // done: it never runs twice
	}
	snap, err := c.deps.Butler.ButlerV1alpha1().TenantClusterSnapshots(tc.Namespace).Get(ctx, from, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, fmt.Sprintf("waiting for TenantClusterSnapshot %s to restore from: it does not exist", from), nil
	}
	if err != nil {
		return true, "", err
	}
	if rec != nil && rec.SnapshotUID == string(snap.UID) && rec.Phase == v1alpha1.RestoreFailed {
		return true, "restore from " + from + " failed: " + rec.Message, nil
	}
	if snap.Status.Phase != v1alpha1.SnapshotReady {
		return true, fmt.Sprintf("waiting for TenantClusterSnapshot %s to be Ready (it is %s)", from, orPending(snap.Status.Phase)), nil
	}
	// In place when the cluster has data of its own; a restore under way keeps what it was.
	inPlace := false
	if rec != nil && rec.SnapshotUID == string(snap.UID) && rec.Phase == v1alpha1.RestoreRunning {
		inPlace = rec.InPlace
	} else {
		resp, err := store.Client.Get(ctx, store.Prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return true, "", err
		}
		inPlace = resp.Count > 0
	}
	running := v1alpha1.RestoreStatus{SnapshotName: from, SnapshotUID: string(snap.UID), Revision: snap.Status.Revision, InPlace: inPlace, Phase: v1alpha1.RestoreRunning}
	fail := func(msg string) (bool, string, error) {
		running.Phase, running.Message = v1alpha1.RestoreFailed, msg
		return true, "restore from " + from + " failed: " + msg, c.setRestore(ctx, tc, running)
	}
	target, _ := tcp.Object["spec"].(map[string]any)
	if msg := newerVersion(snap.Status.KubernetesVersion, nestedVersion(target)); msg != "" {
		return fail(msg)
	}
	if err := c.setRestore(ctx, tc, running); err != nil {
		return true, "", err
	}
	stop() // in place: the control plane switch's stop; a new cluster has nothing running
	logger := klog.FromContext(ctx).WithValues("snapshot", tc.Namespace+"/"+from, "inPlace", inPlace)
	start := time.Now()
	st, err := c.storeOf(ctx, snap)
	if err != nil {
		return true, "restoring from " + from, err
	}
	if err := verify(ctx, st, snap); err != nil {
		var mismatch *snapshot.ChecksumMismatchError
		if errors.As(err, &mismatch) {
			return fail(err.Error())
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
		return fail(err.Error())
	}
	opts := snapshot.RestoreOptions{}
	if !inPlace {
		opts.Keep = keepForNewIdentity
	}
	stats, err := snapshot.RestoreInto(ctx, store.Client, store.Prefix, r, opts)
	if err != nil {
		return true, "restoring from " + from, err
	}
	now := metav1.Now()
	running.Phase, running.ObjectCount, running.Dropped, running.CompletionTime = v1alpha1.RestoreSucceeded, stats.Written, stats.Dropped, &now
	logger.Info("Restored", "objects", stats.Written, "dropped", stats.Dropped, "took", time.Since(start).Round(time.Millisecond))
	if err := c.setRestore(ctx, tc, running); err != nil {
		return true, "", err
	}
	return false, "", nil
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

func nestedVersion(spec map[string]any) string {
	cp, _ := spec["kubernetes"].(map[string]any)
	v, _ := cp["version"].(string)
	return v
}

func orPending(p v1alpha1.SnapshotPhase) v1alpha1.SnapshotPhase {
	if p == "" {
		return v1alpha1.SnapshotPending
	}
	return p
}
