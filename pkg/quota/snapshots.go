package quota

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

// SnapshotReservationsAnnotation holds a Team's admitted TenantClusterSnapshot creates that may
// not be stored yet (JSON). Only the Ledger writes it: the Team registry keeps the stored value
// whatever a client sends.
const SnapshotReservationsAnnotation = "butler.butlerlabs.dev/snapshot-reservations"

// SnapshotReservation is one admitted snapshot create. It stops counting once a snapshot with
// its UID is stored, when that snapshot's delete begins, or when it expires (ReservationTTL).
type SnapshotReservation struct {
	UID     string `json:"uid"`
	Expires int64  `json:"exp"`
}

// SnapshotRequest is the create of one TenantClusterSnapshot in a Team's namespace.
type SnapshotRequest struct {
	Team, Namespace, Name, UID string
	// Config is the ButlerConfig admission read (may be nil): the limit checked is that of the
	// Team the compare-and-swap reads, with Config's defaults.
	Config *butler.ButlerConfig
	DryRun bool
}

// AdmitSnapshot checks one more snapshot against the Team's maxSnapshots and, unless it is a dry
// run, reserves it: a compare-and-swap on the Team, as Admit does for clusters, so that
// concurrent creates never pass the limit together. The count is the namespace's stored
// snapshots (a consistent list, read after the Team) and the live reservations. The error is a
// 403 naming the limit, or the Store's error.
func (l *Ledger) AdmitSnapshot(ctx context.Context, req SnapshotRequest) error {
	if l.Store == nil {
		return apierrors.NewServiceUnavailable("the quota ledger is not ready")
	}
	check := func(team *butler.Team) ([]SnapshotReservation, error) {
		max := EffectiveLimits(team, req.Config).MaxSnapshots
		if max == nil {
			return nil, nil
		}
		stored, err := l.Store.Snapshots(ctx, req.Namespace)
		if err != nil {
			return nil, err
		}
		live := liveSnapshots(SnapshotReservations(team), stored, l.now().Unix())
		if n := len(stored) + len(live); int64(n) >= int64(*max) {
			return nil, apierrors.NewForbidden(butler.Resource("tenantclustersnapshots"), req.Name, fmt.Errorf(
				"team %q has %d TenantClusterSnapshots (stored, or admitted and not stored yet), its maxSnapshots is %d: delete one first", team.Name, n, *max))
		}
		return live, nil
	}
	return l.onTeam(ctx, req.Team, req.DryRun, func(team *butler.Team, reserve bool) error {
		if EffectiveLimits(team, req.Config).MaxSnapshots == nil {
			return nil // nothing to reserve: the store writes nothing
		}
		live, err := check(team)
		if err != nil || !reserve {
			return err
		}
		return setSnapshotReservations(team, append(live, SnapshotReservation{UID: req.UID, Expires: l.now().Add(ReservationTTL).Unix()}))
	})
}

// ResolveSnapshot drops the Team's reservation for the snapshot with this UID, as its delete
// begins: once it is gone no list shows it, and its reservation would count until it expired.
func (l *Ledger) ResolveSnapshot(ctx context.Context, team, uid string) error {
	if l.Store == nil || uid == "" {
		return nil
	}
	return dropReservations(ctx, l.Store, team, SnapshotReservations, setSnapshotReservations,
		func(r SnapshotReservation) bool { return r.UID == uid })
}

// liveSnapshots are the reservations that still count: not expired, their snapshot not stored.
func liveSnapshots(rs []SnapshotReservation, stored []butler.TenantClusterSnapshot, now int64) []SnapshotReservation {
	uids := make(map[string]bool, len(stored))
	for i := range stored {
		uids[string(stored[i].UID)] = true
	}
	var out []SnapshotReservation
	for _, r := range rs {
		if now <= r.Expires && !uids[r.UID] {
			out = append(out, r)
		}
	}
	return out
}

// SnapshotReservations reads a Team's snapshot reservations; a malformed value reads as none.
func SnapshotReservations(team *butler.Team) []SnapshotReservation {
	var out []SnapshotReservation
	if v := team.Annotations[SnapshotReservationsAnnotation]; v != "" {
		_ = json.Unmarshal([]byte(v), &out)
	}
	return out
}

func setSnapshotReservations(team *butler.Team, rs []SnapshotReservation) error {
	if len(rs) == 0 {
		delete(team.Annotations, SnapshotReservationsAnnotation)
		return nil
	}
	data, err := json.Marshal(rs)
	if err != nil {
		return err
	}
	if team.Annotations == nil {
		team.Annotations = map[string]string{}
	}
	team.Annotations[SnapshotReservationsAnnotation] = string(data)
	return nil
}
