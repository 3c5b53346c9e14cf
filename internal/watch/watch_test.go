package watch

import (
	"encoding/json"
	"fmt"
	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	goldenfile "github.com/rebootwatch/rebootwatch/internal/testenv/golden"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/explain"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/themes"
)

// golden compares got with testdata/name (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got)
}

var t0 = time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)

var kuredRef = model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured"}

// fleet is a hand-built cluster the tests drive step by step.
type fleet struct {
	t     *testing.T
	c     *model.Cluster
	w     *Watcher
	now   time.Time
	nodes map[string]*model.Node
	lines []Line
	last  Outcome
}

func newFleet(t *testing.T, o Options, names ...string) *fleet {
	f := &fleet{t: t, c: model.NewCluster("lab", model.Options{TargetOS: "os 2"}), w: New(o), now: t0, nodes: map[string]*model.Node{}}
	f.c.LockSources = []model.SourceName{model.SourceKured, model.SourceFleetlock}
	f.c.Judge = lock.New(lock.Options{OrphanGrace: 2 * time.Minute}).Judge
	f.c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusOK, LastSync: t0}}, t0)
	f.c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceKured, Status: model.StatusOK, LastSync: t0}}, t0)
	f.c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceFleetlock, Status: model.StatusNotInstalled}}, t0)
	req := map[string]bool{}
	for i, n := range names {
		node := &model.Node{Name: n, BootID: n + "-1", MachineID: fmt.Sprintf("%032x", i+1), OSImage: "os 1", KernelVersion: "k1",
			Conditions: []model.Condition{{Type: "Ready", Status: "True", LastTransition: t0.Add(-24 * time.Hour)}}}
		f.nodes[n] = node
		f.c.Apply(model.NodeUpserted{Node: *node}, t0)
		req[n] = true
	}
	f.c.Apply(model.RebootRequiredSet{Values: req}, t0)
	f.c.Apply(model.LockUpserted{Lock: model.LockObject{LockRef: kuredRef, UID: "u1", ResourceVersion: "1", Spec: &kured.Spec{}}}, t0)
	return f
}

// step advances the clock by d, applies evs, recomputes and runs the watcher.
func (f *fleet) step(d time.Duration, evs ...model.Event) []Line {
	f.now = f.now.Add(d)
	for _, e := range evs {
		f.c.Apply(e, f.now)
	}
	f.c.Recompute(f.now)
	ls, oc := f.w.Step(f.c, f.now)
	f.lines = append(f.lines, ls...)
	f.last = oc
	return ls
}

func (f *fleet) node(name string, mut func(n *model.Node)) model.Event {
	n := f.nodes[name]
	mut(n)
	cp := *n
	cp.Conditions = append([]model.Condition(nil), n.Conditions...)
	return model.NodeUpserted{Node: cp}
}

func (f *fleet) take(name string) model.Event {
	v := fmt.Sprintf(`{"nodeID":%q,"metadata":{"unschedulable":false},"created":%q,"TTL":0}`, name, f.now.Format(time.RFC3339))
	return model.LockUpserted{Lock: model.LockObject{LockRef: kuredRef, UID: "u1", ResourceVersion: "2", Spec: &kured.Spec{Present: true, Value: v}}}
}

func (f *fleet) release() model.Event {
	return model.LockUpserted{Lock: model.LockObject{LockRef: kuredRef, UID: "u1", ResourceVersion: "3", Spec: &kured.Spec{}}}
}

func (f *fleet) ready(name string, ok bool) model.Event {
	return f.node(name, func(n *model.Node) {
		st := "True"
		if !ok {
			st = "Unknown"
		}
		n.Conditions = []model.Condition{{Type: "Ready", Status: st, LastTransition: f.now}}
	})
}

