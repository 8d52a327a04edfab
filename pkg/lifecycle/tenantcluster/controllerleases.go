package tenantcluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
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
func (c *Controller) controllerNotRunning(ctx context.Context, s *state, cp *unstructured.Unstructured) *steps.Result {
	if c.kube == nil || c.clock == nil {
		return nil // a test's controller that reads no Leases
	}
	for _, l := range external.ControllerLeases(cp.GetKind()) {
		v := judgeLeases(c.leases.read(ctx, c, l.Name), l.Name, c.clock.Now())
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

// judgeLeases reads the Leases named name (one per namespace the controller is installed in):
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

// leaseReads keeps each Lease name's last list for leaseReadEvery: a thousand clusters waiting
// at once list it once, not a thousand times.
type leaseReads struct {
	mu  sync.Mutex
	at  map[string]time.Time
	got map[string][]coordinationv1.Lease
}

// read lists the Leases named name in every namespace (the controllers' namespaces are the
// installer's choice). A list that fails says nothing: the cluster's silence is still named
// after providerSilentAfter.
func (r *leaseReads) read(ctx context.Context, c *Controller, name string) []coordinationv1.Lease {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := c.clock.Now()
	if at, ok := r.at[name]; ok && now.Sub(at) < leaseReadEvery && !now.Before(at) {
		return r.got[name]
	}
	if r.at == nil {
		r.at, r.got = map[string]time.Time{}, map[string][]coordinationv1.Lease{}
	}
	list, err := c.kube.CoordinationV1().Leases(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	r.at[name], r.got[name] = now, nil
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Cannot read the control plane provider's Leases", "lease", name, "err", err)
		return nil
	}
	r.got[name] = list.Items
	return list.Items
}
