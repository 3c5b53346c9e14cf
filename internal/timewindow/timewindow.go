// Package timewindow is kured's reboot window (pkg/timewindow of
// kubereboot/kured), read by every coordinator that uses its semantics:
// kured's own --reboot-days/--start-time/--end-time/--time-zone and Rancher
// system-upgrade-controller's Plan spec.window (built on kured's package).
//
// It is pure: no I/O, no clock of its own (every question takes the time),
// and it imports nothing of ours but model.
package timewindow

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	// The reboot window's time zone must load wherever the binaries run
	// (the agent's image has no /usr/share/zoneinfo).
	_ "time/tzdata"

	"github.com/rebootwatch/rebootwatch/model"
)

// The window has kured's own semantics, as in
// kubereboot/kured pkg/timewindow (read at commit 51220cc): the day is the
// weekday of the local time being tested, the start is inclusive, the end is
// inclusive to its last nanosecond, and a start after the end wraps over
// midnight (to the day before when the local time is before the end, else to
// the day after) while still testing the weekday of the local time itself.

// Window is kured's reboot window.
type Window struct {
	days       [7]bool
	loc        *time.Location
	start, end clock
	// spec is the window as configured, for humans.
	daysSpec, startSpec, endSpec string
}

type clock struct{ h, m, s int }

func (c clock) seconds() int { return c.h*3600 + c.m*60 + c.s }

// kuredDays maps kured's day names to weekdays (pkg/timewindow/days.go).
var kuredDays = map[string]time.Weekday{
	"su": time.Sunday, "sun": time.Sunday, "sunday": time.Sunday,
	"mo": time.Monday, "mon": time.Monday, "monday": time.Monday,
	"tu": time.Tuesday, "tue": time.Tuesday, "tuesday": time.Tuesday,
	"we": time.Wednesday, "wed": time.Wednesday, "wednesday": time.Wednesday,
	"th": time.Thursday, "thu": time.Thursday, "thursday": time.Thursday,
	"fr": time.Friday, "fri": time.Friday, "friday": time.Friday,
	"sa": time.Saturday, "sat": time.Saturday, "saturday": time.Saturday,
}

// Parse builds kured's window from its four settings. An error is kured's
// own (pkg/timewindow New, parseWeekdays, parseWeekday, parseTime), word for
// word: kured fails on it at start and does not run at all. A day is taken
// as given, never trimmed: kured reads " fr" (from --reboot-days=th, fr) as
// no weekday and exits with "invalid weekday:  fr".
func Parse(days []string, start, end, zone string) (*Window, error) {
	w := &Window{startSpec: start, endSpec: end}
	var names []string
	for _, d := range days {
		if d == "" {
			continue
		}
		wd, ok := kuredDays[strings.ToLower(d)]
		if n, err := strconv.Atoi(d); err == nil {
			if n < 0 || n > 6 {
				return nil, fmt.Errorf("invalid weekday, number out of range: %s", d)
			}
			wd, ok = time.Weekday(n), true
		}
		if !ok {
			return nil, fmt.Errorf("invalid weekday: %s", d)
		}
		w.days[wd] = true
		names = append(names, d)
	}
	w.daysSpec = strings.Join(names, ",")
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, err
	}
	w.loc = loc
	if w.start, err = parseClock(start, loc); err != nil {
		return nil, err
	}
	if w.end, err = parseClock(end, loc); err != nil {
		return nil, err
	}
	return w, nil
}

// parseClock reads a time of day in kured's formats.
func parseClock(s string, loc *time.Location) (clock, error) {
	for _, f := range []string{"15:04", "15:04:05", "03:04pm", "15", "03pm", "3pm"} {
		if t, err := time.ParseInLocation(f, s, loc); err == nil {
			return clock{t.Hour(), t.Minute(), t.Second()}, nil
		}
	}
	return clock{}, fmt.Errorf("invalid time format: %s", s)
}

