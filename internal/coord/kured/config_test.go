package kured

import (
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kured's settings as kured reads them (cmd/kured/main.go: pflag's Parse,
// then LoadFromEnv; pkg/timewindow for the days), case by case.
func TestKuredReadsItsSettingsAsKuredDoes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []string
		env       map[string]string
		days      []string // nil: not checked
		conc      int      // 0: not checked
		startErr  string
		concKnown bool
	}{
		{name: "a blank after the comma is no weekday for kured", args: []string{"--reboot-days=th, fr"},
			startErr: "Failed to build time window: invalid weekday:  fr"},
		{name: "nor from the environment", env: map[string]string{"KURED_REBOOT_DAYS": "sa, th"},
			startErr: "Failed to build time window: invalid weekday:  th"},
		{name: "the environment appends to the args' days", args: []string{"--reboot-days=th"}, env: map[string]string{"KURED_REBOOT_DAYS": "sa"},
			days: []string{"th", "sa"}},
		{name: "the environment alone replaces the default days", env: map[string]string{"KURED_REBOOT_DAYS": "sa"}, days: []string{"sa"}},
		{name: "pflag stops at --", args: []string{"--period=1h", "--", "--reboot-days=sa"}, days: []string{"su", "mo", "tu", "we", "th", "fr", "sa"}},
		{name: "a CSV-quoted day", args: []string{`--reboot-days="mo",tu`}, days: []string{"mo", "tu"}},
		{name: "ints have base 0 in args: octal", args: []string{"--concurrency=03"}, conc: 3, concKnown: true},
		{name: "ints have base 0 in args: hex", args: []string{"--concurrency=0x3"}, conc: 3, concKnown: true},
		{name: "ints have base 0 in args: 010 is 8", args: []string{"--concurrency", "010"}, conc: 8, concKnown: true},
		{name: "the environment's ints are base 10", env: map[string]string{"KURED_CONCURRENCY": "+3"}, conc: 3, concKnown: true},
		{name: "the environment's 010 is 10", env: map[string]string{"KURED_CONCURRENCY": "010"}, conc: 10, concKnown: true},
		{name: "09 is no integer for pflag", args: []string{"--concurrency=09"},
			startErr: `invalid argument "09" for "--concurrency" flag: strconv.ParseInt: parsing "09": invalid syntax`},
		{name: "0x3 is no integer for Atoi", env: map[string]string{"KURED_CONCURRENCY": "0x3"},
			startErr: "Invalid value for env var named KURED_CONCURRENCY"},
		{name: "the environment sets a scalar after the args", args: []string{"--concurrency=2"}, env: map[string]string{"KURED_CONCURRENCY": "4"},
			conc: 4, concKnown: true},
		{name: "a bool is strconv.ParseBool's", args: []string{"--annotate-nodes=yes"},
			startErr: `invalid argument "yes" for "--annotate-nodes" flag: strconv.ParseBool: parsing "yes": invalid syntax`},
		{name: "also in the environment", env: map[string]string{"KURED_ANNOTATE_NODES": "tRuE"},
			startErr: "Invalid value for KURED_ANNOTATE_NODES: tRuE"},
		{name: "a bad duration in the environment", env: map[string]string{"KURED_LOCK_RELEASE_DELAY": "5 minutes"},
			startErr: "Invalid duration for KURED_LOCK_RELEASE_DELAY: 5 minutes"},
		{name: "an unknown flag", args: []string{"--reboot-day=sa"}, startErr: "unknown flag: --reboot-day"},
		{name: "a single dash is pflag's shorthand", args: []string{"-reboot-days=sa"}, startErr: "unknown shorthand flag: 'r' in -reboot-days=sa"},
		{name: "a value missing at the end", args: []string{"--concurrency"}, startErr: "flag needs an argument: --concurrency"},
		{name: "a bad regexp", args: []string{"--alert-filter-regexp=("},
			startErr: "invalid argument \"(\" for \"--alert-filter-regexp\" flag: error parsing regexp: missing closing ): `(`"},
		{name: "an unknown time zone", args: []string{"--time-zone=Mars/Olympus"}, startErr: "Failed to build time window: unknown time zone Mars/Olympus"},
		{name: "a bad reboot method", args: []string{"--reboot-method=kexec"},
			startErr: "Failed to build rebooter: invalid reboot-method configured kexec, expected signal or command"},
		{name: "the window before the rebooter", args: []string{"--reboot-method=kexec", "--start-time=25:00"},
			startErr: "Failed to build time window: invalid time format: 25:00"},
		{name: "a signal below 1", args: []string{"--reboot-method=signal", "--reboot-signal=0"}, startErr: "Failed to build rebooter: invalid signal: 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ParseConfig(append([]string{"/usr/bin/kured"}, tc.args...), tc.env, nil)
			if c.StartError != tc.startErr {
				t.Fatalf("StartError %q, want %q", c.StartError, tc.startErr)
			}
			if tc.startErr != "" && !slices.Contains(c.Problems, "kured cannot start with these settings: "+strconv.Quote(tc.startErr)) {
				t.Fatalf("problems %q", c.Problems)
			}
			if tc.days != nil && !slices.Equal(c.RebootDays, tc.days) {
				t.Fatalf("days %q, want %q", c.RebootDays, tc.days)
			}
			if conc, known := c.concurrency(); tc.conc != 0 && (conc != tc.conc || known != tc.concKnown) {
				t.Fatalf("concurrency %d (known %v), want %d", conc, known, tc.conc)
			}
		})
	}
	c := ParseConfig([]string{"/usr/bin/kured", "--reboot-days=th"}, map[string]string{"KURED_REBOOT_DAYS": "sa"}, nil)
	if c.From["reboot-days"] != "arg + env KURED_REBOOT_DAYS" {
		t.Fatalf("from %q", c.From["reboot-days"])
	}
	if c := ParseConfig([]string{"/usr/bin/kured", "--concurrency=0x3"}, nil, nil); c.Concurrency != 3 {
		t.Fatal(c.Concurrency)
	}
	// A wrapper's arguments are not kured's: nothing is claimed of them.
	w := ParseConfig([]string{"/bin/sh", "-c", "exec /usr/bin/kured --reboot-days=th, fr"}, nil, nil)
	if w.StartError != "" || w.Known("reboot-days") || w.Known("concurrency") {
		t.Fatalf("wrapper: %+v", w)
	}
}