// cycle plays one node's full reboot, releasing the lock unless keep.
func (f *fleet) cycle(name string, keep bool) {
	f.step(time.Minute, f.take(name))
	f.step(10*time.Second, f.node(name, func(n *model.Node) { n.Unschedulable = true }))
	f.step(time.Minute, f.ready(name, false))
	f.step(time.Minute, f.node(name, func(n *model.Node) {
		n.BootID, n.OSImage, n.KernelVersion = name+"-2", "os 2", "k2"
		n.Conditions = []model.Condition{{Type: "Ready", Status: "True", LastTransition: f.now}}
	}))
	rr := map[string]bool{}
	for n := range f.nodes {
		rr[n] = f.nodes[n].OSImage != "os 2"
	}
	f.step(10*time.Second, f.node(name, func(n *model.Node) { n.Unschedulable = false }), model.RebootRequiredSet{Values: rr})
	if !keep {
		f.step(5*time.Second, f.release())
	}
}

func texts(ls []Line) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.Text(Styles{}) + "\n")
	}
	return b.String()
}

func TestUntilDone(t *testing.T) {
	f := newFleet(t, Options{UntilDone: true, SummaryEvery: 2 * time.Minute}, "n1", "n2")
	f.step(0)
	if f.last.Done {
		t.Fatal("done before anything rebooted: both nodes need a reboot")
	}
	f.cycle("n1", false)
	if f.last.Done {
		t.Fatalf("done after one node of two:\n%s", texts(f.lines))
	}
	f.cycle("n2", false)
	if !f.last.Done {
		t.Fatalf("not done after both nodes rebooted and released:\n%s", texts(f.lines))
	}
	if want := "done: 2 node(s) rebooted and done, every lock is free"; f.last.Reason != want {
		t.Fatalf("reason %q, want %q", f.last.Reason, want)
	}
	if got := strings.Join(f.w.Needed(), ","); got != "n1,n2" {
		t.Fatalf("needed %s", got)
	}
	last := f.lines[len(f.lines)-1]
	if last.Kind != KindDone {
		t.Fatalf("last line %+v", last)
	}
	if ls := f.step(time.Minute); len(ls) != 0 {
		t.Fatalf("lines after done: %v", ls)
	}
	golden(t, "until-done.golden", texts(f.lines))
}

func TestUntilDoneNeedsFreeLocks(t *testing.T) {
	f := newFleet(t, Options{UntilDone: true}, "n1")
	f.step(0)
	f.cycle("n1", true) // rebooted, never released
	f.step(time.Minute)
	if f.last.Done {
		t.Fatalf("done while n1 still holds the lock:\n%s", texts(f.lines))
	}
	f.step(time.Minute, f.release())
	if !f.last.Done {
		t.Fatalf("not done after the release:\n%s", texts(f.lines))
	}
}

func TestNothingToDoIsDone(t *testing.T) {
	f := newFleet(t, Options{UntilDone: true})
	f.step(0)
	if !f.last.Done || f.last.Reason != "done: no node needs a reboot and every lock is free" {
		t.Fatalf("outcome %+v", f.last)
	}
}

func TestUnreadableIsNeverDone(t *testing.T) {
	c := model.NewCluster("lab", model.Options{})
	c.LockSources = []model.SourceName{model.SourceKured, model.SourceFleetlock}
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusError, Message: "connection refused"}}, t0)
	c.Recompute(t0)
	w := New(Options{UntilDone: true})
	if _, oc := w.Step(c, t0); oc.Done {
		t.Fatal("a cluster that could not be read is done")
	}
}

