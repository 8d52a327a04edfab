package tenantcluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

const (
	// leaseFresh: a running leader renews its Lease every 2 s (client-go's retry period, which
	// controller-runtime keeps); one renewed within this is running, and nothing is rechecked.
	leaseFresh = 5 * time.Second
	// leaseSlack is added to a Lease's duration before it counts as lapsed: the renewal time is
	// the controller's node's clock, not this one's.
	leaseSlack = 5 * time.Second
	// leaseReadEvery: a Lease name is listed at most this often, however many clusters wait.
	leaseReadEvery = 2 * time.Second
)

// controllerNotRunning names the first controller of the hosted control plane (the Cluster API
// provider, then the engine) whose leader-election Lease lapsed or was released: a failure, as
// nothing makes or runs the control plane until a person starts it again. One renewed late but
// not lapsed brings the cluster back when it would lapse. Nil when none is known to be down.
//
// The Leases are read only in the namespaces ButlerConfig names as the controllers' (none: none
// is read): whoever may write Leases elsewhere could fail the cluster with a lapsed one named
// as theirs, or hide a lapsed one with a fresh one.
func (c *Controller) controllerNotRunning(ctx context.Context, s *state, cp *unstructured.Unstructured) *steps.Result {
	if c.kube == nil || c.clock == nil || s.in.Config == nil || len(s.in.Config.Spec.ControlPlaneProviderNamespaces) == 0 {
		return nil
	}
	namespaces := s.in.Config.Spec.ControlPlaneProviderNamespaces
	for _, l := range external.ControllerLeases(cp.GetKind()) {
		v := judgeLeases(c.leases.read(ctx, c, namespaces, l.Name), l.Name, c.clock.Now())
		if v.lapsesIn > 0 {
			s.recheckWithin(v.lapsesIn)
		}
		if v.lapsed != "" {
			r := steps.Failure("ProviderNotRunning", "control plane provider %s: %s is not running: its leader-election Lease %s; nothing makes or runs the control plane until it does",
				component.ControlPlaneProvider(s.in.Config), l.Controller, v.lapsed)
			return &r
		}
	}
	return nil
}

// leaseVerdict is what the Leases of one name say of their controller.
type leaseVerdict struct {
	// lapsed says the newest Lease, which lapsed or was released ("ns/name last renewed 40s
	// ago"); "" when one is held, or none exists.
	lapsed string
	// lapsesIn: every held Lease was renewed late, the last lapses in this; 0 when one is fresh.
	lapsesIn time.Duration
}

// judgeLeases reads the Leases named name (one per namespace named as the controllers'):
// any held and fresh is a running controller; held but late, it may be stopping; all lapsed or
// released, it is not running.
func judgeLeases(leases []coordinationv1.Lease, name string, now time.Time) leaseVerdict {
	var newest *coordinationv1.Lease
	var v leaseVerdict
	for i := range leases {
		l := &leases[i]
		if l.Name != name {
			continue
		}
		renewed := leaseRenewed(l)
		if holder := l.Spec.HolderIdentity; holder != nil && *holder != "" {
			until := renewed.Add(leaseDuration(l) + leaseSlack)
			if now.Sub(renewed) <= leaseFresh {
				return leaseVerdict{}
			}
			if now.Before(until) {
				v.lapsesIn = max(v.lapsesIn, until.Sub(now))
				continue
			}
		}
		if newest == nil || leaseRenewed(newest).Before(renewed) {
			newest = l
		}
	}
	if v.lapsesIn > 0 || newest == nil {
		return v
	}
	ago := now.Sub(leaseRenewed(newest)).Truncate(time.Second)
	if holder := newest.Spec.HolderIdentity; holder == nil || *holder == "" {
		return leaseVerdict{lapsed: fmt.Sprintf("%s/%s released %s ago", newest.Namespace, newest.Name, ago)}
	}
	return leaseVerdict{lapsed: fmt.Sprintf("%s/%s last renewed %s ago (held %s at a time)", newest.Namespace, newest.Name, ago, leaseDuration(newest))}
}

// leaseRenewed is when the Lease was last renewed (or acquired); zero when it says neither.
func leaseRenewed(l *coordinationv1.Lease) time.Time {
	switch {
	case l.Spec.RenewTime != nil:
		return l.Spec.RenewTime.Time
	case l.Spec.AcquireTime != nil:
		return l.Spec.AcquireTime.Time
	}
	return time.Time{}
}

// leaseDuration is how long a renewal holds the Lease: client-go's 15 s when it does not say.
func leaseDuration(l *coordinationv1.Lease) time.Duration {
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d > 0 {
		return time.Duration(*d) * time.Second
	}
	return 15 * time.Second
}

// leaseReads keeps each Lease's last read for leaseReadEvery: a thousand clusters waiting at once
// read it once, not a thousand times.
type leaseReads struct {
	mu  sync.Mutex
	at  map[types.NamespacedName]time.Time
	got map[types.NamespacedName]*coordinationv1.Lease
}

// read gets the Leases named name in the namespaces ButlerConfig names as the controllers' (a
// get of one name each, which the chart's RBAC allows for those names only). One that does not
// exist, or cannot be read, says nothing: the cluster's silence is still named after
// providerSilentAfter.
func (r *leaseReads) read(ctx context.Context, c *Controller, namespaces []string, name string) []coordinationv1.Lease {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at == nil {
		r.at, r.got = map[types.NamespacedName]time.Time{}, map[types.NamespacedName]*coordinationv1.Lease{}
	}
	now := c.clock.Now()
	var leases []coordinationv1.Lease
	for _, ns := range namespaces {
		key := types.NamespacedName{Namespace: ns, Name: name}
		if at, ok := r.at[key]; !ok || now.Sub(at) >= leaseReadEvery || now.Before(at) {
			r.at[key], r.got[key] = now, r.get(ctx, c, key)
		}
		if l := r.got[key]; l != nil {
			leases = append(leases, *l)
		}
	}
	return leases
}

// get is the Lease key, nil when it does not exist or cannot be read.
func (r *leaseReads) get(ctx context.Context, c *Controller, key types.NamespacedName) *coordinationv1.Lease {
	l, err := c.kube.CoordinationV1().Leases(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			klog.FromContext(ctx).V(2).Info("Cannot read the control plane provider's Lease", "lease", key, "err", err)
		}
		return nil
	}
	return l
}