// kuredDaysModel is kured's reading of one --reboot-days value, written
// from kured's and pflag's code: pflag's stringSlice reads the value as one
// CSV record (encoding/csv; "" is no days), then kured's parseWeekdays
// skips empty items and reads each with parseWeekday: strconv.Atoi first
// (0–6, else "number out of range"), else the lower-cased name in its table.
// It returns the days, or the error kured exits with.
func kuredDaysModel(value string, fromEnv bool) ([7]bool, string) {
	var days [7]bool
	var items []string
	if value != "" {
		r, err := csv.NewReader(strings.NewReader(value)).Read()
		if err != nil {
			if fromEnv {
				return days, fmt.Sprintf("cannot set flag reboot-days from env{KURED_REBOOT_DAYS}: %s", value)
			}
			return days, fmt.Sprintf("invalid argument %q for %q flag: %v", value, "--reboot-days", err)
		}
		items = r
	}
	names := map[string]int{"su": 0, "sun": 0, "sunday": 0, "mo": 1, "mon": 1, "monday": 1, "tu": 2, "tue": 2, "tuesday": 2,
		"we": 3, "wed": 3, "wednesday": 3, "th": 4, "thu": 4, "thursday": 4, "fr": 5, "fri": 5, "friday": 5,
		"sa": 6, "sat": 6, "saturday": 6}
	for _, d := range items {
		if d == "" {
			continue
		}
		if n, err := strconv.Atoi(d); err == nil {
			if n < 0 || n > 6 {
				return days, "Failed to build time window: invalid weekday, number out of range: " + d
			}
			days[n] = true
			continue
		}
		n, ok := names[strings.ToLower(d)]
		if !ok {
			return days, "Failed to build time window: invalid weekday: " + d
		}
		days[n] = true
	}
	return days, ""
}