// Never done on what was not read (issue 22 §4): with the DaemonSets and
// Leases forbidden, "no lock held" and "every lock is free" are unknown;
// the watch says so (start line, a line naming what it cannot read) and
// is not done, until the locks are read.
func TestUntilDoneNeverWhileLocksUnread(t *testing.T) {
	f := newFleet(t, Options{UntilDone: true}, "n1")
	f.c.Apply(model.LockDeleted{Ref: kuredRef}, t0)
	f.c.Apply(model.RebootRequiredSet{Values: map[string]bool{"n1": false}}, t0)
	f.c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceKured, Status: model.StatusForbidden,
		Message: "cannot list daemonsets.apps (RBAC)"}}, t0)
	f.c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceFleetlock, Status: model.StatusForbidden,
		Message: "cannot list leases.coordination.k8s.io (RBAC)"}}, t0)
	f.step(0)
	f.step(time.Minute)
	out := texts(f.lines)
	if f.last.Done || strings.Contains(out, "no lock held") || strings.Contains(out, "every lock is free") {
		t.Fatalf("claims what it did not read:\n%s", out)
	}
	want := "cannot tell whether the window is done: locks unknown: kured forbidden (cannot list daemonsets.apps (RBAC)), fleetlock forbidden (cannot list leases.coordination.k8s.io (RBAC))"
	if !strings.Contains(out, "watching lab: 0/1 upgraded · locks unknown: kured forbidden (cannot list daemonsets.apps (RBAC)), fleetlock forbidden") ||
		strings.Count(out, want) != 1 {
		t.Fatalf("does not say (once) what it cannot read:\n%s", out)
	}
	p := ProgressOf(f.c, f.now)
	if why, ok := model.UnreadReason(p.Unread, "locks"); !ok || !strings.Contains(why, "kured forbidden") {
		t.Fatalf("progress.unread %+v", p.Unread)
	}
	f.step(time.Minute, model.SourceChanged{Health: model.SourceHealth{Name: model.SourceKured, Status: model.StatusNotInstalled}},
		model.SourceChanged{Health: model.SourceHealth{Name: model.SourceFleetlock, Status: model.StatusNotInstalled}})
	if !f.last.Done || f.last.Reason != "done: no node needs a reboot and every lock is free" {
		t.Fatalf("not done once the locks were read:\n%s", texts(f.lines))
	}
}

// With kured and no Prometheus, whether a node needs a reboot is unknown:
// "no node needs a reboot" would be a guess, so the watch is not done.
func TestUntilDoneNeverWhileRebootRequiredUnknown(t *testing.T) {
	f := newFleet(t, Options{UntilDone: true}, "n1")
	f.c.Apply(model.RebootRequiredSet{Values: map[string]bool{}}, t0)
	f.step(0)
	f.step(time.Minute)
	out := texts(f.lines)
	if f.last.Done || !strings.Contains(out, "cannot tell whether the window is done: whether 1 node(s) need a reboot is unknown (n1): Prometheus is not read") {
		t.Fatalf("done (or silent) with reboot-required unknown:\n%s", out)
	}
	f.step(time.Minute, model.SourceChanged{Health: model.SourceHealth{Name: model.SourcePrometheus, Status: model.StatusOK}},
		model.RebootRequiredSet{Values: map[string]bool{"n1": false}})
	if !f.last.Done {
		t.Fatalf("not done once reboot-required was read:\n%s", texts(f.lines))
	}
}

func TestStallWhenNothingProgresses(t *testing.T) {
	f := newFleet(t, Options{StallAfter: 5 * time.Minute}, "n1", "n2")
	f.step(0)
	f.step(time.Minute, f.take("n1"))
	for i := 0; i < 4; i++ {
		f.step(time.Minute)
		if f.last.Stalled {
			t.Fatalf("stalled after %d idle minutes", i+1)
		}
	}
	f.step(time.Minute)
	if !f.last.Stalled {
		t.Fatalf("not stalled after 5 idle minutes:\n%s", texts(f.lines))
	}
	want := "nothing progressed for 5m (last progress at 2026-11-29T02:01:00Z: n1 pending → draining)"
	if f.last.Reason != want {
		t.Fatalf("reason %q, want %q", f.last.Reason, want)
	}
	if l := f.lines[len(f.lines)-1]; l.Kind != KindStall || l.Severity != model.SeverityCritical || !f.last.Attention {
		t.Fatalf("last line %+v, outcome %+v", l, f.last)
	}
}

