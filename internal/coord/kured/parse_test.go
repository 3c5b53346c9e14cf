package kured

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// The forms kured writes stay accepted: current, legacy (no created/TTL),
// manual, and multi-locks (locks null or empty too), in any key order and
// spacing.
func TestKuredFormsKuredWritesAreAccepted(t *testing.T) {
	for _, v := range []string{
		`{"nodeID":"n1","metadata":{"unschedulable":false},"created":"2026-11-29T12:00:00Z","TTL":0}`,
		`{"nodeID":"n1","metadata":{"unschedulable":true}}`,
		`{"nodeID":"manual"}`,
		` { "TTL" : 5 , "nodeID" : "n1" } `,
		`{"maxOwners":2,"locks":[` + n2Entry + `,` + goneEntry + `]}`,
		`{"maxOwners":2,"locks":[]}`,
		`{"maxOwners":2,"locks":null}`,
		`{"locks":[],"maxOwners":3}`,
	} {
		l, err := Parse(v)
		if err != nil {
			t.Errorf("%s: %v", v, err)
			continue
		}
		conc := 1
		if l.Multi {
			conc = 2
		}
		if kr := Reads(v, true, conc); kr.Err != nil || !kr.equal(l.reading(conc)) {
			t.Errorf("%s: kured reads %+v, rebootwatch %+v", v, kr, l)
		}
	}
}

