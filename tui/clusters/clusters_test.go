package clusters

import (
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/themes"
	"github.com/rebootwatch/rebootwatch/tui/pctx"
)

var t0 = time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)

func ready(at time.Time) []model.Condition {
	return []model.Condition{{Type: "Ready", Status: "True", LastTransition: at}}
}

// busy is a cluster mid-upgrade: n1 done, n2 holds the kured lock and
// drains, n3 pending; one volume degraded; prometheus in error.
func busy() *model.Cluster {
	c := model.NewCluster("prod", model.Options{TargetOS: "os 2"})
	c.Judge = lock.New(lock.Options{}).Judge
	for _, s := range []model.SourceName{model.SourceNodes, model.SourceKured, model.SourceLonghorn} {
		c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: s, Status: model.StatusOK, LastSync: t0}}, t0)
	}
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourcePrometheus, Status: model.StatusError, Message: "timeout"}}, t0)
	c.Apply(model.NodeUpserted{Node: model.Node{Name: "n1", BootID: "b1", OSImage: "os 2", Conditions: ready(t0.Add(-time.Hour))}}, t0)
	c.Apply(model.NodeUpserted{Node: model.Node{Name: "n2", BootID: "b2", OSImage: "os 1", Unschedulable: true, Conditions: ready(t0.Add(-time.Hour))}}, t0)
	c.Apply(model.NodeUpserted{Node: model.Node{Name: "n3", BootID: "b3", OSImage: "os 1", Conditions: ready(t0.Add(-time.Hour))}}, t0)
	c.Apply(model.RebootRequiredSet{Values: map[string]bool{"n1": false, "n2": true, "n3": true}}, t0)
	c.Apply(model.LockUpserted{Lock: model.LockObject{LockRef: model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured"},
		UID: "u", ResourceVersion: "1", Spec: &kured.Spec{Present: true,
			Value: `{"nodeID":"n2","metadata":{"unschedulable":false},"created":"2026-11-29T01:58:00Z","TTL":0}`}}}, t0)
	c.Apply(model.VolumeUpserted{Volume: model.Volume{Namespace: "longhorn-system", Name: "v1", Robustness: model.RobustnessHealthy}}, t0)
	c.Apply(model.VolumeUpserted{Volume: model.Volume{Namespace: "longhorn-system", Name: "v2", Robustness: model.RobustnessDegraded}}, t0)
	c.Recompute(t0)
	return c
}

func unreachable() *model.Cluster {
	c := model.NewCluster("lab", model.Options{})
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusError,
		Message: errors.New("list nodes: connection refused").Error()}}, t0)
	c.Recompute(t0)
	return c
}

func TestRowOf(t *testing.T) {
	r := RowOf(busy(), t0)
	if !r.Reachable || r.Nodes != 3 || r.Upgraded != 1 || r.Active != 2 || r.Holder != "n2" || r.Verdict != model.VerdictHeld {
		t.Fatalf("row %+v", r)
	}
	if r.Gate != GateDegraded || r.GateCount != 1 {
		t.Fatalf("gate %s %d", r.Gate, r.GateCount)
	}
	if r.SourcesOK != 3 || r.SourcesTotal != 4 || strings.Join(r.SourcesBad, ",") != "prometheus error" {
		t.Fatalf("sources %d/%d %v", r.SourcesOK, r.SourcesTotal, r.SourcesBad)
	}
	u := RowOf(unreachable(), t0)
	if u.Reachable || u.Exit != 1 || u.Why != "list nodes: connection refused" {
		t.Fatalf("unreachable row %+v", u)
	}
	// busy has a degraded volume and a failing Prometheus: attention (2),
	// like the unreachable one (1).
	if Attention([]Row{r, u}) != 2 {
		t.Fatalf("attention %d", Attention([]Row{r, u}))
	}
}

