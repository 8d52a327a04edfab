package quota

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

// ReservationsAnnotation holds the in-flight quota reservations (JSON) of a Team, or of a
// ProviderConfig with limits. Only the Ledger writes it: the Team and ProviderConfig registries
// keep the stored value whatever a client sends.
const ReservationsAnnotation = "butler.butlerlabs.dev/quota-reservations"

// ReservationTTL bounds how long a reservation whose request never reached storage (a crash, a
// later admission plugin refusing, an etcd error) holds capacity. It is longer than a request
// may take, so a slow request never outlives its reservation.
const ReservationTTL = 2 * time.Minute

// Store is what the Ledger and the admission plugins read and write. A list of clusters must be
// at least as new as asked: as an etcd read, or a list from the watch cache once it has caught
// up with that resourceVersion (or with etcd, for "now").
type Store interface {
	// Team returns the Team, or a NotFound error.
	Team(ctx context.Context, name string) (*butler.Team, error)
	// Config returns the ButlerConfig singleton, or nil when there is none.
	Config(ctx context.Context) (*butler.ButlerConfig, error)
	// Cluster returns one TenantCluster, or a NotFound error.
	Cluster(ctx context.Context, namespace, name string) (*butler.TenantCluster, error)
	// Clusters lists the TenantClusters of a namespace: as of now when notOlderThan is empty,
	// else as of a resourceVersion not older than notOlderThan nor than this server's last
	// write of a TenantCluster.
	Clusters(ctx context.Context, namespace, notOlderThan string) ([]butler.TenantCluster, error)
	// AddonDefinitions lists the platform's addon catalog.
	AddonDefinitions(ctx context.Context) ([]butler.AddonDefinition, error)
	// ProviderConfig returns a ProviderConfig, or nil when it does not exist.
	ProviderConfig(ctx context.Context, namespace, name string) (*butler.ProviderConfig, error)
	// Snapshot returns a TenantClusterSnapshot, or nil when it does not exist.
	Snapshot(ctx context.Context, namespace, name string) (*butler.TenantClusterSnapshot, error)
	// Snapshots lists the TenantClusterSnapshots of a namespace, as of now.
	Snapshots(ctx context.Context, namespace string) ([]butler.TenantClusterSnapshot, error)
	// UpdateStrategy returns an UpdateStrategy, or nil when it does not exist.
	UpdateStrategy(ctx context.Context, namespace, name string) (*butler.UpdateStrategy, error)
	// ManagementAddons lists the ManagementAddons as of now (a consistent read).
	ManagementAddons(ctx context.Context) ([]butler.ManagementAddon, error)
	// UpdateTeam reads the Team, applies update and writes the result only if the Team did not
	// change in between (compare-and-swap), retrying update on conflict. An error from update
	// aborts with that error.
	UpdateTeam(ctx context.Context, name string, update func(*butler.Team) error) error
	// UpdateProvider is UpdateTeam for a ProviderConfig.
	UpdateProvider(ctx context.Context, namespace, name string, update func(*butler.ProviderConfig) error) error
}

// Reservation is one admitted change of a cluster's usage that may not be stored yet.
type Reservation struct {
	// Key is namespace/name of the cluster.
	Key string `json:"key"`
	// UID is set for a create: the reservation is resolved once a cluster with this UID is stored.
	UID string `json:"uid,omitempty"`
	// BaseRV is set for an update: the resourceVersion the update applies to. The reservation
	// is resolved once the stored cluster has another resourceVersion (this update or a later
	// one committed; an update on this base can no longer commit) or is gone.
	BaseRV string `json:"rv,omitempty"`
	// Usage is the cluster's usage after the change.
	Usage Usage `json:"usage"`
	// Expires is when the reservation stops counting in any case (Unix seconds).
	Expires int64 `json:"exp"`
}

// Request is one create or update of a TenantCluster in a Team's namespace.
type Request struct {
	Team string
	// Limits are the Team's effective limits as admission read them, and Config the ButlerConfig
	// it read them with (may be nil). Admission may read a slightly stale Team, so the
	// compare-and-swap checks the limits of the Team it swaps, with Config's defaults.
	Limits *butler.ResourceLimits
	Config *butler.ButlerConfig
	// Namespace and Name of the cluster; UID for a create, BaseRV for an update.
	Namespace, Name, UID, BaseRV string
	// Old is the cluster's usage before (zero for a create), New after.
	Old, New Usage
	// DryRun checks without reserving.
	DryRun bool
}

