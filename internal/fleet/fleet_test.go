package fleet

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/rebootwatch/rebootwatch/internal/testenv/golden"
)

var fixtureNow = time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)

// sample is one series of an answer: labels as k=v pairs and a value.
func sample(v float64, kv ...string) *pmodel.Sample {
	m := pmodel.Metric{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[pmodel.LabelName(kv[i])] = pmodel.LabelValue(kv[i+1])
	}
	return &pmodel.Sample{Metric: m, Value: pmodel.SampleValue(v), Timestamp: pmodel.TimeFromUnixNano(fixtureNow.UnixNano())}
}

func ago(d time.Duration) float64 { return float64(fixtureNow.Add(-d).UnixNano()) / 1e9 }

func phases(cluster string, kv ...any) []*pmodel.Sample {
	var out []*pmodel.Sample
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, sample(float64(kv[i+1].(int)), "cluster", cluster, "phase", kv[i].(string)))
	}
	return out
}

const hostile = "evil\x1b]0;pwned\x07\u202e"

// fixture is one refresh's answers: a cluster in every state.
//   - a: agent, every node done, the lock free;
//   - b: agent, a ghost kured lock, fleet stuck behind it for 12m;
//   - c: agent stopped 10m ago (its other series gone), its last lock
//     state an orphan;
//   - d: no agent: kured and kube-state-metrics only;
//   - e: agent, a fleetlock held by a rebooting node;
//   - f: agent, drain blocked for 40m, locks free;
//   - hostile: a cluster name and holder with terminal escapes.
func fixture() Answers {
	var scalars, ph, locks, fallback pmodel.Vector
	part := func(p string, v float64, c string) { scalars = append(scalars, sample(v, "cluster", c, tag, p)) }
	fb := func(p string, v float64, c string) { fallback = append(fallback, sample(v, "cluster", c, tag, p)) }
	for _, c := range []string{"a", "b", "e", "f", hostile} {
		part(partLast, ago(20*time.Second), c)
		part(partBlocked, 0, c)
	}
	part(partLast, ago(10*time.Minute), "c")
	part(partRR, 0, "a")
	part(partUpgraded, 5, "a")
	part(partRR, 2, "b")
	part(partUpgraded, 3, "b")
	scalars[3] = sample(720, "cluster", "b", tag, partBlocked) // b stuck 12m
	fb(partKuredRR, 3, "d")
	fb(partCordoned, 1, "d")
	fb(partKSMNodes, 4, "d")
	fb(partLeaseNodes, 4, "d")
	part(partUpgraded, 1, "e")
	part(partRR, 2, "e")
	part(partUpgraded, 2, "f")
	scalars[7] = sample(2400, "cluster", "f", tag, partBlocked) // f stuck 40m
	// Every agent but c's reports now, its one replica leading.
	for _, c := range []string{"a", "b", "e", "f", hostile} {
		part(partLive, ago(20*time.Second), c)
		part(partLeaderLast, ago(20*time.Second), c)
	}
	ph = append(ph, phases("a", "done", 5, "pending", 0)...)
	ph = append(ph, phases("b", "done", 3, "pending", 2)...)
	ph = append(ph, phases("e", "rebooting", 1, "pending", 1, "idle", 1)...)
	ph = append(ph, phases("f", "draining", 1, "pending", 2, "down", 1)...)
	ph = append(ph, phases(hostile, "idle", 2)...)
	v := func(c, kind, lock, verdict string) {
		locks = append(locks, sample(1, "cluster", c, "kind", kind, "lock", lock, "verdict", verdict, tag, partVerdict))
	}
	v("a", "kured", "kube-system/kured", "free")
	v("b", "kured", "kube-system/kured", "ghost")
	v("e", "fleetlock", "default/fleetlock-default", "held")
	v("f", "kured", "kube-system/kured", "free")
	v(hostile, "fleetlock", "default/fleetlock-default", "held")
	locks = append(locks,
		sample(ago(3*time.Hour), "cluster", "b", "kind", "kured", "lock", "kube-system/kured", "holder", "worker-gone", "holder_node", "", tag, partHolder),
		sample(ago(5*time.Minute), "cluster", "e", "kind", "fleetlock", "lock", "default/fleetlock-default",
			"holder", "978a225b3d7b40e9acd7ce9b62f68444", "holder_node", "worker-2", tag, partHolder),
		sample(0, "cluster", hostile, "kind", "fleetlock", "lock", "default/fleetlock-default", "holder", hostile, "holder_node", hostile, tag, partHolder),
		sample(1, "cluster", "b", "kind", "lock-held", tag, partBlocker),
		sample(1, "cluster", "f", "kind", "drain", tag, partBlocker),
		sample(1, "cluster", "e", "kind", "lock-held", tag, partBlocker),
	)
	// c's agent stopped: the last lock state it exported, an orphan.
	stopped := pmodel.Vector{
		sample(1, "cluster", "c", "kind", "kured", "lock", "kube-system/kured", "verdict", "orphaned", tag, partVerdict),
		sample(ago(40*time.Minute), "cluster", "c", "kind", "kured", "lock", "kube-system/kured", "holder", "worker-1", "holder_node", "worker-1", tag, partHolder),
	}
	return Answers{Vectors: map[string]pmodel.Vector{QScalars: scalars, QPhases: ph, QLocks: locks, QFallback: fallback, QStopped: stopped},
		Clusters: []string{"a", "b", "d", "e"}}
}