// FuzzKuredReadsAgree: whatever Parse accepts as kured's own form,
// kured's reader (encoding/json into kured's structs, at the concurrency
// of the value's shape) reads the same holders, times, TTLs, cordon marks
// and maxOwners.
func FuzzKuredReadsAgree(f *testing.F) {
	for _, s := range []string{
		n2Entry, goneEntry, `{"nodeID":"manual"}`, `{"nodeID":"n1","metadata":{}}`,
		`{"maxOwners":2,"locks":[` + n2Entry + `,` + goneEntry + `]}`, `{"maxOwners":2,"locks":null}`, `{"maxOwners":0,"locks":[]}`,
		`{"maxOwners":2,"Locks":[` + n2Entry + `]}`, `{"maxOwners":2,"locks":[],"locks":[` + n2Entry + `]}`,
		`{"maxOwners":2,"loc\u212As":[` + n2Entry + `]}`, `{"node\u0049D":"n1"}`, `{"nodeID":"a","nodeid":"b"}`,
		`{"nodeID":"n1","TTL":1e3}`, `{"nodeID":"n1","TTL":-0}`, `{"nodeID":"n1","created":null}`,
		`{"nodeID":"\xff"}`, `{"nodeID":"n1"} `, `{"nodeID":"n1"}{}`, `{"maxOwners":2,"locks":[{"nodeID":"a","metadata":{"Unschedulable":true}}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		l, err := Parse(v)
		if err != nil {
			return
		}
		conc := 1
		if l.Multi {
			conc = 2
		}
		kr := Reads(v, true, conc)
		if kr.Err != nil {
			t.Fatalf("accepted %q, which kured cannot decode: %v", v, kr.Err)
		}
		if !kr.equal(l.reading(conc)) || (l.Multi && kr.MaxOwners != l.MaxOwners) {
			t.Fatalf("%q: rebootwatch reads %+v, kured %+v", v, l, kr)
		}
		for i, e := range l.Entries {
			if e.HasCreated != kr.Entries[i].HasCreated {
				t.Fatalf("%q: entry %d created known %v, kured %v", v, i, e.HasCreated, kr.Entries[i].HasCreated)
			}
		}
	})
}

// kuredGen builds random annotation values near kured's forms: kured's keys
// in their own spelling and in others (case, the Kelvin sign encoding/json
// folds to K, \u escapes), duplicates, extra keys, and values of every JSON
// type.
type kuredGen struct{ r *rand.Rand }

func (g kuredGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g kuredGen) key(k string) string {
	switch g.r.IntN(12) {
	case 0:
		return strings.ToUpper(k[:1]) + k[1:]
	case 1:
		return strings.ToLower(k)
	case 2:
		return strings.ReplaceAll(strings.ReplaceAll(k, "k", "\u212a"), "K", "\u212a")
	case 3:
		return `\u00` + fmt.Sprintf("%x", k[0]) + k[1:] // decodes to k itself
	case 4:
		return g.pick("x", "holder", "lock", "nodeId ")
	}
	return k
}

func (g kuredGen) scalar() string {
	return g.pick(`"n1"`, `"n2"`, `""`, `"manual"`, `0`, `1`, `-5`, `3600000000000`, `1.5`, `1e3`, `true`, `false`, `null`,
		`"2026-11-29T12:00:00Z"`, `"2026-11-29T12:00:00.123456789+02:00"`, `"yesterday"`, `{}`, `[]`)
}

func (g kuredGen) value(k string) string {
	if g.r.IntN(4) == 0 {
		return g.scalar()
	}
	switch k {
	case "nodeID":
		return g.pick(`"n1"`, `"n2"`, `"gone"`, `"manual"`)
	case "created":
		return g.pick(`"2026-11-29T12:00:00Z"`, `"2026-11-29T12:00:00.5Z"`, `"2026-11-29T13:00:00+01:00"`)
	case "TTL":
		return g.pick(`0`, `3600000000000`, `60000000000`)
	case "maxOwners":
		return g.pick(`0`, `1`, `2`, `3`)
	case "unschedulable":
		return g.pick(`true`, `false`)
	case "metadata":
		return g.object([]string{"unschedulable"})
	case "locks":
		n := g.r.IntN(4)
		var es []string
		for range n {
			es = append(es, g.object([]string{"nodeID", "metadata", "created", "TTL"}))
		}
		return "[" + strings.Join(es, ",") + "]"
	}
	return g.scalar()
}

func (g kuredGen) object(keys []string) string {
	var parts []string
	for _, k := range keys {
		if g.r.IntN(6) == 0 {
			continue
		}
		parts = append(parts, `"`+g.key(k)+`":`+g.value(k))
		if g.r.IntN(10) == 0 {
			parts = append(parts, `"`+g.key(k)+`":`+g.value(k))
		}
	}
	g.r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	return "{" + strings.Join(parts, ",") + "}"
}

// Property: on random values near kured's forms, whatever Parse accepts
// is read the same by kured's own reader (as FuzzKuredReadsAgree, on inputs a
// fuzzer rarely finds), and a good share is accepted, so the property is
// not vacuous.
func TestKuredReaderAgreesWithKuredProperty(t *testing.T) {
	g := kuredGen{rand.New(rand.NewPCG(22, 3))}
	accepted, refused := 0, 0
	for range 20000 {
		var v string
		if g.r.IntN(2) == 0 {
			v = g.object([]string{"nodeID", "metadata", "created", "TTL"})
		} else {
			v = g.object([]string{"maxOwners", "locks"})
		}
		l, err := Parse(v)
		if err != nil {
			refused++
			continue
		}
		accepted++
		conc := 1
		if l.Multi {
			conc = 2
		}
		kr := Reads(v, true, conc)
		if kr.Err != nil || !kr.equal(l.reading(conc)) || (l.Multi && kr.MaxOwners != l.MaxOwners) {
			t.Fatalf("%s: rebootwatch reads %+v, kured %+v", v, l, kr)
		}
	}
	if accepted < 500 || refused < 500 {
		t.Fatalf("accepted %d, refused %d: the generator does not cover both sides", accepted, refused)
	}
	t.Logf("accepted %d, refused %d", accepted, refused)
}

// FuzzParseKured: the kured annotation parser never panics, and whatever it
// accepts is well-formed: every entry has a non-empty nodeID, no entry is
// listed twice, TTLs are not negative, and removing an entry from an
// accepted multi-lock leaves a value that parses to the other entries.
func FuzzParseKured(f *testing.F) {
	for _, s := range []string{
		`{"nodeID":"n1","metadata":{"unschedulable":false},"created":"2026-11-29T12:00:00Z","TTL":0}`,
		`{"nodeID":"n1"}`,
		`{"nodeID":"manual"}`,
		`{"maxOwners":2,"locks":[{"nodeID":"n1","created":"2026-11-29T12:00:00Z","TTL":3600000000000},{"nodeID":"n2"}]}`,
		`{"maxOwners":2,"locks":[]}`,
		`{"maxOwners":2,"locks":null}`,
		`{"nodeID":`, `null`, `[]`, `""`, `{"nodeID":1}`, `{"nodeID":"n1","TTL":"1h"}`, `{"nodeID":"n1","TTL":-5}`,
		`{"nodeID":"n1","created":"yesterday"}`, `{"locks":[{"nodeID":"a"},{"nodeID":"a"}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		l, err := Parse(v)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		for _, e := range l.Entries {
			if strings.TrimSpace(e.NodeID) == "" {
				t.Fatalf("accepted entry without nodeID from %q", v)
			}
			if e.TTL < 0 {
				t.Fatalf("negative TTL from %q", v)
			}
			_ = e.Expired(time.Now())
		}
		if !l.Multi && len(l.Entries) != 1 {
			t.Fatalf("single lock with %d entries from %q", len(l.Entries), v)
		}
		if l.Multi && len(l.Entries) > 0 {
			victim := l.Entries[0].NodeID
			nv, last, err := RemoveEntry(v, 0, victim)
			if err != nil {
				t.Fatalf("cannot remove %q from accepted %q: %v", victim, v, err)
			}
			if last != (len(l.Entries) == 1) {
				t.Fatalf("removal of the only entry of %q: last %v", v, last)
			}
			if last {
				return
			}
			after, err := Parse(nv)
			if err != nil {
				t.Fatalf("removal gave unparsable %q: %v", nv, err)
			}
			if len(after.Entries) != len(l.Entries)-1 || after.MaxOwners != l.MaxOwners {
				t.Fatalf("removal of %q from %q gave %q", victim, v, nv)
			}
			for i, e := range after.Entries {
				if e != l.Entries[i+1] {
					t.Fatalf("removal changed entry %d: %+v vs %+v", i, e, l.Entries[i+1])
				}
			}
		}
	})
}

// kured's flags come from args (--flag=value or --flag value; bool flags take
// no value) and KURED_* environment variables, set after them (kured main:
// flag.Parse, then LoadFromEnv; LoadFromEnv has no case for stringArray).
func TestParseKuredConfig(t *testing.T) {
	c := ParseConfig(
		[]string{"/usr/bin/kured", "--ds-name=kured-ds", "--ds-namespace", "ops", "--lock-annotation=example.com/reboot-lock",
			"--lock-ttl=2h", "--lock-release-delay", "15m", "--concurrency=3", "--annotate-nodes", "--alert-firing-only",
			"--reboot-days=mo,tu", "--reboot-days=we", "--blocking-pod-selector=app=db", "--blocking-pod-selector", "app=mq",
			"--prometheus-url=http://prom:9090", "--alert-filter-regexp=^Watchdog$", "--drain-timeout=10m"},
		map[string]string{"KURED_PERIOD": "5m", "KURED_CONCURRENCY": "2", "KURED_START_TIME": "22:00", "KURED_BLOCKING_POD_SELECTOR": "app=x"},
		[]string{"KURED_END_TIME"})
	if c.DSName != "kured-ds" || c.DSNamespace != "ops" || c.LockAnnotation != "example.com/reboot-lock" || c.LockTTL != 2*time.Hour ||
		c.LockReleaseDelay != 15*time.Minute || c.Concurrency != 2 || c.Period != 5*time.Minute || !c.AnnotateNodes || !c.AlertFiringOnly ||
		!slices.Equal(c.RebootDays, []string{"mo", "tu", "we"}) || !slices.Equal(c.BlockingPodSelectors, []string{"app=db", "app=mq"}) ||
		c.PrometheusURL != "http://prom:9090" || c.AlertFilterRegexp != "^Watchdog$" || c.DrainTimeout != 10*time.Minute ||
		c.StartTime != "22:00" || c.EndTime != "23:59:59" || c.TimeZone != "UTC" {
		t.Fatalf("config %+v", c)
	}
	if c.From["concurrency"] != "env KURED_CONCURRENCY" || c.From["lock-ttl"] != "arg" {
		t.Fatalf("from %v", c.From)
	}
	probs := strings.Join(c.Problems, "; ")
	if !strings.Contains(probs, "KURED_BLOCKING_POD_SELECTOR is ignored") || !strings.Contains(probs, "KURED_END_TIME comes from") || c.StartError != "" {
		t.Fatalf("problems %q, start error %q", probs, c.StartError)
	}
	// kured exits at the first value pflag rejects: that flag is not known.
	bad := ParseConfig([]string{"--lock-ttl=soon", "--concurrency=two"}, nil, nil)
	if bad.StartError != `invalid argument "soon" for "--lock-ttl" flag: time: invalid duration "soon"` || bad.Known("lock-ttl") {
		t.Fatalf("bad values: %+v", bad)
	}
	d := DefaultConfig()
	if d.DSName != "kured" || d.DSNamespace != "kube-system" || d.LockAnnotation != Annotation || d.Period != time.Hour {
		t.Fatalf("defaults %+v", d)
	}
	set := (&c).Settings()
	if len(set) < 17 || set[0].Key != "kured --ds-name" || !strings.Contains(set[0].Value, "(arg)") {
		t.Fatalf("settings %+v", set)
	}
}

const (
	n2Entry   = `{"nodeID":"n2","metadata":{"unschedulable":false},"created":"2026-11-29T12:55:00Z","TTL":0}`
	goneEntry = `{"nodeID":"gone","metadata":{"unschedulable":false},"created":"2026-11-29T11:00:00Z","TTL":0}`
)
