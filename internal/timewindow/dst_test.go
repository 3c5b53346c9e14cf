package timewindow

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// kuredZones are zones kured's users run, with and without DST changes in
// the next two years (Tehran and São Paulo have none any more; Santiago
// changes at midnight, Auckland and Sydney in the southern spring, Cairo
// reinstated DST in 2023).
var kuredZones = []string{"America/Santiago", "America/New_York", "Europe/Berlin", "Europe/London", "Australia/Sydney",
	"America/Sao_Paulo", "Asia/Tehran", "Pacific/Auckland", "Africa/Cairo", "America/Havana", "Australia/Lord_Howe",
	"America/Asuncion", "Asia/Beirut", "America/Scoresbysund", "Asia/Gaza"}

// transitions lists every offset change of zone between from and to.
func transitions(loc *time.Location, from, to time.Time) []time.Time {
	var out []time.Time
	t := from.In(loc)
	for {
		_, end := t.ZoneBounds()
		if end.IsZero() || end.After(to) {
			return out
		}
		out = append(out, end)
		t = end
	}
}

// bruteOpen is the first instant at or after t that kured's Contains says
// open, found by asking it about every second (openings are whole seconds:
// a wall time of kured's, a midnight, or a zone change) up to horizon.
//
// Except the seconds of a local day that is not a reboot day: Contains is
// false at every instant whose local weekday is not one of the window's (its
// first test: kured's day is the weekday of the local time being tested),
// and the local weekday can only change at a local midnight or at a change
// of the zone's offset. So the scan goes stretch by stretch, a stretch
// ending at the earlier of the next local midnight (at the current offset)
// and the zone's next change: every second of a stretch has the same offset
// and the same local date, hence the same weekday. A stretch on a reboot day
// has each of its seconds asked; one on another day is passed over, Contains
// saying false for each of its seconds. The answer is that of the scan of
// every second (scanEverySecond; TestBruteOpenIsTheScanOfEverySecond
// compares the two) at a fraction of its cost: the scan was most of this
// package's test CPU under -race.
func bruteOpen(w *Window, t time.Time, horizon time.Duration) (time.Time, bool) {
	if w.Contains(t) {
		return t, true
	}
	for x := t.Truncate(time.Second).Add(time.Second); x.Sub(t) <= horizon; {
		lt := x.In(w.loc)
		next := x.Add(time.Duration(24*3600-(lt.Hour()*3600+lt.Minute()*60+lt.Second())) * time.Second)
		if _, end := lt.ZoneBounds(); !end.IsZero() && end.Before(next) {
			next = end
		}
		if !w.days[lt.Weekday()] {
			x = next
			continue
		}
		for ; x.Before(next) && x.Sub(t) <= horizon; x = x.Add(time.Second) {
			if w.Contains(x) {
				return x, true
			}
		}
	}
	return time.Time{}, false
}

// scanEverySecond is bruteOpen without its skip: Contains asked about every
// second.
func scanEverySecond(w *Window, t time.Time, horizon time.Duration) (time.Time, bool) {
	if w.Contains(t) {
		return t, true
	}
	for x := t.Truncate(time.Second).Add(time.Second); x.Sub(t) <= horizon; x = x.Add(time.Second) {
		if w.Contains(x) {
			return x, true
		}
	}
	return time.Time{}, false
}

