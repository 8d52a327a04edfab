package quota

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

// ProviderUseRule is the rule ProviderUse enforces, as refusals quote it.
const ProviderUseRule = "a TenantCluster may use a ProviderConfig in its own namespace, or one whose spec.scope " +
	"is platform or names the cluster's Team"

// ProviderUse says whether a TenantCluster in clusterNamespace may use the ProviderConfig
// namespace/name whose scope is scopeType (platform, team or empty) and scopeTeam: one in the
// cluster's own namespace always; another only when it is shared with the whole platform or
// with the cluster's Team (a Team's clusters live in the namespace named as the Team). A
// ProviderConfig that does not exist is refused with the same words as one not shared, so the
// answer tells nothing of another namespace. The error names the rule.
func ProviderUse(clusterNamespace, namespace, name string, exists bool, scopeType, scopeTeam string) error {
	if namespace == clusterNamespace {
		return nil
	}
	if exists && (scopeType == string(butler.ScopePlatform) || scopeType == string(butler.ScopeTeam) && scopeTeam == clusterNamespace) {
		return nil
	}
	return fmt.Errorf("ProviderConfig %s/%s does not exist or is not shared with namespace %q: %s",
		namespace, name, clusterNamespace, ProviderUseRule)
}

// ProviderRequest is one create or update of a TenantCluster that uses a ProviderConfig with
// limits: its maxClustersPerTeam and maxNodesPerTeam count the clusters of the cluster's
// namespace (a Team's clusters are those of its namespace) that use it.
type ProviderRequest struct {
	// Provider is the ProviderConfig's namespace and name.
	ProviderNamespace, Provider string
	// Uses says whether a stored cluster of the namespace uses the ProviderConfig.
	Uses func(*butler.TenantCluster) bool
	// Namespace and Name of the cluster; UID for a create, BaseRV for an update.
	Namespace, Name, UID, BaseRV string
	// Old is the cluster's usage of this ProviderConfig before (zero for a create or when it
	// used another), New after.
	Old, New Usage
	DryRun   bool
}

// providerDimensions are the ProviderConfig's limits, per team.
var providerDimensions = []dimension{
	{"maxClustersPerTeam", int32Limit(func(l *butler.ResourceLimits) *int32 { return l.MaxClusters }),
		func(u Usage) int64 { return u.Clusters }, count},
	{"maxNodesPerTeam", int32Limit(func(l *butler.ResourceLimits) *int32 { return l.MaxTotalWorkers }),
		func(u Usage) int64 { return u.Workers }, count},
}

// asTeamLimits maps a ProviderConfig's limits onto the dimensions they share with a Team's.
func asTeamLimits(l *butler.ProviderLimits) *butler.ResourceLimits {
	if l == nil {
		return &butler.ResourceLimits{}
	}
	return &butler.ResourceLimits{MaxClusters: l.MaxClustersPerTeam, MaxTotalWorkers: l.MaxNodesPerTeam}
}

// AdmitProvider checks req against the ProviderConfig's limits and, unless it is a dry run,
// reserves it on the ProviderConfig: the Ledger's compare-and-swap (see Ledger), held on the
// ProviderConfig instead of a Team, so it holds in any namespace and across replicas. The
// ProviderConfig's reservations carry every namespace's; only req's namespace's are counted
// and pruned here. The error is a 403 naming the ProviderConfig, the limit and the usage.
func (l *Ledger) AdmitProvider(ctx context.Context, req ProviderRequest) error {
	if l.Store == nil {
		return apierrors.NewServiceUnavailable("the quota ledger is not ready")
	}
	check := func(pc *butler.ProviderConfig) ([]Reservation, error) {
		limits := asTeamLimits(pc.Spec.Limits)
		if !HasAggregate(limits) || !Grows(req.Old, req.New) {
			return nil, errUnchanged
		}
		clusters, err := l.Store.Clusters(ctx, req.Namespace, pc.ResourceVersion)
		if err != nil {
			return nil, err
		}
		ours, theirs := splitByNamespace(Reservations(pc), req.Namespace, l.now().Unix())
		live := Live(ours, clusters, l.now())
		using := slices.DeleteFunc(slices.Clone(clusters), func(tc butler.TenantCluster) bool { return !req.Uses(&tc) })
		others, old, new := Split(live, using, Request{Namespace: req.Namespace, Name: req.Name, Old: req.Old, New: req.New})
		if msg := exceeded(providerDimensions, limits, others, old, new); msg != "" {
			return nil, apierrors.NewForbidden(butler.Resource("tenantclusters"), req.Name, fmt.Errorf(
				"exceeds the limits of ProviderConfig %s/%s for namespace %q: %s", req.ProviderNamespace, req.Provider, req.Namespace, msg))
		}
		return append(theirs, live...), nil
	}
	var err error
	if req.DryRun {
		var pc *butler.ProviderConfig
		if pc, err = l.Store.ProviderConfig(ctx, req.ProviderNamespace, req.Provider); err == nil && pc != nil {
			_, err = check(pc)
		}
	} else {
		err = l.Store.UpdateProvider(ctx, req.ProviderNamespace, req.Provider, func(pc *butler.ProviderConfig) error {
			kept, err := check(pc)
			if err != nil {
				return err
			}
			return SetReservations(pc, append(kept, Reservation{
				Key: req.Namespace + "/" + req.Name, UID: req.UID, BaseRV: req.BaseRV,
				Usage: req.New, Expires: l.now().Add(ReservationTTL).Unix(),
			}))
		})
	}
	if err == errUnchanged {
		return nil
	}
	return err
}

// errUnchanged aborts a compare-and-swap that has nothing to reserve.
var errUnchanged = fmt.Errorf("nothing to reserve")

// ResolveProviderCreate drops a ProviderConfig's reservation for the create of the cluster
// with this UID, as its delete begins (see ResolveCreate).
func (l *Ledger) ResolveProviderCreate(ctx context.Context, namespace, name, uid string) error {
	if l.Store == nil || uid == "" {
		return nil
	}
	return l.Store.UpdateProvider(ctx, namespace, name, func(pc *butler.ProviderConfig) error {
		rs := Reservations(pc)
		kept := slices.DeleteFunc(slices.Clone(rs), func(r Reservation) bool { return r.UID == uid })
		if len(kept) == len(rs) {
			return nil
		}
		return SetReservations(pc, kept)
	})
}

// splitByNamespace parts reservations into those of clusters in namespace and the others,
// dropping the others that expired.
func splitByNamespace(rs []Reservation, namespace string, now int64) (ours, theirs []Reservation) {
	for _, r := range rs {
		switch {
		case keyOf(r.Key).namespace == namespace:
			ours = append(ours, r)
		case now <= r.Expires:
			theirs = append(theirs, r)
		}
	}
	return ours, theirs
}

// exceeded is CheckAggregate's test over some dimensions: what passes its limit, or "".
func exceeded(dims []dimension, limits *butler.ResourceLimits, others, old, new Usage) string {
	var msgs []string
	for _, d := range dims {
		limit, ok := d.limit(limits)
		if !ok || d.value(new) <= d.value(old) {
			continue
		}
		used, want := d.value(others.Add(old)), d.value(others.Add(new))
		if want > limit {
			msgs = append(msgs, fmt.Sprintf("%s is %s, in use %s, requested %s (would be %s)",
				d.name, d.format(limit), d.format(used), d.format(d.value(new)-d.value(old)), d.format(want)))
		}
	}
	return strings.Join(msgs, "; ")
}