func TestBuildSortsWorstFirst(t *testing.T) {
	f := Build(fixtureNow, fixture(), Options{ContextFor: map[string]string{"b": "prod-b"}})
	var got []string
	for _, r := range f.Rows {
		got = append(got, r.Cluster+":"+string(r.Status))
	}
	want := []string{"b:ghost", "f:blocked", "c:stale", "d:no-agent", "e:in-progress", hostile + ":in-progress", "a:done"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("rows\n got %q\nwant %q", got, want)
	}
	if f.Rows[0].Context != "prod-b" || f.Rows[1].Context != "f" {
		t.Errorf("contexts %q %q, want the mapping then the cluster's own name", f.Rows[0].Context, f.Rows[1].Context)
	}
	if c := ExitCode(f); c != ExitError {
		t.Errorf("exit %d with a cluster without agent, want %d (its locks cannot be read)", c, ExitError)
	}
}

func TestExitCodes(t *testing.T) {
	keep := func(clusters ...string) Answers {
		a := fixture()
		var cs []string
		for _, x := range a.Clusters {
			for _, c := range clusters {
				if x == c {
					cs = append(cs, x)
				}
			}
		}
		a.Clusters = cs
		for id, vec := range a.Vectors {
			var out pmodel.Vector
			for _, s := range vec {
				for _, c := range clusters {
					if string(s.Metric["cluster"]) == c {
						out = append(out, s)
					}
				}
			}
			a.Vectors[id] = out
		}
		return a
	}
	for _, tc := range []struct {
		name string
		a    Answers
		want int
	}{
		{"every cluster done", keep("a"), ExitOK},
		{"in progress is fine", keep("a", "e"), ExitOK},
		{"a ghost needs attention", keep("a", "b"), ExitAttention},
		{"a stale agent needs attention, never fine", keep("a", "c"), ExitAttention},
		{"a node down needs attention", keep("a", "f"), ExitAttention},
		{"no agent: the locks are unread", keep("a", "d"), ExitError},
		{"no cluster at all is unread, not fine", keep(), ExitError},
		{"a query failed", func() Answers {
			a := keep("a")
			a.Errors = map[string]error{QLocks: errString("502 bad gateway")}
			return a
		}(), ExitError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ExitCode(Build(fixtureNow, tc.a, Options{})); got != tc.want {
				t.Errorf("exit %d, want %d", got, tc.want)
			}
		})
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestRenderText(t *testing.T) {
	f := Build(fixtureNow, fixture(), Options{})
	f.Queries = 5
	var b bytes.Buffer
	Render(&b, f, "https://user:secret@prom.example/")
	out := b.String()
	if strings.ContainsAny(out, "\x1b\x07\u202e") || strings.Contains(out, "secret") {
		t.Errorf("hostile or secret bytes reach the terminal:\n%q", out)
	}
	golden.Check(t, "testdata/fleet.txt", out)
}

func TestJSONDocument(t *testing.T) {
	f := Build(fixtureNow, fixture(), Options{})
	b, err := JSON(f, "http://prom:9090")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Schema   string
		ExitCode int
		Clusters []struct {
			Cluster        string
			Status         string
			RebootRequired *int
			Locks          []Lock
			Unknown        []string
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.Schema != Schema || d.ExitCode != ExitError || len(d.Clusters) != 7 {
		t.Fatalf("document %s", b)
	}
	b0 := d.Clusters[0]
	if b0.Cluster != "b" || b0.Status != "ghost" || *b0.RebootRequired != 2 || b0.Locks[0].Holder != "worker-gone" || b0.Locks[0].Verdict != "ghost" {
		t.Errorf("row b: %+v", b0)
	}
	for _, r := range d.Clusters {
		if r.Cluster == "d" && (r.RebootRequired == nil || len(r.Unknown) == 0 || !strings.Contains(r.Unknown[0]+r.Unknown[len(r.Unknown)-1], "no rebootwatch-agent")) {
			t.Errorf("row d does not say what it cannot know: %+v", r)
		}
		if r.Cluster == "c" && r.Status != "stale" {
			t.Errorf("row c: %+v", r)
		}
	}
}

// TestBuildFailedQueriesAreUnknown (issue 33 §1): what a failed query
// feeds is unknown in every row, never "none": without the agents'
// figures no row says "no agent", without the fallback no row says
// kured_reboot_required "is not exported", without the locks no row says
// "no lock object"; the exit code is 1.
func TestBuildFailedQueriesAreUnknown(t *testing.T) {
	for _, tc := range []struct {
		id      string
		cluster string
		check   func(r Row) string
	}{
		{QScalars, "d", func(r Row) string {
			if r.Status == StatusNoAgent || strings.Contains(strings.Join(r.Unknown, " "), "no rebootwatch-agent") {
				return "claims no agent"
			}
			return ""
		}},
		{QFallback, "d", func(r Row) string {
			if strings.Contains(strings.Join(r.Unknown, " "), "is not exported") {
				return "claims kured_reboot_required is not exported"
			}
			return ""
		}},
		{QLocks, "a", func(r Row) string {
			if r.Status != StatusUnknown || LockCell(r, fixtureNow) != "unknown (query failed)" {
				return "locks not unknown"
			}
			return ""
		}},
		{QPhases, "a", func(r Row) string {
			if r.Status != StatusUnknown || NodesCell(r) != "unknown" {
				return "phases not unknown"
			}
			return ""
		}},
	} {
		t.Run(tc.id, func(t *testing.T) {
			a := fixture()
			delete(a.Vectors, tc.id)
			a.Errors = map[string]error{tc.id: errString("503 store unavailable")}
			f := Build(fixtureNow, a, Options{})
			found := false
			for _, r := range f.Rows {
				if r.Cluster != tc.cluster {
					continue
				}
				found = true
				if bad := tc.check(r); bad != "" {
					t.Errorf("row %s %s: %+v", r.Cluster, bad, r)
				}
				if len(r.Unread) == 0 {
					t.Errorf("row %s does not say what it could not read", r.Cluster)
				}
			}
			if !found {
				t.Fatalf("no row %s", tc.cluster)
			}
			if c := ExitCode(f); c != ExitError {
				t.Errorf("exit %d, want 1", c)
			}
		})
	}
}

// Two replicas that both say they lead, a judgement apart, cannot be
// added up: the row is unknown, never 4 nodes of 3.
func TestBuildTwoLeadersDisagree(t *testing.T) {
	a := fixture()
	a.Vectors[QScalars] = append(a.Vectors[QScalars], sample(3, "cluster", "e", tag, partNodes))
	a.Vectors[QPhases] = append(a.Vectors[QPhases], phases("e", "draining", 1)...)
	f := Build(fixtureNow, a, Options{})
	for _, r := range f.Rows {
		if r.Cluster == "e" && (r.Status != StatusUnknown || !strings.Contains(strings.Join(r.Unknown, " "), "disagree")) {
			t.Errorf("row e: %s %q", r.Status, r.Unknown)
		}
	}
}
