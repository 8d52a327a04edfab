package snapshotschedule

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/hibernation"
)

// lookBack bounds how late a missed firing is still taken: a weekly schedule's after a week
// with the controllers down.
const lookBack = 8 * 24 * time.Hour

// schedule is one parsed entry of spec.snapshots.schedules.
type schedule struct {
	name     string
	cron     cron.Schedule
	location *time.Location
	keep     int
}

func parseSchedule(s v1alpha1.SnapshotSchedule) (schedule, error) {
	loc, err := hibernation.ParseLocation(s.Location)
	if err != nil {
		return schedule{}, err
	}
	c, err := hibernation.ParseCron(s.Schedule)
	if err != nil {
		return schedule{}, err
	}
	return schedule{name: s.Name, cron: c, location: loc, keep: int(s.Keep)}, nil
}

// firing is one snapshot a schedule asks for.
type firing struct {
	schedule string
	at       time.Time
}

// snapshotName is a firing's snapshot: the same firing always has the same name, so a controller
// that restarts between creating it and recording the firing creates nothing twice.
func snapshotName(cluster string, f firing) string {
	return fmt.Sprintf("%s-%s-%s", cluster, f.schedule, f.at.UTC().Format("200601021504"))
}

// plan is what the schedules ask for at one moment.
type plan struct {
	// take holds at most one firing per schedule: its latest since the last one handled.
	take []firing
	// handled is the new record of the last firing handled per schedule; changed says whether
	// it differs from the one given.
	handled map[string]time.Time
	changed bool
	// next is the earliest firing after now (zero when none).
	next time.Time
}

// planFirings decides, from the last firing handled per schedule, which snapshots are due at
// now. A schedule seen for the first time starts with its next firing (adding a schedule takes
// no snapshot at once); missed firings make one snapshot, the latest, up to lookBack late.
func planFirings(schedules []schedule, handled map[string]time.Time, now time.Time) plan {
	p := plan{handled: map[string]time.Time{}}
	for _, s := range schedules {
		if t := s.cron.Next(now.In(s.location)); !t.IsZero() && (p.next.IsZero() || t.Before(p.next)) {
			p.next = t
		}
		last, ok := handled[s.name]
		if !ok {
			p.handled[s.name], p.changed = now, true
			continue
		}
		p.handled[s.name] = last
		since := last
		if since.Before(now.Add(-lookBack)) {
			since = now.Add(-lookBack)
		}
		if at, ok := hibernation.LastFire(s.cron, since.In(s.location), now.In(s.location)); ok {
			p.take = append(p.take, firing{schedule: s.name, at: at})
			p.handled[s.name], p.changed = at, true
		}
	}
	if len(p.handled) != len(handled) {
		p.changed = true // a schedule was removed
	}
	return p
}

// readHandled parses the SnapshotSchedulesAnnotation; what does not parse counts as never
// handled (the schedule then starts with its next firing).
func readHandled(annotation string) map[string]time.Time {
	raw := map[string]string{}
	_ = json.Unmarshal([]byte(annotation), &raw)
	out := make(map[string]time.Time, len(raw))
	for name, v := range raw {
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			out[name] = t
		}
	}
	return out
}

func writeHandled(handled map[string]time.Time) string {
	raw := make(map[string]string, len(handled))
	for name, t := range handled {
		raw[name] = t.UTC().Format(time.RFC3339)
	}
	b, _ := json.Marshal(raw) // map keys are sorted: the same record is the same string
	return string(b)
}

// expired is what retention deletes of one schedule's snapshots: any with keep Ready snapshots
// newer than it, and a Failed one with a newer Ready or Failed one (the newest failure says why
// the schedule fails; older ones add nothing). A Failed snapshot never pushes a Ready one out.
func expired(snaps []*v1alpha1.TenantClusterSnapshot, keep int) []*v1alpha1.TenantClusterSnapshot {
	sorted := slices.Clone(snaps)
	slices.SortFunc(sorted, func(a, b *v1alpha1.TenantClusterSnapshot) int { // newest first
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(b.Name, a.Name)
	})
	var out []*v1alpha1.TenantClusterSnapshot
	ready, finished := 0, 0
	for _, s := range sorted {
		if s.DeletionTimestamp != nil {
			continue
		}
		switch {
		case ready >= keep:
			out = append(out, s)
		case s.Status.Phase == v1alpha1.SnapshotFailed && finished > 0:
			out = append(out, s)
		}
		switch s.Status.Phase {
		case v1alpha1.SnapshotReady:
			ready++
			finished++
		case v1alpha1.SnapshotFailed:
			finished++
		}
	}
	return out
}

// unfinished says whether a snapshot is still to be taken or being taken.
func unfinished(s *v1alpha1.TenantClusterSnapshot) bool {
	return s.DeletionTimestamp == nil && s.Status.Phase != v1alpha1.SnapshotReady && s.Status.Phase != v1alpha1.SnapshotFailed
}
