package hibernation

import (
	"time"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// Annotations on the control plane object that tell its provider what the cluster's hibernation
// asks of the endpoint. Steward's and Kamaji's contracts have no field for them; a provider that
// does not know them ignores them.
const (
	// WakeOnRequestAnnotation "true": while the control plane is at 0 replicas, keep its
	// endpoint answering and wake the cluster on the first connection.
	WakeOnRequestAnnotation = "hibernation.butler.butlerlabs.dev/wake-on-request"
	// IdleTimeoutAnnotation is a Go duration: hibernate again after that long unused
	// (DefaultIdleTimeout when absent).
	IdleTimeoutAnnotation = "hibernation.butler.butlerlabs.dev/idle-timeout"
	// ScheduleAppliedAnnotation on the TenantCluster is the schedule time (RFC 3339) last written
	// into spec.hibernation.hibernated, so that one firing is applied once: a user who wakes
	// the cluster by hand after a sleep time is not put back to sleep by it.
	ScheduleAppliedAnnotation = "hibernation.butler.butlerlabs.dev/schedule-applied"
	// LastChangeAnnotation on the TenantCluster says what last set hibernated to false or true
	// other than its user: "woken by a request at <time>", "idle for <d>", "schedule". It names
	// no client address: every viewer of the TenantCluster reads it.
	LastChangeAnnotation = "hibernation.butler.butlerlabs.dev/last-change"
)

// DefaultIdleTimeout is the idle timeout of a cluster with wakeOnRequest and no idleTimeout:
// whatever wakes a cluster on request (a ClientHello is enough), it does not keep it awake
// for good.
const DefaultIdleTimeout = 30 * time.Minute

// IdleTimeout is the cluster's idle timeout: spec.hibernation.idleTimeout, or the default when
// wakeOnRequest is on; 0 when there is no wake on request.
func IdleTimeout(h *v1alpha1.HibernationSpec) time.Duration {
	switch {
	case h == nil || !h.WakeOnRequest:
		return 0
	case h.IdleTimeout != nil:
		return h.IdleTimeout.Duration
	}
	return DefaultIdleTimeout
}

// Wanted says whether the cluster's spec asks it to sleep.
func Wanted(tc *v1alpha1.TenantCluster) bool {
	return tc.Spec.Hibernation != nil && tc.Spec.Hibernation.Hibernated
}

// Asleep says whether management-side clients must leave the tenant's endpoint alone: the
// cluster is meant to sleep, or it slept and has not finished waking (phase Hibernated). A
// connection to a sleeping endpoint with wakeOnRequest would wake it.
func Asleep(tc *v1alpha1.TenantCluster) bool {
	return Wanted(tc) || tc.Status.Phase == v1alpha1.TenantClusterHibernated
}
