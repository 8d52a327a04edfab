package snapshotschedule

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustParse(t *testing.T, name, expr, location string, keep int32) schedule {
	t.Helper()
	s, err := parseSchedule(v1alpha1.SnapshotSchedule{Name: name, Schedule: expr, Location: location, Keep: keep})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The schedule decision on a fake clock: a new schedule waits for its next firing; each firing
// is taken once, whatever the clock does between passes; missed firings make one snapshot, the
// latest; the time zone is the schedule's.
func TestPlanFirings(t *testing.T) {
	// 02:00 in Berlin is 01:00 UTC in November.
	nightly := mustParse(t, "nightly", "0 2 * * *", "Europe/Berlin", 7)
	minutely := mustParse(t, "minutely", "* * * * *", "", 2)
	both := []schedule{nightly, minutely}

	// First sight: nothing is taken, both schedules start now.
	start := at(t, "2026-11-25T00:59:30Z")
	p := planFirings(both, nil, start)
	if len(p.take) != 0 || !p.changed || !p.handled["nightly"].Equal(start) || !p.handled["minutely"].Equal(start) {
		t.Fatalf("first sight: %+v", p)
	}
	if !p.next.Equal(at(t, "2026-11-25T01:00:00Z")) {
		t.Fatalf("next = %s", p.next)
	}

	// At 01:00:01 UTC both fire, once each.
	now := at(t, "2026-11-25T01:00:01Z")
	p = planFirings(both, p.handled, now)
	want := []firing{{"nightly", at(t, "2026-11-25T01:00:00Z")}, {"minutely", at(t, "2026-11-25T01:00:00Z")}}
	if !sameFirings(p.take, want) || !p.changed {
		t.Fatalf("at 01:00:01: %+v", p.take)
	}
	if got := snapshotName("prod", p.take[0]); got != "prod-nightly-202611250100" {
		t.Fatalf("name %s", got)
	}

	// A second pass in the same minute (a restart, an event): nothing more.
	again := planFirings(both, p.handled, now.Add(20*time.Second))
	if len(again.take) != 0 || again.changed {
		t.Fatalf("same minute again: %+v", again)
	}

	// A controller that was down for an hour and a half takes one snapshot per schedule, the latest.
	late := planFirings(both, p.handled, at(t, "2026-11-25T02:30:10Z"))
	if !sameFirings(late.take, []firing{{"minutely", at(t, "2026-11-25T02:30:00Z")}}) {
		t.Fatalf("after an outage: %+v", late.take)
	}
	// ... and one down for two days takes tonight's nightly once.
	days := planFirings([]schedule{nightly}, map[string]time.Time{"nightly": at(t, "2026-11-23T01:00:00Z")}, at(t, "2026-11-25T09:00:00Z"))
	if !sameFirings(days.take, []firing{{"nightly", at(t, "2026-11-25T01:00:00Z")}}) {
		t.Fatalf("after two days: %+v", days.take)
	}
	// A record far older than the look-back window does not walk months of firings.
	old := planFirings([]schedule{minutely}, map[string]time.Time{"minutely": at(t, "2025-01-01T00:00:00Z")}, now)
	if !sameFirings(old.take, []firing{{"minutely", at(t, "2026-11-25T01:00:00Z")}}) {
		t.Fatalf("an old record: %+v", old.take)
	}

	// A removed schedule leaves the record.
	removed := planFirings([]schedule{nightly}, p.handled, now.Add(time.Second))
	if _, ok := removed.handled["minutely"]; ok || !removed.changed {
		t.Fatalf("removed schedule: %+v", removed)
	}

	// The record round-trips through the annotation, and the same record is the same string.
	if got := readHandled(writeHandled(p.handled)); len(got) != 2 || !got["nightly"].Equal(p.handled["nightly"]) {
		t.Fatalf("annotation round trip: %v", got)
	}
	if writeHandled(p.handled) != writeHandled(readHandled(writeHandled(p.handled))) {
		t.Fatal("the annotation is not stable")
	}
	if got := readHandled("not json"); len(got) != 0 {
		t.Fatalf("garbage read as %v", got)
	}
}

func sameFirings(got, want []firing) bool {
	return slices.EqualFunc(got, want, func(a, b firing) bool { return a.schedule == b.schedule && a.at.Equal(b.at) })
}

// Retention keeps the newest keep Ready snapshots of a schedule and what is newer than them;
// a failure never pushes a Ready snapshot out, and only the newest failure stays.
func TestExpired(t *testing.T) {
	base := at(t, "2026-11-25T01:00:00Z")
	snap := func(minute int, phase v1alpha1.SnapshotPhase) *v1alpha1.TenantClusterSnapshot {
		s := &v1alpha1.TenantClusterSnapshot{ObjectMeta: metav1.ObjectMeta{
			Name:              snapshotName("prod", firing{"m", base.Add(time.Duration(minute) * time.Minute)}),
			CreationTimestamp: metav1.NewTime(base.Add(time.Duration(minute) * time.Minute)),
		}}
		s.Status.Phase = phase
		return s
	}
	names := func(list []*v1alpha1.TenantClusterSnapshot) []string {
		var out []string
		for _, s := range list {
			out = append(out, s.Name)
		}
		slices.Sort(out)
		return out
	}
	ready, failed, running := v1alpha1.SnapshotReady, v1alpha1.SnapshotFailed, v1alpha1.SnapshotRunning
	deleting := snap(0, ready)
	deleting.DeletionTimestamp = &metav1.Time{Time: base}
	cases := []struct {
		name  string
		keep  int
		snaps []*v1alpha1.TenantClusterSnapshot
		want  []string
	}{
		{"fewer than keep", 2, []*v1alpha1.TenantClusterSnapshot{snap(1, ready), snap(2, ready)}, nil},
		{"the oldest beyond keep", 2, []*v1alpha1.TenantClusterSnapshot{snap(3, ready), snap(1, ready), snap(2, ready)},
			[]string{"prod-m-202611250101"}},
		{"a running newest does not count", 1, []*v1alpha1.TenantClusterSnapshot{snap(1, ready), snap(2, running)}, nil},
		{"failures do not push Ready ones out", 1, []*v1alpha1.TenantClusterSnapshot{snap(1, ready), snap(2, failed), snap(3, failed)},
			[]string{"prod-m-202611250102"}},
		{"keep 1 once a newer one is Ready", 1, []*v1alpha1.TenantClusterSnapshot{snap(1, ready), snap(2, failed), snap(3, ready)},
			[]string{"prod-m-202611250101", "prod-m-202611250102"}},
		{"one being deleted is left alone", 1, []*v1alpha1.TenantClusterSnapshot{deleting, snap(1, ready)}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := names(expired(c.snaps, c.keep)); !slices.Equal(got, c.want) {
				t.Fatalf("expired = %v, want %v", got, c.want)
			}
		})
	}
}
