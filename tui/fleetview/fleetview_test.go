package fleetview

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/rebootwatch/rebootwatch/internal/fleet"
	"github.com/rebootwatch/rebootwatch/internal/testenv/golden"
)

var now = time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)

func ip(n int) *int { return &n }

func fixture() fleet.Fleet {
	age := 12.0
	last := now.Add(-12 * time.Second)
	rows := []fleet.Row{
		{Cluster: "b", Context: "prod-b", Status: fleet.StatusGhost, Sources: []string{"agent"}, Phases: map[string]int{"idle": 2},
			Verdicts: map[string]int{"ghost": 1}, Locks: []fleet.Lock{{Kind: "fleetlock", Lock: "default/fleetlock-default", Holder: "gone\x1b[31m", Verdict: "ghost"}},
			LastJudgement: &last, DataAgeSeconds: &age},
		{Cluster: "c", Context: "c", Status: fleet.StatusStale, Sources: []string{"agent"}, LastJudgement: &last, DataAgeSeconds: &age},
		{Cluster: "d", Context: "d", Status: fleet.StatusNoAgent, Sources: []string{"kured"}, RebootRequired: ip(2), Nodes: ip(3),
			Unknown: []string{"lock holder and verdict: no rebootwatch-agent reports in this cluster"}},
		{Cluster: "a", Context: "a", Status: fleet.StatusDone, Sources: []string{"agent"}, Phases: map[string]int{"done": 3}, Verdicts: map[string]int{"free": 1},
			LastJudgement: &last, DataAgeSeconds: &age},
	}
	return fleet.Fleet{At: now, ClusterLabel: "cluster", Rows: rows}
}

func key(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	}
	return tea.KeyPressMsg{Code: rune(k[0]), Text: k}
}

func loaded(t *testing.T, o Options) *Model {
	t.Helper()
	f := fixture()
	o.Read = func(context.Context) fleet.Fleet { return f }
	m := New(o)
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 20})
	m.Update(m.Init()())
	return m
}

func TestFleetViewListsWorstFirstAndSanitises(t *testing.T) {
	m := loaded(t, Options{})
	s := m.Render()
	lines := strings.Split(s, "\n")
	if len(lines) != 20 {
		t.Fatalf("%d lines, want 20", len(lines))
	}
	if !strings.HasPrefix(lines[2], "▶ b ") || !strings.Contains(lines[2], "ghost") || !strings.Contains(lines[3], "stale") {
		t.Errorf("screen:\n%s", s)
	}
	if strings.Contains(s, "\x1b") {
		t.Errorf("raw escape on screen: %q", s)
	}
	if d := lines[4]; !strings.HasPrefix(d, "  d ") || !strings.Contains(d, "no-agent    unknown") {
		t.Errorf("the no-agent row does not say its lock is unknown:\n%s", s)
	}
}

func TestFleetViewFilterDetailEnter(t *testing.T) {
	var opened []string
	var details []string
	m := loaded(t, Options{
		Open:     func(c string) *exec.Cmd { opened = append(opened, c); return exec.Command("true") },
		Contexts: []string{"a", "prod-b"},
		Detail: func(_ context.Context, k fleet.Key) ([]fleet.DetailNode, error) {
			details = append(details, k.Cluster)
			return []fleet.DetailNode{{Node: "n2", Phase: "idle", Blocker: "lock-held"}, {Node: "n3", Phase: "idle"}}, nil
		},
	})
	for _, k := range []string{"/", "a"} {
		m.Update(key(k))
	}
	m.Update(key("enter"))
	if rows := m.Rows(); len(rows) != 1 || rows[0].Cluster != "a" {
		t.Fatalf("filter a: rows %+v", rows)
	}
	m.Update(key("esc"))
	if len(m.Rows()) != 4 {
		t.Fatalf("esc does not clear the filter")
	}
	// Detail of b: its lock and its nodes from the metrics.
	_, cmd := m.Update(key("d"))
	if cmd == nil {
		t.Fatal("detail reads nothing")
	}
	m.Update(cmd())
	s := m.Render()
	if len(details) != 1 || details[0] != "b" || !strings.Contains(s, "n2") || !strings.Contains(s, "lock-held") || !strings.Contains(s, "no node") {
		t.Errorf("detail of b (read %q):\n%s", details, s)
	}
	// Enter opens b's dashboard through the context mapping.
	_, cmd = m.Update(key("enter"))
	if cmd == nil || len(opened) != 1 || opened[0] != "prod-b" {
		t.Errorf("enter opened %q", opened)
	}
	m.Update(key("esc"))
	m.Update(key("down"))
	m.Update(key("down"))
	if _, cmd := m.Update(key("d")); cmd != nil {
		t.Errorf("detail of a cluster without the agent reads its nodes")
	}
	if s := m.Render(); !strings.Contains(s, "nodes: unknown without the agent") {
		t.Errorf("no-agent detail:\n%s", s)
	}
}

// TestFleetViewGolden is the 80x24 screen of the fixture (the source of
// screenshots/fleet.png).
func TestFleetViewGolden(t *testing.T) {
	m := loaded(t, Options{})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	golden.Check(t, "testdata/fleet-80x24.txt", m.Render()+"\n")
}

