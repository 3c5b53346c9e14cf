package timewindow

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func mustWindow(t *testing.T, days, start, end, zone string) *Window {
	t.Helper()
	w, err := Parse(strings.Split(days, ","), start, end, zone)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func localAt(t *testing.T, zone, s string) time.Time {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	v, err := time.ParseInLocation("2006-01-02 15:04:05", s, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestWindowContains follows kured's pkg/timewindow semantics: the
// weekday tested is that of the local time itself, also inside a window
// that wraps over midnight; start and end are inclusive.
func TestWindowContains(t *testing.T) {
	la := "America/Los_Angeles"
	cases := []struct {
		days, start, end, zone string
		when                   string
		want                   bool
	}{
		{"mon,tue,wed,thu,fri", "9am", "5pm", la, "2019-03-31 10:00:00", false}, // Sunday
		{"mon,tue,wed,thu,fri", "9am", "5pm", la, "2019-04-04 12:00:00", true},
		{"mon,tue,wed,thu,fri", "9am", "5pm", la, "2019-04-05 08:59:59", false},
		{"mon,tue,wed,thu,fri", "9am", "5pm", la, "2019-04-05 09:00:00", true}, // start inclusive
		{"mon,tue,wed,thu,fri", "9am", "5pm", la, "2019-04-05 17:00:00", true}, // end inclusive
		{"mon,tue,wed,thu,fri", "9am", "5pm", la, "2019-04-05 17:00:01", false},
		{"mon,tue,wed,thu,fri", "9pm", "5am", la, "2019-04-04 00:49:00", true},  // Thursday, wrapped from Wednesday night
		{"mon,tue,wed,thu,fri", "9pm", "5am", la, "2019-04-04 22:49:00", true},  // Thursday night
		{"mon,tue,wed,thu,fri", "9pm", "5am", la, "2019-03-31 22:00:00", false}, // Sunday night is not in
		{"mon,tue,wed,thu,fri", "9pm", "5am", la, "2019-04-06 01:00:00", false}, // Saturday 01:00: kured tests Saturday, not Friday's night
		{"mon,tue,wed,thu", "11:59pm", "00:01am", la, "2019-04-04 23:59:00", true},
		{"mon,tue,wed,thu", "11:59pm", "00:01am", la, "2019-04-05 00:00:00", false}, // Friday not listed
		{"su,mo,tu,we,th,fr,sa", "0:00", "23:59:59", "UTC", "2019-04-18 23:59:59", true},
		{"0,6", "10", "11", "UTC", "2019-04-06 10:30:00", true}, // numeric days, hour-only times
		{"0,6", "10", "11", "UTC", "2019-04-08 10:30:00", false},
	}
	for _, c := range cases {
		w := mustWindow(t, c.days, c.start, c.end, c.zone)
		if got := w.Contains(localAt(t, c.zone, c.when)); got != c.want {
			t.Errorf("%s %s–%s: Contains(%s) = %v, want %v", c.days, c.start, c.end, c.when, got, c.want)
		}
	}
}

func TestWindowNextOpen(t *testing.T) {
	berlin := "Europe/Berlin"
	cases := []struct {
		days, start, end, zone string
		now, want              string
	}{
		// Closed on a Sunday afternoon: opens the same evening.
		{"su", "22:00", "04:00", berlin, "2026-11-29 18:48:00", "2026-11-29 22:00:00"},
		// Monday 03:00: kured tests Monday, which is not listed; next Sunday 00:00 opens (wrapped from Saturday's night).
		{"su", "22:00", "04:00", berlin, "2026-11-30 03:00:00", "2026-12-06 00:00:00"},
		// Weekdays 9–17 on Friday evening: opens Monday 09:00.
		{"mo,tu,we,th,fr", "09:00", "17:00", berlin, "2026-11-27 17:30:00", "2026-11-30 09:00:00"},
		// Open now: now.
		{"mo,tu,we,th,fr", "09:00", "17:00", berlin, "2026-11-27 12:00:00", "2026-11-27 12:00:00"},
		// Across the spring DST change (Europe/Berlin 2026-03-29 02:00 → 03:00).
		{"su", "03:30", "05:00", berlin, "2026-03-28 23:00:00", "2026-03-29 03:30:00"},
	}
	for _, c := range cases {
		w := mustWindow(t, c.days, c.start, c.end, c.zone)
		got, ok := w.NextOpen(localAt(t, c.zone, c.now))
		if want := localAt(t, c.zone, c.want); !ok || !got.Equal(want) {
			t.Errorf("%s %s–%s from %s: NextOpen = %v %v, want %v", c.days, c.start, c.end, c.now, got, ok, want)
		}
	}
	w := mustWindow(t, "", "22:00", "04:00", "UTC")
	if _, ok := w.NextOpen(time.Now()); ok {
		t.Error("a window with no day never opens")
	}
}

func TestWindowOpensSays(t *testing.T) {
	w := mustWindow(t, "su", "22:00", "04:00", "Europe/Berlin")
	now := localAt(t, "Europe/Berlin", "2026-11-29 18:48:00")
	if got, want := w.Opens(now), "opens Sun 22:00 Europe/Berlin, in 3h12m"; got != want {
		t.Fatalf("Opens = %q, want %q", got, want)
	}
	if got := w.String(); got != "su 22:00–04:00 Europe/Berlin" {
		t.Fatalf("String = %q", got)
	}
}

func TestWindowErrors(t *testing.T) {
	for _, c := range [][4]string{{"xx", "1", "2", "UTC"}, {"7", "1", "2", "UTC"}, {"mo", "25:00", "2", "UTC"}, {"mo", "1", "2", "Nowhere/City"}} {
		if _, err := Parse([]string{c[0]}, c[1], c[2], c[3]); err == nil {
			t.Errorf("%v: no error", c)
		}
	}
}

// kured takes each day as given: a blank before a day name is no weekday,
// and its errors are its own words (pkg/timewindow parseWeekday).
func TestWindowDaysAreNotTrimmed(t *testing.T) {
	for _, c := range []struct {
		days []string
		want string
	}{
		{[]string{"th", " fr"}, "invalid weekday:  fr"},
		{[]string{"sa ", "th"}, "invalid weekday: sa "},
		{[]string{"7"}, "invalid weekday, number out of range: 7"},
		{[]string{"Mo", "", "+3"}, ""},
	} {
		_, err := Parse(c.days, "0:00", "23:59:59", "UTC")
		if got := fmt.Sprint(err); (c.want == "" && err != nil) || (c.want != "" && got != c.want) {
			t.Errorf("%q: error %v, want %q", c.days, err, c.want)
		}
	}
	if _, err := Parse(nil, "0:00", "1:00", "Nowhere/City"); err == nil || err.Error() != "unknown time zone Nowhere/City" {
		t.Errorf("zone error %v, want kured's (time.LoadLocation's) own", err)
	}
}