func TestRender(t *testing.T) {
	ctx := pctx.New(themes.Dark(), false, false, false)
	rows := []Row{RowOf(busy(), t0), RowOf(unreachable(), t0)}
	for _, w := range []int{120, 70} {
		lines := Render(ctx, rows, 1, w, 5)
		if len(lines) != 5 {
			t.Fatalf("w=%d: %d lines", w, len(lines))
		}
		for i, l := range lines {
			if got := ansi.StringWidth(l); got != w {
				t.Fatalf("w=%d line %d is %d cells: %q", w, i, got, l)
			}
		}
	}
	var plain []string
	for _, l := range Render(ctx, rows, -1, 120, 4) {
		plain = append(plain, strings.TrimRight(ansi.Strip(l), " "))
	}
	want := []string{
		"CLUSTER            PROGRESS             HOLDER           VERDICT   VOLUMES      SOURCES",
		"prod               1/3 █████░░░░░░░░░░░ n2               held      1 degraded   3/4 ok · prometheus error",
		"lab                unreachable: list nodes: connection refused",
		"",
	}
	if strings.Join(plain, "\n") != strings.Join(want, "\n") {
		t.Fatalf("render:\n%s\nwant:\n%s", strings.Join(plain, "\n"), strings.Join(want, "\n"))
	}
}

func TestListKeys(t *testing.T) {
	k := pctx.NewKeyMap(false)
	l := &List{}
	l.SetRows([]Row{{Context: "a"}, {Context: "b"}, {Context: "c"}})
	press := func(code rune, text string) tea.KeyPressMsg {
		return tea.KeyPressMsg(tea.Key{Code: code, Text: text})
	}
	l.Update(press('j', "j"), k)
	l.Update(tea.KeyPressMsg(tea.Key{Code: tea.KeyDown}), k)
	if l.Selected() != "c" {
		t.Fatalf("selected %q", l.Selected())
	}
	l.Update(tea.KeyPressMsg(tea.Key{Code: tea.KeyDown}), k)
	if l.Selected() != "c" {
		t.Fatalf("down past the end: %q", l.Selected())
	}
	if open := l.Update(tea.KeyPressMsg(tea.Key{Code: tea.KeyEnter}), k); open != "c" {
		t.Fatalf("enter opened %q", open)
	}
	l.SetRows([]Row{{Context: "c"}, {Context: "a"}})
	if l.Selected() != "c" || l.Sel != 0 {
		t.Fatalf("selection not kept across SetRows: %d %q", l.Sel, l.Selected())
	}
	l.Update(press('G', "G"), k)
	if l.Selected() != "a" {
		t.Fatalf("G: %q", l.Selected())
	}
}

func TestScreen(t *testing.T) {
	ctx := pctx.New(themes.Dark(), false, false, false)
	l := &List{}
	l.SetRows([]Row{RowOf(busy(), t0), RowOf(unreachable(), t0)})
	lines := Screen(ctx, l, 100, 8)
	if len(lines) != 8 {
		t.Fatalf("%d lines", len(lines))
	}
	for i, ln := range lines {
		if w := ansi.StringWidth(ln); w != 100 {
			t.Fatalf("line %d is %d cells", i, w)
		}
	}
	top := ansi.Strip(lines[0])
	if !strings.Contains(top, "Clusters") || !strings.Contains(top, "2 of 2 need attention") {
		t.Fatalf("top border %q", top)
	}
	if !strings.Contains(ansi.Strip(lines[6]), "enter open") {
		t.Fatalf("hint line %q", ansi.Strip(lines[6]))
	}
}

// TestConnecting: a cluster that has not reported on its node list yet is
// connecting, not unreachable, and not counted as needing attention.
func TestConnecting(t *testing.T) {
	c := model.NewCluster("fresh", model.Options{})
	c.Recompute(t0)
	r := RowOf(c, t0)
	if r.Reachable || !r.Connecting || r.Why != "waiting for the first node list" {
		t.Fatalf("row %+v", r)
	}
	if Attention([]Row{r}) != 0 {
		t.Fatal("a connecting cluster counted as needing attention")
	}
	ctx := pctx.New(themes.Dark(), false, false, false)
	got := ansi.Strip(strings.Join(Render(ctx, []Row{r, RowOf(unreachable(), t0)}, -1, 100, 3), "\n"))
	if !strings.Contains(got, "connecting: waiting for the first node list") || !strings.Contains(got, "unreachable: list nodes: connection refused") {
		t.Fatalf("render:\n%s", got)
	}
}