// Ledger admits changes to Teams' aggregate usage (maxClusters, maxTotalWorkers, maxTotalCPU,
// maxTotalMemory, maxTotalStorage) without races, across any number of butler-apiserver
// replicas on one etcd.
//
// Each admitted change is a compare-and-swap on the Team object: read the Team (with its
// reservations), list the Team's clusters as of that Team's resourceVersion or later, count each
// cluster as the larger of its stored usage and any unresolved reservation for it, check the
// limit, and write the Team back with a reservation for this change only if nobody wrote it
// meanwhile. Two concurrent requests
// thus serialize on the Team's resourceVersion: the second one's write fails, it retries, and it
// counts the first one's reservation (or, once stored, its cluster). A reservation needs no
// release on success: it is resolved once the cluster's stored state reflects it (see
// Reservation) and pruned by the next change. This is the scheme of Kubernetes' ResourceQuota
// admission (a CAS on the quota object), with usage recomputed from the objects themselves
// rather than kept as a counter that a controller must repair.
type Ledger struct {
	Store Store
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

func (l *Ledger) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// Grows says whether new exceeds old in any dimension.
func Grows(old, new Usage) bool {
	return new.Clusters > old.Clusters || new.Workers > old.Workers || new.CPU > old.CPU ||
		new.Memory > old.Memory || new.Storage > old.Storage
}

// Admit checks req against the Team's aggregate limits and, unless it is a dry run, reserves it.
// The error is a 403 Forbidden naming the limit and the usage, or the Store's error.
func (l *Ledger) Admit(ctx context.Context, req Request) error {
	if !HasAggregate(req.Limits) || !Grows(req.Old, req.New) {
		return nil
	}
	if l.Store == nil {
		return apierrors.NewServiceUnavailable("the quota ledger is not ready")
	}
	check := func(team *butler.Team) ([]Reservation, error) {
		// Not older than the Team: every cluster that any reservation already pruned from the
		// Team was in the list that pruned it, which is older than the Team's write.
		clusters, err := l.Store.Clusters(ctx, req.Namespace, team.ResourceVersion)
		if err != nil {
			return nil, err
		}
		live := Live(Reservations(team), clusters, l.now())
		others, old, new := Split(live, clusters, req)
		if err := CheckAggregate(req.Team, EffectiveLimits(team, req.Config), others, old, new); err != nil {
			return nil, apierrors.NewForbidden(butler.Resource("tenantclusters"), req.Name, err)
		}
		return live, nil
	}
	return l.onTeam(ctx, req.Team, req.DryRun, func(team *butler.Team, reserve bool) error {
		live, err := check(team)
		if err != nil || !reserve {
			return err
		}
		live = append(live, Reservation{
			Key: req.Namespace + "/" + req.Name, UID: req.UID, BaseRV: req.BaseRV,
			Usage: req.New, Expires: l.now().Add(ReservationTTL).Unix(),
		})
		return SetReservations(team, live)
	})
}

// ResolveCreate drops the Team's reservation for the create of the cluster with this UID, as a
// delete of that cluster begins. A stored cluster with the UID is what resolves such a
// reservation (Live), but once the cluster is gone no list shows it, and the reservation would
// hold the cluster's share until it expired. The cluster being deleted proves its create was
// stored, so dropping the reservation is what Live would do. Nothing is written when the Team
// holds none.
func (l *Ledger) ResolveCreate(ctx context.Context, team, uid string) error {
	if l.Store == nil || uid == "" {
		return nil
	}
	return dropReservations(ctx, l.Store, team, func(t *butler.Team) []Reservation { return Reservations(t) },
		func(t *butler.Team, rs []Reservation) error { return SetReservations(t, rs) },
		func(r Reservation) bool { return r.UID == uid })
}

// onTeam runs admit on the Team: read alone for a dry run (reserve false), else inside a
// compare-and-swap that writes what admit made of it (reserve true).
func (l *Ledger) onTeam(ctx context.Context, name string, dryRun bool, admit func(team *butler.Team, reserve bool) error) error {
	if dryRun {
		team, err := l.Store.Team(ctx, name)
		if err != nil {
			return err
		}
		return admit(team, false)
	}
	return l.Store.UpdateTeam(ctx, name, func(team *butler.Team) error { return admit(team, true) })
}

// dropReservations removes a Team's reservations that drop matches; nothing is written when
// none does.
func dropReservations[R any](ctx context.Context, store Store, team string, read func(*butler.Team) []R,
	write func(*butler.Team, []R) error, drop func(R) bool) error {
	return store.UpdateTeam(ctx, team, func(t *butler.Team) error {
		rs := read(t)
		kept := slices.DeleteFunc(slices.Clone(rs), drop)
		if len(kept) == len(rs) {
			return nil // unchanged: the store writes nothing
		}
		return write(t, kept)
	})
}

// Reservations reads the reservations a Team or ProviderConfig holds; a malformed value reads
// as none.
func Reservations(holder metav1.Object) []Reservation {
	var out []Reservation
	if v := holder.GetAnnotations()[ReservationsAnnotation]; v != "" {
		_ = json.Unmarshal([]byte(v), &out)
	}
	return out
}

// SetReservations writes the reservations of a Team or ProviderConfig, dropping the annotation
// when there are none.
func SetReservations(holder metav1.Object, rs []Reservation) error {
	annotations := holder.GetAnnotations()
	if len(rs) == 0 {
		delete(annotations, ReservationsAnnotation)
		return nil
	}
	data, err := json.Marshal(rs)
	if err != nil {
		return err
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[ReservationsAnnotation] = string(data)
	holder.SetAnnotations(annotations)
	return nil
}

// clusterKey is a cluster's namespace and name: what a Reservation's Key says, without
// building a string per stored cluster.
type clusterKey struct{ namespace, name string }

func keyOf(reservationKey string) clusterKey {
	ns, name, _ := strings.Cut(reservationKey, "/")
	return clusterKey{ns, name}
}

func keyOfCluster(tc *butler.TenantCluster) clusterKey { return clusterKey{tc.Namespace, tc.Name} }

// Live returns the reservations that still count: not expired and not resolved by the clusters.
func Live(rs []Reservation, clusters []butler.TenantCluster, now time.Time) []Reservation {
	if len(rs) == 0 {
		return nil
	}
	stored := make(map[clusterKey]*butler.TenantCluster, len(rs))
	for _, r := range rs {
		stored[keyOf(r.Key)] = nil
	}
	for i := range clusters {
		if k := keyOfCluster(&clusters[i]); hasKey(stored, k) {
			stored[k] = &clusters[i]
		}
	}
	var out []Reservation
	for _, r := range rs {
		if now.Unix() > r.Expires {
			continue
		}
		tc := stored[keyOf(r.Key)]
		switch {
		case r.UID != "" && tc != nil && string(tc.UID) == r.UID:
			continue // the create is stored
		case r.BaseRV != "" && (tc == nil || tc.ResourceVersion != r.BaseRV):
			continue // the update is stored, or can no longer be
		}
		out = append(out, r)
	}
	return out
}

func hasKey[V any](m map[clusterKey]V, k clusterKey) bool {
	_, ok := m[k]
	return ok
}

// Split counts the usage of the clusters other than req's, each the larger of its stored usage
// and its live reservations, and req's cluster before and after the change, each at least
// what live reservations of the same cluster already hold.
func Split(live []Reservation, clusters []butler.TenantCluster, req Request) (others, old, new Usage) {
	own := clusterKey{req.Namespace, req.Name}
	var pending Usage
	reserved := map[clusterKey]Usage{} // the largest live reservation of each other cluster
	for _, r := range live {
		if k := keyOf(r.Key); k == own {
			pending = pending.Max(r.Usage)
		} else {
			reserved[k] = reserved[k].Max(r.Usage)
		}
	}
	var stored Usage
	for i := range clusters {
		u, k := ClusterUsage(&clusters[i]), keyOfCluster(&clusters[i])
		if k == own {
			stored = u
			continue
		}
		if r, ok := reserved[k]; ok {
			u = u.Max(r)
			delete(reserved, k)
		}
		others = others.Add(u)
	}
	for _, r := range reserved { // clusters reserved but not stored (yet)
		others = others.Add(r)
	}
	return others, req.Old.Max(stored).Max(pending), req.New.Max(pending)
}

// TeamUsage is the usage of a Team's stored clusters.
func TeamUsage(clusters []*butler.TenantCluster) Usage {
	var u Usage
	for _, tc := range clusters {
		u = u.Add(ClusterUsage(tc))
	}
	return u
}

// String renders a reservation for logs.
func (r Reservation) String() string {
	return fmt.Sprintf("%s uid=%s rv=%s %+v", r.Key, r.UID, r.BaseRV, r.Usage)
}
