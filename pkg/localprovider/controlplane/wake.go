package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/hibernation"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane/wakeproxy"
)

var tenantClusters = schema.GroupVersionResource{Group: "butler.butlerlabs.dev", Version: "v1alpha1", Resource: "tenantclusters"}

// ensureWakeProxy gives a wake-on-request tenant (the annotation butler copies from the
// TenantCluster's spec.hibernation) a listener on its endpoint's port and kube-apiserver an
// internal port; it takes them away when the annotation goes (kube-apiserver then restarts on
// the endpoint's port).
func (c *Controller) ensureWakeProxy(ctx context.Context, tcp *unstructured.Unstructured, pl *plane) error {
	annotations := tcp.GetAnnotations()
	want := annotations[hibernation.WakeOnRequestAnnotation] == "true"
	idle, err := time.ParseDuration(annotations[hibernation.IdleTimeoutAnnotation])
	if err != nil || idle <= 0 {
		idle = hibernation.DefaultIdleTimeout
	}

	pl.mu.Lock()
	proxy, rec := pl.proxy, pl.rec
	pl.mu.Unlock()
	if !want {
		if rec.InternalPort == 0 {
			return nil
		}
		pl.closeProxy()
		pl.stop()
		c.ports.Release(rec.InternalPort, rec.UID)
		pl.mu.Lock()
		pl.rec.InternalPort, pl.rec.ListenAfter = 0, time.Time{}
		rec = pl.rec
		pl.mu.Unlock()
		return writeRecord(pl.paths, rec)
	}
	if rec.InternalPort == 0 {
		if err := c.moveBehindListener(pl, publishedEndpoint(tcp) != ""); err != nil {
			return err
		}
		pl.mu.Lock()
		rec = pl.rec
		pl.mu.Unlock()
	}
	if proxy == nil {
		if wait := time.Until(rec.ListenAfter); wait > 0 {
			// Cluster API's open client still names the endpoint: see moveBehindListener.
			c.tcpQueue.AddAfter(tcp.GetNamespace()+"/"+tcp.GetName(), wait)
			return nil
		}
		tc, uid := tenantClusterOf(tcp), rec.UID
		p, err := wakeproxy.Start(endpointString(pl.address(), rec.Port), wakeproxy.Target{
			UID: uid, Team: tcp.GetNamespace(), Backend: endpointString(pl.address(), rec.InternalPort), Ready: pl.admitting,
			Wake: func(ctx context.Context, remote string) error { return c.recordWake(ctx, tc, pl, remote) },
			Idle: func(ctx context.Context, d time.Duration) error { return c.recordIdle(ctx, tc, d) },
		}, c.wakeGate)
		if err != nil {
			return fmt.Errorf("the wake-on-request listener cannot hold port %d of the endpoint: %w", rec.Port, err)
		}
		pl.mu.Lock()
		pl.proxy, proxy = p, p
		pl.mu.Unlock()
		klog.FromContext(ctx).Info("Wake-on-request listener holds the endpoint", "port", rec.Port, "apiServerPort", rec.InternalPort)
	}
	proxy.SetIdleTimeout(idle)
	return nil
}

// capiDropsConnection is how long Cluster API's ClusterCache takes, at worst, to drop a
// connection whose endpoint refuses: FailureThreshold x (Interval + Timeout) = 5 x (10 s + 5 s),
// as its manager's flag checks say, and a margin.
const capiDropsConnection = 90 * time.Second

// moveBehindListener gives kube-apiserver an internal port and leaves the endpoint's to the
// listener. For a tenant that served on its endpoint already (wakeOnRequest turned on later),
// the listener takes the port only after capiDropsConnection: Cluster API's ClusterCache keeps
// the client it made from the old kubeconfig (the endpoint) until its health probe fails, and
// through a listener it would never fail; each of its reconnects would then wake the cluster
// and its open connection keep it awake. With the endpoint refusing meanwhile, it drops that
// client and makes a new one from <cluster>-kubeconfig, which names the internal port.
func (c *Controller) moveBehindListener(pl *plane, served bool) error {
	port, err := c.ports.Allocate(pl.rec.UID)
	if err != nil {
		return err
	}
	pl.stop()
	pl.mu.Lock()
	pl.rec.InternalPort = port
	if served {
		pl.rec.ListenAfter = time.Now().Add(capiDropsConnection).UTC().Truncate(time.Second)
	}
	rec := pl.rec
	pl.mu.Unlock()
	if served {
		klog.InfoS("Wake-on-request turned on for a tenant that served: its endpoint refuses connections until Cluster API has dropped its client of the endpoint",
			"uid", rec.UID, "port", rec.Port, "apiServerPort", port, "until", rec.ListenAfter)
	}
	return writeRecord(pl.paths, rec)
}