// TestKuredDaysAgreeWithKuredsParser: 20,000 random --reboot-days values,
// as an arg and as KURED_REBOOT_DAYS, read here as kured reads them: the
// same days, or kured's own error, every time.
func TestKuredDaysAgreeWithKuredsParser(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 20000))
	tokens := []string{"su", "Mo", "TUE", "wednesday", "th", "fri", "sa", "Sunday", "0", "6", "7", "-1", "+3", "03", " fr", "fr ",
		" ", "", "x", "mon\t", `"mo"`, `"tu,we"`, `mo"`, `"sa" `, "ſu", "1e0", "٣"}
	seps := []string{",", ", ", " ,", ",,"}
	sunday := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	mismatches, starts := 0, 0
	for i := range 20000 {
		var b strings.Builder
		for j := range rng.IntN(5) {
			if j > 0 {
				b.WriteString(seps[rng.IntN(len(seps))])
			}
			b.WriteString(tokens[rng.IntN(len(tokens))])
		}
		value, fromEnv := b.String(), i%2 == 1
		wantDays, wantErr := kuredDaysModel(value, fromEnv)
		var c Config
		if fromEnv {
			c = ParseConfig(nil, map[string]string{"KURED_REBOOT_DAYS": value}, nil)
		} else {
			c = ParseConfig([]string{"--reboot-days=" + value}, nil, nil)
		}
		var gotDays [7]bool
		if c.StartError == "" {
			starts++
			w, err := c.RebootWindow()
			if err != nil {
				t.Fatalf("%q: kured starts, but the window does not parse: %v", value, err)
			}
			for d := range 7 {
				gotDays[d] = w.Contains(sunday.AddDate(0, 0, d))
			}
		}
		if c.StartError != wantErr || (wantErr == "" && gotDays != wantDays) {
			mismatches++
			if mismatches <= 10 {
				t.Errorf("%q (env %v): read %v %q, kured %v %q", value, fromEnv, gotDays, c.StartError, wantDays, wantErr)
			}
		}
	}
	if mismatches > 0 {
		t.Fatalf("%d of 20000 day lists read otherwise than kured reads them", mismatches)
	}
	t.Logf("20000 day lists, %d that kured starts with, none read otherwise", starts)
}

// BenchmarkParseConfig reads the settings of a kured DaemonSet as a chart
// writes them: a dozen arguments and two variables (what every read of a
// kured DaemonSet and TestKuredDaysAgreeWithKuredsParser's 20,000 lists cost).
func BenchmarkParseConfig(b *testing.B) {
	argv := []string{"/usr/bin/kured", "--ds-name=kured", "--ds-namespace=kube-system", "--period=1h0m0s",
		"--reboot-days=mo,tu,we,th,fr", "--start-time=22:00", "--end-time=04:00", "--time-zone=Europe/Berlin",
		"--lock-ttl=30m", "--lock-release-delay=5m", "--drain-timeout=10m", "--concurrency=1",
		"--prometheus-url=http://prometheus.monitoring:9090", "--alert-filter-regexp=^RebootRequired$"}
	env := map[string]string{"KURED_NODE_ID": "worker-1", "KURED_BLOCKING_POD_SELECTOR": "app=db"}
	b.ReportAllocs()
	for b.Loop() {
		if c := ParseConfig(argv, env, nil); c.StartError != "" || len(c.RebootDays) != 5 {
			b.Fatalf("%q %v", c.StartError, c.RebootDays)
		}
	}
}