// Contains reports whether kured would reboot at t.
func (w *Window) Contains(t time.Time) bool {
	lt := t.In(w.loc)
	if !w.days[lt.Weekday()] {
		return false
	}
	y, m, d := lt.Date()
	start := time.Date(y, m, d, w.start.h, w.start.m, w.start.s, 0, w.loc)
	end := time.Date(y, m, d, w.end.h, w.end.m, w.end.s, 1e9-1, w.loc)
	if w.start.seconds() > w.end.seconds() {
		if lt.Before(end) {
			start = start.Add(-24 * time.Hour)
		} else {
			end = end.Add(24 * time.Hour)
		}
	}
	return !lt.Before(start) && !lt.After(end)
}

// NextOpen returns the first time at or after t that the window contains;
// ok is false when it never opens (no day set, or none within a year).
//
// It follows Contains exactly, in the zone's wall time, DST changes
// included: Contains can only turn from closed to open at an instant where
// one of its inputs changes, that is at a day's start (time.Date of the
// day and --start-time, which Go moves when that wall time does not exist),
// that start less 24 h (a window wrapped over midnight), a day's end, a
// local midnight, or a change of the zone's offset (where the local date
// can jump forward or back). The first of those instants after t that
// Contains says open is the opening (TestNextOpenAcrossDSTMatchesContains
// checks it against a scan of Contains at every DST change of two years).
func (w *Window) NextOpen(t time.Time) (time.Time, bool) {
	if w.Contains(t) {
		return t, true
	}
	if w.days == [7]bool{} {
		return time.Time{}, false
	}
	// Most windows open within a week: try 16 days first, trusting only an
	// opening well inside them, then a year.
	if at, ok := w.firstOpen(t, 16); ok && at.Before(t.AddDate(0, 0, 13)) {
		return at, true
	}
	return w.firstOpen(t, 400)
}

// firstOpen is the first candidate instant after t, within days days of
// it, that Contains says open.
func (w *Window) firstOpen(t time.Time, days int) (time.Time, bool) {
	lt := t.In(w.loc)
	y, m, d := lt.Date()
	var cands []time.Time
	for i := -1; i <= days; i++ {
		s := time.Date(y, m, d+i, w.start.h, w.start.m, w.start.s, 0, w.loc)
		cands = append(cands, time.Date(y, m, d+i, 0, 0, 0, 0, w.loc), s, s.Add(-24*time.Hour),
			time.Date(y, m, d+i, w.end.h, w.end.m, w.end.s, 1e9-1, w.loc))
	}
	last := time.Date(y, m, d+days+1, 0, 0, 0, 0, w.loc)
	for x := t.Add(-48 * time.Hour); ; {
		_, end := x.ZoneBounds()
		if end.IsZero() || end.After(last) || !end.After(x) {
			break
		}
		cands = append(cands, end)
		x = end
	}
	var best time.Time
	for _, c := range cands {
		if c.After(t) && (best.IsZero() || c.Before(best)) && w.Contains(c) {
			best = c
		}
	}
	return best, !best.IsZero()
}

// Location is the window's time zone.
func (w *Window) Location() *time.Location { return w.loc }

// String renders the window as configured: "mo,tu 22:00–04:00 Europe/Berlin".
func (w *Window) String() string {
	return fmt.Sprintf("%s %s–%s %s", w.daysSpec, w.startSpec, w.endSpec, w.loc)
}

// Opens renders when the window opens next, relative to now: "opens Sun
// 22:00 Europe/Berlin, in 3h12m" ("never opens: no reboot day is set").
func (w *Window) Opens(now time.Time) string {
	at, ok := w.NextOpen(now)
	switch {
	case !ok && w.days == [7]bool{}:
		return "never opens: no reboot day is set"
	case !ok:
		return "does not open within a year"
	}
	return fmt.Sprintf("opens %s %s, in %s", at.In(w.loc).Format("Mon 15:04"), w.loc, model.HumanDuration(at.Sub(now)))
}
