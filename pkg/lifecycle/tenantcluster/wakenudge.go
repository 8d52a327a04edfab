package tenantcluster

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/steward"
)

const (
	// providerNudgeAfter is how long the provider may leave a control plane object's spec
	// unobserved during a wake before butler writes nudgeAnnotation on it.
	providerNudgeAfter = 10 * time.Second
	// nudgeAnnotation holds when butler last nudged the provider (RFC 3339); nothing reads it.
	nudgeAnnotation = "butler.butlerlabs.dev/provider-nudged"
)

// nudgeMissedWake: capi-steward reconciles a StewardControlPlane on its own events only, not its
// Cluster's (docs/providers.md item 22). The wake unpauses the Cluster and raises the replicas in
// one reconcile; a provider whose cached Cluster is still paused returns without a word and never
// looks again, and the TenantControlPlane sleeps on. While it sleeps with replicas asked, a spec
// generation the provider's conditions have not observed for providerNudgeAfter gets an
// annotation written, an event it does receive; again every providerNudgeAfter.
func (c *Controller) nudgeMissedWake(ctx context.Context, s *state, cp *unstructured.Unstructured) error {
	typed, err := external.FromUnstructured[steward.StewardControlPlane](cp)
	if err != nil || ptr.Deref(typed.Spec.Replicas, 1) == 0 {
		return err
	}
	var observed int64
	for _, cond := range typed.Status.Conditions {
		observed = max(observed, cond.ObservedGeneration)
	}
	if observed >= cp.GetGeneration() {
		return nil
	}
	// Since this generation was first found unobserved, or the last nudge (this process's).
	key := string(cp.GetUID())
	seen, _ := c.unobserved.LoadOrStore(key, unobservedSince{generation: cp.GetGeneration(), since: c.clock.Now()})
	u := seen.(unobservedSince)
	if u.generation != cp.GetGeneration() {
		u = unobservedSince{generation: cp.GetGeneration(), since: c.clock.Now()}
		c.unobserved.Store(key, u)
	}
	if wait := providerNudgeAfter - c.clock.Since(u.since); wait > 0 {
		s.recheckWithin(wait)
		return nil
	}
	r, err := c.objects.resource(external.StewardControlPlaneGVK, cp.GetNamespace())
	if err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, nudgeAnnotation, c.clock.Now().UTC().Format(time.RFC3339))
	if _, err := r.Patch(ctx, cp.GetName(), types.MergePatchType, []byte(patch), external.Workers.PatchOptions()); err != nil {
		return err
	}
	c.unobserved.Store(key, unobservedSince{generation: cp.GetGeneration(), since: c.clock.Now()})
	s.recheckWithin(providerNudgeAfter)
	return nil
}

// unobservedSince is when a control plane object's generation was first found unobserved by its
// provider, or last nudged.
type unobservedSince struct {
	generation int64
	since      time.Time
}
