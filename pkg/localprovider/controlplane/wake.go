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
)

var tenantClusters = schema.GroupVersionResource{Group: "butler.butlerlabs.dev", Version: "v1alpha1", Resource: "tenantclusters"}

// ensureWakeProxy gives a wake-on-request tenant (the annotation butler copies from the
// TenantCluster's spec.hibernation) a listener on its endpoint's port and kube-apiserver an
// internal port; it takes them away when the annotation goes (kube-apiserver then restarts on
// the endpoint's port).
func (c *Controller) ensureWakeProxy(ctx context.Context, tcp *unstructured.Unstructured, pl *plane) error {
	annotations := tcp.GetAnnotations()
	want := annotations[hibernation.WakeOnRequestAnnotation] == "true"
	idle, _ := time.ParseDuration(annotations[hibernation.IdleTimeoutAnnotation])

	pl.mu.Lock()
	proxy, rec := pl.proxy, pl.rec
	pl.mu.Unlock()
	if !want {
		if rec.InternalPort == 0 {
			return nil
		}
		pl.closeProxy()
		pl.stop()
		c.ports.release(rec.InternalPort, rec.UID)
		pl.mu.Lock()
		pl.rec.InternalPort = 0
		rec = pl.rec
		pl.mu.Unlock()
		return writeRecord(pl.paths, rec)
	}
	if rec.InternalPort == 0 {
		port, err := c.ports.allocate(rec.UID)
		if err != nil {
			return err
		}
		// kube-apiserver leaves the endpoint's port to the listener.
		pl.stop()
		pl.mu.Lock()
		pl.rec.InternalPort = port
		rec = pl.rec
		pl.mu.Unlock()
		if err := writeRecord(pl.paths, rec); err != nil {
			return err
		}
	}
	if proxy == nil {
		tc := tenantClusterOf(tcp)
		p, err := startWakeProxy(endpointString(pl.address(), rec.Port), endpointString(pl.address(), rec.InternalPort), pl.admitting,
			func(ctx context.Context, remote string) error { return c.recordWake(ctx, tc, pl, remote) },
			func(ctx context.Context, d time.Duration) error { return c.recordIdle(ctx, tc, d) })
		if err != nil {
			return fmt.Errorf("the wake-on-request listener cannot hold port %d of the endpoint: %w", rec.Port, err)
		}
		pl.mu.Lock()
		pl.proxy, proxy = p, p
		pl.mu.Unlock()
		klog.FromContext(ctx).Info("Wake-on-request listener holds the endpoint", "port", rec.Port, "apiServerPort", rec.InternalPort)
	}
	proxy.setIdleTimeout(idle)
	return nil
}

func tenantClusterOf(tcp *unstructured.Unstructured) types.NamespacedName {
	l := tcp.GetLabels()
	return types.NamespacedName{Namespace: l[external.TenantClusterNamespaceLabel], Name: l[external.TenantClusterLabel]}
}

// recordWake starts the processes without waiting for the wake to come back through Cluster
// API, and writes the wish to wake into the TenantCluster (spec.hibernation.hibernated false, and
// who asked) while they start. A cluster being deleted or paused is not woken; when the wish
// cannot be written, the processes stop again.
func (c *Controller) recordWake(ctx context.Context, tc types.NamespacedName, pl *plane, remote string) error {
	start := time.Now()
	asleep, err := c.hibernationWish(ctx, tc)
	if err != nil {
		return err
	}
	pl.requestWake()
	if asleep {
		note := fmt.Sprintf("woken by a request from %s at %s", remote, time.Now().UTC().Format(time.RFC3339))
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
