package hibernation

import (
	"testing"
	"time"
)

func mustSchedule(t *testing.T, start, end, location string) Schedule {
	t.Helper()
	loc, err := ParseLocation(location)
	if err != nil {
		t.Fatal(err)
	}
	s := Schedule{Location: loc}
	if start != "" {
		if s.Start, err = ParseCron(start); err != nil {
			t.Fatal(err)
		}
	}
	if end != "" {
		if s.End, err = ParseCron(end); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestDue(t *testing.T) {
	// Sleep at 20:00 and wake at 07:00 on weekdays, Berlin time (UTC+1 in November).
	office := []Schedule{mustSchedule(t, "0 20 * * mon-fri", "0 7 * * mon-fri", "Europe/Berlin")}
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		name       string
		schedules  []Schedule
		since, now string
		want       *Decision
	}{
		{"nothing since", office, "2026-11-25T12:00:00Z", "2026-11-25T18:59:00Z", nil},
		{"sleep at 20:00 Berlin = 19:00 UTC", office, "2026-11-25T12:00:00Z", "2026-11-25T19:00:30Z",
			&Decision{At: at("2026-11-25T19:00:00Z"), Hibernate: true}},
		{"wake next morning", office, "2026-11-25T19:00:00Z", "2026-11-26T06:01:00Z",
			&Decision{At: at("2026-11-26T06:00:00Z"), Hibernate: false}},
		{"the latest of several missed wins", office, "2026-11-25T12:00:00Z", "2026-11-26T06:01:00Z",
			&Decision{At: at("2026-11-26T06:00:00Z"), Hibernate: false}},
		{"weekend: Friday's sleep stands", office, "2026-11-27T19:00:00Z", "2026-11-29T12:00:00Z", nil},
		{"a wake and a sleep at the same minute: the wake wins",
			[]Schedule{mustSchedule(t, "0 8 * * *", "", "UTC"), mustSchedule(t, "", "0 8 * * *", "UTC")},
			"2026-11-25T07:00:00Z", "2026-11-25T08:00:00Z", &Decision{At: at("2026-11-25T08:00:00Z"), Hibernate: false}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Due(c.schedules, at(c.since), at(c.now))
			if c.want == nil {
				if ok {
					t.Fatalf("Due = %+v, want nothing", got)
				}
				return
			}
			if !ok || !got.At.Equal(c.want.At) || got.Hibernate != c.want.Hibernate {
				t.Fatalf("Due = %+v %v, want %+v", got, ok, *c.want)
			}
		})
	}
	if next := Next(office, at("2026-11-25T12:00:00Z")); !next.Equal(at("2026-11-25T19:00:00Z")) {
		t.Errorf("Next = %s", next)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, expr := range []string{"0 25 * * *", "CRON_TZ=UTC 0 7 * * *", "TZ=UTC 0 7 * * *", "* * * *", "0 0 0 * * *"} {
		if _, err := ParseCron(expr); err == nil {
			t.Errorf("ParseCron(%q) accepted", expr)
		}
	}
	for _, loc := range []string{"Mars/Olympus", "Local"} {
		if _, err := ParseLocation(loc); err == nil {
			t.Errorf("ParseLocation(%q) accepted", loc)
		}
	}
}