func TestNoStallWithoutWork(t *testing.T) {
	f := newFleet(t, Options{StallAfter: 5 * time.Minute}, "n1")
	f.step(0, model.RebootRequiredSet{Values: map[string]bool{"n1": false}})
	for i := 0; i < 20; i++ {
		f.step(time.Minute)
		if f.last.Stalled {
			t.Fatalf("stalled with nothing to do: %s", f.last.Reason)
		}
	}
}

func TestStallWhenLockTurnsOrphaned(t *testing.T) {
	f := newFleet(t, Options{StallAfter: time.Hour}, "n1", "n2")
	f.step(0)
	f.cycle("n1", true)
	for i := 0; i < 5 && !f.last.Stalled; i++ {
		f.step(time.Minute)
	}
	if !f.last.Stalled {
		t.Fatalf("not stalled after the holder finished and kept the lock past the grace:\n%s", texts(f.lines))
	}
	if !strings.HasPrefix(f.last.Reason, "a lock needs attention: kured:kube-system/kured held by n1 judged orphaned") {
		t.Fatalf("reason %q", f.last.Reason)
	}
	var judged *Line
	for i, l := range f.lines {
		if l.Kind == "lock" && strings.Contains(l.Message, "judged orphaned") {
			judged = &f.lines[i]
		}
	}
	if judged == nil || judged.Severity != model.SeverityCritical {
		t.Fatalf("the judgement line is missing or not critical: %+v", judged)
	}
}

func TestGhostAtStartIsReportedNotStalled(t *testing.T) {
	f := newFleet(t, Options{StallAfter: 5 * time.Minute}, "n1")
	ghost := model.LockObject{LockRef: model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-default"},
		UID: "u2", ResourceVersion: "9", Spec: &fleetlock.Spec{Holder: "0123456789abcdef0123456789abcdef", AcquireTime: t0.Add(-48 * time.Hour)}}
	f.c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceFleetlock, Status: model.StatusOK, LastSync: t0}}, t0)
	ls := f.step(0, model.LockUpserted{Lock: ghost})
	if f.last.Stalled {
		t.Fatalf("a ghost present at start stalled at once: %s", f.last.Reason)
	}
	var found bool
	for _, l := range ls {
		if l.Kind == "lock" && strings.HasSuffix(l.Message, "(ghost)") && !strings.Contains(l.Message, "judged") {
			found = l.Severity == model.SeverityCritical
		}
	}
	if !found || !f.last.Attention {
		t.Fatalf("the ghost is not reported as critical:\n%s", texts(ls))
	}
}

func TestJSONLinesParse(t *testing.T) {
	f := newFleet(t, Options{UntilDone: true, SummaryEvery: time.Minute, Prefix: true}, "n1")
	f.step(0)
	f.cycle("n1", false)
	if len(f.lines) < 5 {
		t.Fatalf("too few lines: %d", len(f.lines))
	}
	var sawSummary bool
	for _, l := range f.lines {
		b, err := l.JSON()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "\n") {
			t.Fatalf("a JSON line spans lines: %s", b)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		for _, k := range []string{"time", "context", "kind", "severity", "message"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("%s lacks %q", b, k)
			}
		}
		if _, err := time.Parse(time.RFC3339, m["time"].(string)); err != nil {
			t.Fatalf("time: %v", err)
		}
		if m["context"] != "lab" {
			t.Fatalf("context %v", m["context"])
		}
		if m["kind"] == "summary" {
			sawSummary = true
			p := m["progress"].(map[string]any)
			if p["nodes"].(float64) != 1 {
				t.Fatalf("progress %v", p)
			}
		}
	}
	if !sawSummary {
		t.Fatal("no summary line")
	}
	if got := f.lines[1].Text(Styles{}); !strings.HasPrefix(got, "2026-11-29T02:01:00Z [lab]   lock") {
		t.Fatalf("prefixed text line %q", got)
	}
}