func tenantClusterOf(tcp *unstructured.Unstructured) types.NamespacedName {
	l := tcp.GetLabels()
	return types.NamespacedName{Namespace: l[external.TenantClusterNamespaceLabel], Name: l[external.TenantClusterLabel]}
}

// recordWake starts the processes without waiting for the wake to come back through Cluster
// API, and writes the wish to wake into the TenantCluster (spec.hibernation.hibernated false, and
// that a request woke it: the client's address goes to the log only, not to an annotation every
// viewer of the TenantCluster reads) while they start. A cluster being deleted or paused is not woken; when the wish
// cannot be written, the processes stop again.
func (c *Controller) recordWake(ctx context.Context, tc types.NamespacedName, pl *plane, remote string) error {
	start := time.Now()
	asleep, err := c.hibernationWish(ctx, tc)
	if err != nil {
		return err
	}
	pl.requestWake()
	if asleep {
		note := "woken by a request at " + time.Now().UTC().Format(time.RFC3339)
		if err := c.setHibernated(ctx, tc, false, note); err != nil {
			pl.clearWake()
			pl.notify()
			return err
		}
		klog.InfoS("Wake on request", "tenantCluster", tc.String(), "remote", remote, "recorded", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// recordIdle writes the wish to sleep: nobody used the cluster for d.
func (c *Controller) recordIdle(ctx context.Context, tc types.NamespacedName, d time.Duration) error {
	asleep, err := c.hibernationWish(ctx, tc)
	if err != nil || asleep {
		return err
	}
	klog.InfoS("Idle: hibernating", "tenantCluster", tc.String(), "unusedFor", d)
	return c.setHibernated(ctx, tc, true, fmt.Sprintf("idle for %s (no client connection or request) at %s", d, time.Now().UTC().Format(time.RFC3339)))
}

// hibernationWish reads spec.hibernation.hibernated; an error for a cluster gone, being
// deleted or paused.
func (c *Controller) hibernationWish(ctx context.Context, tc types.NamespacedName) (bool, error) {
	if tc.Name == "" {
		return false, fmt.Errorf("the TenantControlPlane names no TenantCluster")
	}
	u, err := c.deps.Dynamic.Resource(tenantClusters).Namespace(tc.Namespace).Get(ctx, tc.Name, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	if u.GetDeletionTimestamp() != nil {
		return false, fmt.Errorf("TenantCluster %s is being deleted", tc)
	}
	if u.GetAnnotations()[external.TenantClusterPausedAnnotation] == "true" {
		// Held as it is: woken, its control plane would serve bindings the paused lifecycle
		// cannot bring up to date with the Team.
		return false, fmt.Errorf("TenantCluster %s is paused (%s)", tc, external.TenantClusterPausedAnnotation)
	}
	cluster, err := external.FromUnstructured[v1alpha1.TenantCluster](u)
	if err != nil {
		return false, err
	}
	return cluster.Spec.Hibernation != nil && cluster.Spec.Hibernation.Hibernated, nil
}

func (c *Controller) setHibernated(ctx context.Context, tc types.NamespacedName, hibernated bool, note string) error {
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{hibernation.LastChangeAnnotation: note}},
		"spec":     map[string]any{"hibernation": map[string]any{"hibernated": hibernated}},
	})
	_, err := c.deps.Dynamic.Resource(tenantClusters).Namespace(tc.Namespace).Patch(ctx, tc.Name, types.MergePatchType, patch,
		external.LocalProvider.PatchOptions())
	return err
}
