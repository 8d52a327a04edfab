// Package hibernation holds what the API server and the lifecycle controller share about a tenant
// cluster's sleep: parsing its schedules and deciding, from them, what the cluster should be.
package hibernation

import (
	"fmt"
	"strings"
	"time"

	// Time zones are read from the binary, not the host: the image has no zoneinfo.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
)

// cronParser reads the five standard fields and the @descriptors (@daily, @hourly, ...), as a
// Kubernetes CronJob does.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron parses one cron expression. A time zone prefix (TZ= or CRON_TZ=) is refused: the
// schedule's location says it.
func ParseCron(expr string) (cron.Schedule, error) {
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, fmt.Errorf("give the time zone in location, not in the expression")
	}
	return cronParser.Parse(expr)
}

// ParseLocation reads an IANA time zone; empty is UTC.
func ParseLocation(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if name == "Local" {
		return nil, fmt.Errorf("the machine's local zone is not a time zone; name one such as Europe/Berlin")
	}
	return time.LoadLocation(name)
}

// Schedule is one parsed sleep/wake pair; a nil Start or End never fires.
type Schedule struct {
	Start, End cron.Schedule
	Location   *time.Location
}

// Decision is what the schedules say at a moment: the last time one of them fired after the
// given moment, and whether that was a sleep.
type Decision struct {
	At        time.Time
	Hibernate bool
}

// Due returns the latest sleep or wake time of any schedule in (since, now], or false when none
// fired. A wake and a sleep at the same minute: the wake wins, as a wake always does.
func Due(schedules []Schedule, since, now time.Time) (Decision, bool) {
	var best Decision
	found := false
	consider := func(s cron.Schedule, loc *time.Location, hibernate bool) {
		if s == nil {
			return
		}
		last, ok := LastFire(s, since.In(loc), now.In(loc))
		if !ok {
			return
		}
		if !found || last.After(best.At) || (last.Equal(best.At) && !hibernate) {
			best, found = Decision{At: last, Hibernate: hibernate}, true
		}
	}
	for _, s := range schedules {
		consider(s.Start, s.Location, true)
		consider(s.End, s.Location, false)
	}
	return best, found
}

// Next returns the earliest sleep or wake time of any schedule after now (zero when none).
func Next(schedules []Schedule, now time.Time) time.Time {
	var next time.Time
	for _, s := range schedules {
		for _, c := range []cron.Schedule{s.Start, s.End} {
			if c == nil {
				continue
			}
			if t := c.Next(now.In(s.Location)); !t.IsZero() && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
	}
	return next
}

// LastFire is the last activation of s in (since, now]. A cron schedule only goes forward, so it
// walks from since: callers bound how far back since is.
func LastFire(s cron.Schedule, since, now time.Time) (time.Time, bool) {
	var last time.Time
	for t := s.Next(since); !t.IsZero() && !t.After(now); t = s.Next(t) {
		last = t
	}
	return last, !last.IsZero()
}