func TestSeverity(t *testing.T) {
	ph := func(to model.Phase) model.TimelineEntry {
		return model.TimelineEntry{Kind: model.KindPhase, To: string(to)}
	}
	lk := func(change string, v model.Verdict) model.TimelineEntry {
		return model.TimelineEntry{Kind: model.KindLock, Change: change, Verdict: v}
	}
	vol := func(r model.Robustness) model.TimelineEntry {
		return model.TimelineEntry{Kind: model.KindVolume, To: string(r)}
	}
	src := func(s model.SourceStatus) model.TimelineEntry {
		return model.TimelineEntry{Kind: model.KindSource, To: string(s)}
	}
	act := func(outcome string) model.TimelineEntry {
		return model.TimelineEntry{Kind: model.KindAction, Change: outcome}
	}
	for _, c := range []struct {
		name string
		e    model.TimelineEntry
		want model.Severity
	}{
		{"→ down", ph(model.PhaseDown), model.SeverityCritical},
		{"→ draining", ph(model.PhaseDraining), model.SeverityInfo},
		{"→ unknown", ph(model.PhaseUnknown), model.SeverityWarning},
		{"taken, held", lk(model.ChangeTaken, model.VerdictHeld), model.SeverityInfo},
		{"taken, ghost", lk(model.ChangeTaken, model.VerdictGhost), model.SeverityCritical},
		{"judged orphaned", lk(model.ChangeJudged, model.VerdictOrphaned), model.SeverityCritical},
		{"first seen ghost", lk(model.ChangeHeld, model.VerdictGhost), model.SeverityCritical},
		{"first seen held", lk(model.ChangeHeld, model.VerdictHeld), model.SeverityInfo},
		{"judged unknown", lk(model.ChangeJudged, model.VerdictUnknown), model.SeverityWarning},
		{"released", lk(model.ChangeReleased, ""), model.SeverityInfo},
		{"volume degraded", vol(model.RobustnessDegraded), model.SeverityWarning},
		{"volume faulted", vol(model.RobustnessFaulted), model.SeverityCritical},
		{"volume healthy", vol(model.RobustnessHealthy), model.SeverityInfo},
		{"source error", src(model.StatusError), model.SeverityWarning},
		{"source ok", src(model.StatusOK), model.SeverityInfo},
		{"action done", act("done"), model.SeverityInfo},
		{"action conflict", act("conflict"), model.SeverityWarning},
	} {
		if got := severity(c.e); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestColourOnlyWhenAsked(t *testing.T) {
	l := Line{Time: t0, Context: "lab", Kind: "lock", Severity: model.SeverityCritical, Message: "x judged ghost: gone"}
	if plain := l.Text(NewStyles(false)); strings.Contains(plain, "\x1b[") {
		t.Fatalf("plain line has escapes: %q", plain)
	}
	if col := l.Text(NewStyles(true)); !strings.Contains(col, "\x1b[") {
		t.Fatalf("coloured line has no escapes: %q", col)
	}
	// The colours are the theme's: critical in the dark theme's, or light's.
	if col := l.Text(NewStyles(true)); !strings.Contains(col, "38;2;224;108;117") {
		t.Fatalf("critical line not in the dark theme's critical colour: %q", col)
	}
	if col := l.Text(ThemeStyles(themes.Light())); !strings.Contains(col, "38;2;207;34;46") {
		t.Fatalf("critical line not in the light theme's critical colour: %q", col)
	}
}

// Entries of one instant read the same on every run: source, node, volume,
// then lock/phase/action in the model's order; later instants stay later.
func TestOrderedWithinAnInstant(t *testing.T) {
	t1 := t0.Add(time.Second)
	in := []model.TimelineEntry{
		{Seq: 1, Time: t0, Kind: model.KindVolume, Message: "volume v1 healthy → degraded"},
		{Seq: 2, Time: t0, Kind: model.KindSource, Message: "source longhorn ok → error"},
		{Seq: 3, Time: t0, Kind: model.KindNode, Message: "n1 booted"},
		{Seq: 4, Time: t0, Kind: model.KindSource, Message: "source kured ok → stale"},
		{Seq: 5, Time: t0, Kind: model.KindLock, Message: "released"},
		{Seq: 6, Time: t0, Kind: model.KindPhase, Message: "n1 recovering → done"},
		{Seq: 7, Time: t1, Kind: model.KindSource, Message: "source nodes ok → error"},
	}
	var got []uint64
	for _, e := range ordered(in) {
		got = append(got, e.Seq)
	}
	if fmt.Sprint(got) != "[4 2 3 1 5 6 7]" {
		t.Fatalf("order %v", got)
	}
	if in[0].Seq != 1 {
		t.Fatal("ordered changed its input")
	}
}

// TestStallNamesTheBlocker: --stall-after's reason names what stops the
// fleet (the blockers step's fleet blocker), and watch said so when it
// appeared.
func TestStallNamesTheBlocker(t *testing.T) {
	f := newFleet(t, Options{StallAfter: 5 * time.Minute}, "n1", "n2")
	eng := lock.New(lock.Options{OrphanGrace: 2 * time.Minute})
	f.c.Judge, f.c.Explain = eng.Judge, explain.For(explain.Options{DrainBound: 3 * time.Minute})
	f.step(0)
	f.step(time.Minute, f.take("n1"), f.node("n1", func(n *model.Node) { n.Unschedulable = true }))
	for i := 0; i < 5; i++ {
		f.step(time.Minute)
	}
	if !f.last.Stalled {
		t.Fatalf("not stalled:\n%s", texts(f.lines))
	}
	want := "nothing progressed for 5m (last progress at 2026-11-29T02:01:00Z: n1 pending → draining); blocked by drain: n1 has been draining for 5m; cannot tell why the drain is slow"
	if !strings.HasPrefix(f.last.Reason, want) {
		t.Fatalf("reason %q, want it to start %q", f.last.Reason, want)
	}
	var appeared bool
	for _, l := range f.lines {
		if l.Kind == KindBlocker && l.Node == "n1" && l.Blocker == model.BlockerDrain && strings.HasPrefix(l.Message, "blocked: n1 has been draining for 4m") {
			appeared = true
		}
		if l.Kind == KindBlocker && l.Node == "n2" {
			t.Fatalf("n2 only queues behind n1's normal cycle, no blocker line: %+v", l)
		}
	}
	if !appeared {
		t.Fatalf("no line when n1's drain blocker appeared:\n%s", texts(f.lines))
	}
}

// TestBlockerLines: a line when a stalling blocker appears and when it
// clears, one per node up to three, one for the group above; queueing
// makes no line; JSON carries the kind and the nodes.
func TestBlockerLines(t *testing.T) {
	names := []string{"n1", "n2", "n3", "n4", "n5"}
	f := newFleet(t, Options{}, names...)
	blocked := map[string]bool{}
	queued := false
	f.c.Explain = func(c *model.Cluster, now time.Time) model.Blockers {
		out := model.Blockers{Nodes: map[string][]model.Blocker{}}
		for _, n := range names {
			if blocked[n] {
				out.Nodes[n] = []model.Blocker{{Kind: model.BlockerWindow, Node: n, Stalls: true,
					Reason: n + " waits for kured's reboot window (su 22:00–04:00 UTC), which opens Sun 22:00 UTC, in " + model.HumanDuration(time.Hour-now.Sub(t0))}}
			} else if queued {
				// Queued behind a normal cycle: what follows (Longhorn
				// degraded by that drain) is no line either.
				out.Nodes[n] = []model.Blocker{{Kind: model.BlockerLock, Node: n, Reason: n + " waits for the kured lock, held by n0, held"},
					{Kind: model.BlockerLonghorn, Node: n, Stalls: true, Reason: "Longhorn is not ready"}}
			}
		}
		return out
	}
	kindLines := func(ls []Line) []Line {
		var out []Line
		for _, l := range ls {
			if l.Kind == KindBlocker {
				out = append(out, l)
			}
		}
		return out
	}
	blocked["n1"] = true
	ls := kindLines(f.step(0))
	if len(ls) != 1 || ls[0].Node != "n1" || ls[0].Severity != model.SeverityWarning || ls[0].Blocker != model.BlockerWindow ||
		ls[0].Message != "blocked: n1 waits for kured's reboot window (su 22:00–04:00 UTC), which opens Sun 22:00 UTC, in 1h" {
		t.Fatalf("first step: %+v", ls)
	}
	if ls := kindLines(f.step(time.Minute)); len(ls) != 0 {
		t.Fatalf("the same blocker (its reason's time changed) makes no new line: %+v", ls)
	}
	for _, n := range names {
		blocked[n] = true
	}
	ls = kindLines(f.step(time.Minute))
	if len(ls) != 1 || ls[0].Node != "" || len(ls[0].Nodes) != 4 ||
		!strings.HasPrefix(ls[0].Message, "reboot-window blocks 4 nodes (n2, n3, n4 and 1 more): n2 waits for kured's reboot window") {
		t.Fatalf("four nodes gaining it: %+v", ls)
	}
	b, err := ls[0].JSON()
	if err != nil || !strings.Contains(string(b), `"kind":"blocker"`) || !strings.Contains(string(b), `"blocker":"reboot-window"`) ||
		!strings.Contains(string(b), `"nodes":["n2","n3","n4","n5"]`) {
		t.Fatalf("json %s %v", b, err)
	}
	for _, n := range []string{"n1", "n2"} {
		blocked[n] = false
	}
	queued = true
	ls = kindLines(f.step(time.Minute))
	if len(ls) != 2 || ls[0].Message != "cleared: n1 no longer waits for reboot-window" || ls[1].Node != "n2" || ls[0].Severity != model.SeverityInfo {
		t.Fatalf("two cleared, queueing silent: %+v", ls)
	}
	for _, n := range names {
		blocked[n] = false
	}
	ls = kindLines(f.step(time.Minute))
	if len(ls) != 3 {
		t.Fatalf("three cleared: %+v", ls)
	}
	if txt := ls[0].Text(Styles{}); !strings.Contains(txt, " blocker cleared: n3 no longer waits for reboot-window") {
		t.Fatalf("text %q", txt)
	}
}

// TestBlockerLinesFleetWide: a fleet-wide blocker (no node: a fleetlock
// Lease nobody can take) of the same kind and lock as some nodes' is not
// counted as a node: the nodes are counted and named, and the fleet-wide
// blocker gets a line of its own.
func TestBlockerLinesFleetWide(t *testing.T) {
	names := []string{"n1", "n2", "n3", "n4", "n5"}
	f := newFleet(t, Options{}, names...)
	ref := model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-default"}
	blocked := []string{"n2", "n3", "n4"}
	f.c.Explain = func(c *model.Cluster, now time.Time) model.Blockers {
		out := model.Blockers{Nodes: map[string][]model.Blocker{}}
		for _, n := range blocked {
			out.Nodes[n] = []model.Blocker{{Kind: model.BlockerLock, Node: n, Stalls: true, Lock: &ref, Reason: n + " waits for the lock, held by ghost"}}
		}
		out.General = []model.Blocker{{Kind: model.BlockerLock, Stalls: true, Lock: &ref, Reason: "no node can take the fleetlock lock: held by ghost"}}
		return out
	}
	var ls []Line
	for _, l := range f.step(0) {
		if l.Kind == KindBlocker {
			ls = append(ls, l)
		}
	}
	var msgs []string
	for _, l := range ls {
		msgs = append(msgs, l.Message)
		if strings.Contains(l.Message, "4 nodes") {
			t.Errorf("the fleet-wide blocker counted as a node: %q", l.Message)
		}
	}
	want := []string{
		"blocked (fleet-wide): no node can take the fleetlock lock: held by ghost",
		"blocked: n2 waits for the lock, held by ghost",
		"blocked: n3 waits for the lock, held by ghost",
		"blocked: n4 waits for the lock, held by ghost",
	}
	if strings.Join(msgs, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
	if ls[0].Node != "" || len(ls[0].Nodes) != 0 {
		t.Fatalf("fleet-wide line names a node: %+v", ls[0])
	}
	// Four nodes and the fleet: one line for the four, one for the fleet.
	blocked = []string{"n1", "n2", "n3", "n4", "n5"}
	f.w = New(Options{})
	f.c.Explain = func(c *model.Cluster, now time.Time) model.Blockers {
		out := model.Blockers{Nodes: map[string][]model.Blocker{}}
		for _, n := range blocked {
			out.Nodes[n] = []model.Blocker{{Kind: model.BlockerLock, Node: n, Stalls: true, Lock: &ref, Reason: n + " waits for the lock, held by ghost"}}
		}
		out.General = []model.Blocker{{Kind: model.BlockerLock, Stalls: true, Lock: &ref, Reason: "no node can take the fleetlock lock: held by ghost"}}
		return out
	}
	msgs = nil
	for _, l := range f.step(time.Minute) {
		if l.Kind == KindBlocker {
			msgs = append(msgs, l.Message)
		}
	}
	if len(msgs) != 2 || msgs[0] != "blocked (fleet-wide): no node can take the fleetlock lock: held by ghost" ||
		!strings.HasPrefix(msgs[1], "lock-held blocks 5 nodes (n1, n2, n3 and 2 more): ") {
		t.Fatalf("five nodes and the fleet: %q", msgs)
	}
	// Cleared: the fleet-wide one says so apart from the nodes.
	blocked = nil
	f.c.Explain = func(c *model.Cluster, now time.Time) model.Blockers { return model.Blockers{} }
	msgs = nil
	for _, l := range f.step(time.Minute) {
		if l.Kind == KindBlocker {
			msgs = append(msgs, l.Message)
		}
	}
	if len(msgs) != 2 || msgs[0] != "cleared: lock-held (fleet-wide) (fleetlock:default/fleetlock-default)" ||
		!strings.HasPrefix(msgs[1], "lock-held cleared on 5 nodes (n1, n2, n3 and 2 more)") {
		t.Fatalf("cleared: %q", msgs)
	}
}

// TestBlockerLinesMutedDrain: a drain refused by a PodDisruptionBudget
// within its bound (a blocker that does not stall yet) is said at once, as
// an info line; when it turns into a stall, the warning follows, and the
// muted one clears silently (issue 23 §4).
func TestBlockerLinesMutedDrain(t *testing.T) {
	f := newFleet(t, Options{}, "n1", "n2")
	stalls := false
	f.c.Explain = func(c *model.Cluster, now time.Time) model.Blockers {
		b := model.Blocker{Kind: model.BlockerDrain, Node: "n1", Stalls: stalls, Reason: "n1 is draining (3m): PodDisruptionBudget shop/web allows 0 disruptions"}
		if stalls {
			b.Reason = "n1 has been draining for 11m: PodDisruptionBudget shop/web allows 0 disruptions"
		}
		return model.Blockers{Nodes: map[string][]model.Blocker{"n1": {b}}}
	}
	lines := func(ls []Line) []string {
		var out []string
		for _, l := range ls {
			if l.Kind == KindBlocker {
				out = append(out, string(l.Severity)+" "+l.Node+" "+l.Message)
			}
		}
		return out
	}
	if got := lines(f.step(0)); len(got) != 1 || got[0] != "info n1 waits: n1 is draining (3m): PodDisruptionBudget shop/web allows 0 disruptions" {
		t.Fatalf("muted drain at once: %q", got)
	}
	if got := lines(f.step(time.Minute)); len(got) != 0 {
		t.Fatalf("the same muted drain again: %q", got)
	}
	stalls = true
	if got := lines(f.step(8 * time.Minute)); len(got) != 1 || got[0] != "warning n1 blocked: n1 has been draining for 11m: PodDisruptionBudget shop/web allows 0 disruptions" {
		t.Fatalf("turned into a stall: %q", got)
	}
}
