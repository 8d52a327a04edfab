// Package maintenance holds what the API server and the lifecycle controllers share about a tenant
// cluster's maintenance: its window (when the platform may change the cluster by itself) and
// the version catalog (which Kubernetes versions are offered, which have expired, and which
// patch a cluster moves to).
package maintenance

import (
	"fmt"
	"strings"
	"time"

	"github.com/butlerdotdev/butler-apiserver/pkg/hibernation"
)

// A window is open long enough for a control plane and a few workers to roll, and short enough
// that "maintenance" still names a time the Team can plan around (Gardener's bounds).
const (
	MinDuration = 30 * time.Minute
	MaxDuration = 6 * time.Hour
)

// Weekdays are the day names a window accepts, as Go (and kubectl's users) spell them.
var Weekdays = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}

// Window is a parsed daily or weekly window. The zero Window is never open.
type Window struct {
	days     map[time.Weekday]bool // nil: every day
	start    time.Duration         // after midnight
	duration time.Duration
	loc      *time.Location
}

// ParseDay reads a weekday name (any case, full or three letters).
func ParseDay(s string) (time.Weekday, error) {
	for i, name := range Weekdays {
		if strings.EqualFold(s, name) || strings.EqualFold(s, name[:3]) {
			return time.Weekday((i + 1) % 7), nil
		}
	}
	return 0, fmt.Errorf("not a weekday; use one of %s", strings.Join(Weekdays, ", "))
}

// ParseStart reads HH:MM (24-hour) as the time after midnight.
func ParseStart(s string) (time.Duration, error) {
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, fmt.Errorf("must be HH:MM (24-hour), e.g. 02:30")
	}
	return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute, nil
}

// CheckDuration says why a window of d is refused, or nil.
func CheckDuration(d time.Duration) error {
	if d < MinDuration || d > MaxDuration {
		return fmt.Errorf("must be between %s and %s", MinDuration, MaxDuration)
	}
	return nil
}

// ParseWindow parses a window's fields; the error names the first that is wrong.
func ParseWindow(days []string, start string, duration time.Duration, location string) (Window, error) {
	w := Window{duration: duration}
	var err error
	if w.start, err = ParseStart(start); err != nil {
		return Window{}, fmt.Errorf("start: %w", err)
	}
	if err := CheckDuration(duration); err != nil {
		return Window{}, fmt.Errorf("duration: %w", err)
	}
	if w.loc, err = hibernation.ParseLocation(location); err != nil {
		return Window{}, fmt.Errorf("location: %w", err)
	}
	for _, d := range days {
		day, err := ParseDay(d)
		if err != nil {
			return Window{}, fmt.Errorf("days: %q: %w", d, err)
		}
		if w.days == nil {
			w.days = map[time.Weekday]bool{}
		}
		w.days[day] = true
	}
	return w, nil
}

// openingOn is the window's opening on the calendar day of t (in the window's zone), and
// whether the window opens that day.
func (w Window) openingOn(t time.Time) (time.Time, bool) {
	if w.loc == nil {
		return time.Time{}, false
	}
	t = t.In(w.loc)
	midnight := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, w.loc)
	// Added as wall-clock hours and minutes, so a DST change that day keeps 02:30 at 02:30.
	open := time.Date(t.Year(), t.Month(), t.Day(), int(w.start/time.Hour), int(w.start%time.Hour/time.Minute), 0, 0, w.loc)
	return open, w.days == nil || w.days[midnight.Weekday()]
}

// OpenAt returns the start of the opening that contains now, if the window is open at now. A
// window may run past midnight: the opening of the day before counts too.
func (w Window) OpenAt(now time.Time) (time.Time, bool) {
	for _, day := range []time.Time{now, now.AddDate(0, 0, -1)} {
		if start, ok := w.openingOn(day); ok && !now.Before(start) && now.Before(start.Add(w.duration)) {
			return start, true
		}
	}
	return time.Time{}, false
}

// Next returns the first opening after now (zero for the zero Window).
func (w Window) Next(now time.Time) time.Time {
	for i := 0; i <= 7; i++ {
		if start, ok := w.openingOn(now.AddDate(0, 0, i)); ok && start.After(now) {
			return start
		}
	}
	return time.Time{}
}

// End is the end of the opening that starts at start.
func (w Window) End(start time.Time) time.Time { return start.Add(w.duration) }