// TestFleetViewEnterOpensOnlyTheRowsContext (issue 33 §1): enter opens
// only a kubeconfig context named for the row exactly. A row without the
// cluster label (whose empty context would be the kubeconfig's current
// one, another cluster with release and reap offered), a label value with
// a comma (read as a list: two clusters) and a name the kubeconfig has no
// context of open nothing, and the view says why.
func TestFleetViewEnterOpensOnlyTheRowsContext(t *testing.T) {
	last := now.Add(-5 * time.Second)
	age := 5.0
	mk := func(cluster, job, inst string) fleet.Row {
		return fleet.Row{Cluster: cluster, Context: cluster, Job: job, Instance: inst, Unlabelled: cluster == "", Status: fleet.StatusOrphaned,
			Sources: []string{"agent"}, Phases: map[string]int{"done": 2}, Verdicts: map[string]int{"orphaned": 1},
			Locks:         []fleet.Lock{{Kind: "kured", Lock: "kube-system/kured", Holder: "n2", HolderNode: "n2", Verdict: "orphaned"}},
			LastJudgement: &last, DataAgeSeconds: &age}
	}
	f := fleet.Fleet{At: now, ClusterLabel: "cluster", Rows: []fleet.Row{
		mk("", "rebootwatch-agent", "10.0.0.5:8080"), mk("prod,staging", "", ""), mk("unmapped", "", ""), mk("prod", "", "")}}
	var opened []string
	m := New(Options{Read: func(context.Context) fleet.Fleet { return f }, Contexts: []string{"prod", "staging", "kind-current"},
		Open: func(c string) *exec.Cmd { opened = append(opened, c); return exec.Command("true") }})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 20})
	m.Update(m.Init()())
	for i, want := range []string{"no cluster label", "comma", "named exactly unmapped"} {
		_, cmd := m.Update(key("enter"))
		if cmd != nil || len(opened) != 0 {
			t.Fatalf("row %d: enter opened %q", i, opened)
		}
		if s := m.Render(); !strings.Contains(s, want) || !strings.Contains(s, "nothing opened") {
			t.Errorf("row %d: the view does not say %q:\n%s", i, want, s)
		}
		m.Update(key("down"))
	}
	if _, cmd := m.Update(key("enter")); cmd == nil || len(opened) != 1 || opened[0] != "prod" {
		t.Errorf("enter on prod opened %q, want exactly prod", opened)
	}
}

// NoContext (the fleet demo) is what enter says of a row whose context is
// not among Contexts; a row whose is opens.
func TestFleetViewNoContextSaysWhy(t *testing.T) {
	last := now.Add(-5 * time.Second)
	age := 5.0
	mk := func(cluster string) fleet.Row {
		return fleet.Row{Cluster: cluster, Context: cluster, Status: fleet.StatusDone, Sources: []string{"agent"},
			Phases: map[string]int{"done": 2}, LastJudgement: &last, DataAgeSeconds: &age}
	}
	f := fleet.Fleet{At: now, ClusterLabel: "cluster", Rows: []fleet.Row{mk("done"), mk("kured")}}
	var opened []string
	m := New(Options{Read: func(context.Context) fleet.Fleet { return f }, Contexts: []string{"kured"}, NoContext: "plays no scenario",
		Open: func(c string) *exec.Cmd { opened = append(opened, c); return exec.Command("true") }})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 20})
	m.Update(m.Init()())
	if _, cmd := m.Update(key("enter")); cmd != nil || len(opened) != 0 {
		t.Fatalf("enter on done opened %q", opened)
	}
	if s := m.Render(); !strings.Contains(s, "nothing opened: plays no scenario") || strings.Contains(s, "kubeconfig") {
		t.Errorf("the view does not say why:\n%s", s)
	}
	m.Update(key("down"))
	if _, cmd := m.Update(key("enter")); cmd == nil || len(opened) != 1 || opened[0] != "kured" {
		t.Errorf("enter on kured opened %q", opened)
	}
}

// A partial answer (the endpoint's warnings) is said above the rows.
func TestFleetViewShowsPartialAnswer(t *testing.T) {
	f := fixture()
	f.Warnings = []string{"locks: store 10.0.0.7:10901 unavailable"}
	m := New(Options{Read: func(context.Context) fleet.Fleet { return f }})
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 20})
	m.Update(m.Init()())
	if s := m.Render(); !strings.Contains(s, "partial answer: locks: store 10.0.0.7:10901 unavailable") {
		t.Errorf("the warning is not shown:\n%s", s)
	}
}

// An unreachable endpoint's cause is shown whole, wrapped, never cut at the
// screen's edge (issue 34 §3).
func TestFleetViewShowsTheErrorsCauseWhole(t *testing.T) {
	f := fixture()
	f.Rows = nil
	f.Err = errors.New("could not read the endpoint: clusters, locks, phases, scalars: dial tcp 127.0.0.1:1: connect: connection refused")
	m := New(Options{Read: func(context.Context) fleet.Fleet { return f }})
	m.Update(tea.WindowSizeMsg{Width: 60, Height: 20})
	m.Update(m.Init()())
	s := m.Render()
	if flat := strings.Join(strings.Fields(s), " "); !strings.Contains(flat, "error: "+f.Err.Error()) {
		t.Errorf("the error is not shown whole:\n%s", s)
	}
}
