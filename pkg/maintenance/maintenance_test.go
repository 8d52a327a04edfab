package maintenance

import (
	"testing"
	"time"
)

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMaintenanceWindowOpenAndNext(t *testing.T) {
	// Saturdays 22:00-02:00 Berlin (UTC+1 in November): 21:00-01:00 UTC, past midnight.
	w, err := ParseWindow([]string{"Saturday"}, "22:00", 4*time.Hour, "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		now       string
		open      bool
		start     string
		nextStart string
	}{
		{"2026-11-28T20:59:00Z", false, "", "2026-11-28T21:00:00Z"},
		{"2026-11-28T21:00:00Z", true, "2026-11-28T21:00:00Z", "2026-12-05T21:00:00Z"},
		{"2026-11-29T00:30:00Z", true, "2026-11-28T21:00:00Z", "2026-12-05T21:00:00Z"}, // Sunday, after midnight
		{"2026-11-29T01:00:00Z", false, "", "2026-12-05T21:00:00Z"},                    // closed at its end
		{"2026-11-25T21:30:00Z", false, "", "2026-11-28T21:00:00Z"},                    // a Wednesday
	}
	for _, c := range cases {
		start, open := w.OpenAt(at(t, c.now))
		if open != c.open || (open && !start.Equal(at(t, c.start))) {
			t.Errorf("%s: open %v at %s, want %v at %s", c.now, open, start, c.open, c.start)
		}
		if next := w.Next(at(t, c.now)); !next.Equal(at(t, c.nextStart)) {
			t.Errorf("%s: next %s, want %s", c.now, next.UTC(), c.nextStart)
		}
	}
	daily, err := ParseWindow(nil, "03:00", time.Hour, "")
	if err != nil {
		t.Fatal(err)
	}
	if next := daily.Next(at(t, "2026-11-25T03:30:00Z")); !next.Equal(at(t, "2026-11-26T03:00:00Z")) {
		t.Errorf("daily: next %s", next)
	}
}

func TestMaintenanceWindowRefused(t *testing.T) {
	for _, c := range []struct {
		days     []string
		start    string
		duration time.Duration
		location string
	}{
		{nil, "03:00", 29 * time.Minute, ""},          // too short
		{nil, "03:00", 6*time.Hour + time.Minute, ""}, // too long
		{nil, "3pm", time.Hour, ""},
		{[]string{"Caturday"}, "03:00", time.Hour, ""},
		{nil, "03:00", time.Hour, "Mars/Olympus"},
	} {
		if _, err := ParseWindow(c.days, c.start, c.duration, c.location); err == nil {
			t.Errorf("%+v: accepted", c)
		}
	}
}

func TestMaintenanceVersionUpdate(t *testing.T) {
	now := at(t, "2026-11-25T12:00:00Z")
	past, future := now.Add(-time.Hour), now.Add(time.Hour)
	catalog := Catalog{
		{Version: "v1.30.1", Expires: past}, {Version: "v1.30.2"}, {Version: "v1.30.3", Expires: past},
		{Version: "v1.31.4"}, {Version: "v1.31.5", Expires: future}, {Version: "v1.32.0", Expires: past},
	}
	cases := []struct {
		name, current string
		auto          bool
		target        string
		blocked       bool
	}{
		{"expired, automatic updates off: newest unexpired patch", "v1.30.1", false, "v1.30.2", false},
		{"automatic patch update", "v1.31.4", true, "v1.31.5", false},
		{"no automatic updates, not expired: stays", "v1.31.4", false, "", false},
		{"minor never bumped: newest patch already", "v1.30.2", true, "", false},
		{"expired without a newer patch: says so, stays", "v1.32.0", false, "", true},
		{"not in the catalog, automatic: newest patch of its minor", "v1.31.0", true, "v1.31.5", false},
	}
	for _, c := range cases {
		u := VersionUpdate(catalog, c.current, c.auto, now)
		if u.Target != c.target || (c.blocked && u.Reason == "") {
			t.Errorf("%s: %+v, want target %q", c.name, u, c.target)
		}
	}
}