// TestNextOpenAcrossDSTMatchesContains: at every DST change of the next two
// years in the zones kured's users run, from instants around it, the
// computed next opening is the first instant kured's Contains says open (a
// brute-force scan). The example that failed before: Sundays 00:15–01:02:03
// in America/Santiago, on the Sunday 00:15 does not exist.
func TestNextOpenAcrossDSTMatchesContains(t *testing.T) {
	from := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(2, 0, 0)
	rng := rand.New(rand.NewPCG(33, 2))
	const horizon = 3 * 24 * time.Hour
	clocks := []string{"0:00", "00:15", "00:30", "01:00", "01:02:03", "01:30", "02:00", "02:30", "03:00", "03:30", "23:00", "23:30", "23:59:59", "12:00"}
	cases, mismatches := 0, 0
	for _, zone := range kuredZones {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		changes := transitions(loc, from, to)
		if zone == "America/Santiago" && len(changes) < 4 {
			t.Fatalf("%s: %d changes in two years", zone, len(changes))
		}
		for _, ch := range changes {
			day := ch.In(loc).Weekday()
			for range 5 {
				days := []string{fmt.Sprint(int(day))}
				switch rng.IntN(3) {
				case 1:
					days = append(days, fmt.Sprint((int(day)+1)%7))
				case 2:
					days = append(days, fmt.Sprint((int(day)+6)%7))
				}
				start, end := clocks[rng.IntN(len(clocks))], clocks[rng.IntN(len(clocks))]
				w, err := Parse(days, start, end, zone)
				if err != nil {
					t.Fatal(err)
				}
				now := ch.Add(time.Duration(rng.Int64N(int64(32*time.Hour))) - 30*time.Hour)
				got, ok := w.NextOpen(now)
				want, wok := bruteOpen(w, now, horizon)
				cases++
				if wok != (ok && got.Sub(now) <= horizon) || (wok && !got.Equal(want)) {
					mismatches++
					if mismatches <= 10 {
						t.Errorf("%s days %v %s–%s from %s: NextOpen = %s %v, scan of Contains = %s %v", zone, days, start, end,
							now.In(loc).Format(time.RFC3339), got.In(loc).Format(time.RFC3339), ok, want.In(loc).Format(time.RFC3339), wok)
					}
				}
			}
		}
	}
	if mismatches > 0 {
		t.Fatalf("%d of %d cases disagree with kured's Contains", mismatches, cases)
	}
	t.Logf("%d cases, every one the first instant Contains says open", cases)
}

// TestBruteOpenIsTheScanOfEverySecond: the oracle that passes over the
// local days that are not reboot days answers as the scan of every second.
// From just before each change of offset of a year, in the zones whose
// clocks jump at midnight (the local date goes back or forward with them)
// and Lord Howe's half hour, with only the next day a reboot day and a
// window that opens at its midnight: the oracle passes over the rest of the
// day, the change included, and must stop at the next day's first second. (The two were also compared without
// -race on 1,750 cases of every zone above, random days and windows.)
func TestBruteOpenIsTheScanOfEverySecond(t *testing.T) {
	from := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(35, 3))
	cases := 0
	for _, zone := range []string{"America/Santiago", "America/Asuncion", "Asia/Beirut", "America/Havana", "Africa/Cairo", "Asia/Gaza", "Australia/Lord_Howe"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range transitions(loc, from, from.AddDate(1, 0, 0)) {
			now := ch.Add(-time.Duration(rng.Int64N(int64(90 * time.Minute))))
			next := []string{fmt.Sprint(int(now.In(loc).Weekday()+1) % 7)}
			w, err := Parse(next, "0:00", "00:15", zone)
			if err != nil {
				t.Fatal(err)
			}
			const horizon = 2 * 24 * time.Hour
			got, ok := bruteOpen(w, now, horizon)
			want, wok := scanEverySecond(w, now, horizon)
			cases++
			if ok != wok || !got.Equal(want) {
				t.Errorf("%s %s from %s: bruteOpen = %s %v, every second = %s %v", zone, w, now.In(loc).Format(time.RFC3339),
					got.In(loc).Format(time.RFC3339), ok, want.In(loc).Format(time.RFC3339), wok)
			}
		}
	}
	if cases < 8 {
		t.Fatalf("%d cases: too few changes of offset to compare the two", cases)
	}
	t.Logf("%d cases agree", cases)
}

// The example: kured's window on the Sunday America/Santiago's
// clocks jump from 00:00 to 01:00 (2027-09-05): 00:15 does not exist, so
// kured's start is 01:15 and its end 01:02:03 is before it: closed all that
// day; it opens the next Sunday at 00:15.
func TestNextOpenSantiagoSpringForward(t *testing.T) {
	w, err := Parse([]string{"su"}, "00:15", "01:02:03", "America/Santiago")
	if err != nil {
		t.Fatal(err)
	}
	loc := w.Location()
	now := time.Date(2027, 9, 4, 23, 0, 0, 0, loc)
	got, ok := w.NextOpen(now)
	want, wok := bruteOpen(w, now, 9*24*time.Hour)
	if !ok || !wok || !got.Equal(want) {
		t.Fatalf("NextOpen = %s %v, scan of Contains = %s %v", got.In(loc), ok, want.In(loc), wok)
	}
}
