package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/rebootwatch/rebootwatch/internal/sanitize/sanitizetest"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/tui/pctx"
)

// hostileFixture is the fixture with s written wherever a cluster controls
// text: the fleetlock Lease's holder (a ghost), w-05's OS image and kernel,
// a volume's name and Prometheus' error message.
func hostileFixture(s string) *fixture {
	f := newFixture()
	c := f.c
	lease := model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-default"}
	c.Apply(model.LockUpserted{Lock: model.LockObject{LockRef: lease, UID: "lease-uid", ResourceVersion: "8",
		Spec: &fixSpec{kind: model.LockFleetlock, holder: s, at: t0.Add(-19 * 24 * time.Hour)}}}, t0)
	nd, _ := c.Node("w-05")
	n := *nd
	n.OSImage, n.KernelVersion = s, s
	c.Apply(model.NodeUpserted{Node: n}, t0)
	c.Apply(model.VolumeUpserted{Volume: model.Volume{Namespace: "longhorn-system", Name: s,
		Robustness: model.RobustnessDegraded, State: "attached", Replicas: 3, Node: "w-03"}}, t0)
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourcePrometheus, Status: model.StatusError,
		Message: s, LastSync: t0.Add(-time.Minute)}}, t0)
	c.Recompute(t0)
	return f
}

// checkFrame asserts what the issue asks of every dashboard frame: exactly h
// lines of exactly w cells, no control byte but SGR styling, no hostile
// styling let through.
func checkFrame(t *testing.T, what, frame string, w, h int) {
	t.Helper()
	lines := strings.Split(frame, "\n")
	if len(lines) != h {
		t.Fatalf("%s: %d lines, want %d", what, len(lines), h)
	}
	for i, l := range lines {
		if p := sanitizetest.Problem(l, false); p != "" {
			t.Fatalf("%s: line %d: %s", what, i+1, p)
		}
		if got := pctx.Width(l); got != w {
			t.Fatalf("%s: line %d is %d cells wide, want %d: %q", what, i+1, got, w, l)
		}
	}
	if strings.Contains(frame, "\x1b[31mred") || strings.Contains(frame, "\x1b[2J") || strings.Contains(frame, "\x1b]0;") {
		t.Fatalf("%s: a hostile sequence reached the screen", what)
	}
}

func hostileScreens(t *testing.T, s string) {
	t.Helper()
	for _, sz := range [][2]int{{60, 15}, {80, 24}, {120, 40}, {200, 50}} {
		w, h := sz[0], sz[1]
		f := hostileFixture(s)
		m := f.model(Options{})
		size(m, w, h)
		frame := m.View().Content
		checkFrame(t, "main", frame, w, h)
		// The lease's row keeps its verdict column.
		found := false
		for _, l := range strings.Split(screen(m), "\n") {
			if strings.Contains(l, "fleet") && strings.Contains(l, "ghost") {
				found = true
			}
		}
		if !found {
			t.Fatalf("%dx%d: the lease's verdict is gone:\n%s", w, h, screen(m))
		}
		if m.View().WindowTitle != "rebootwatch · prod-eu-1" {
			t.Fatalf("window title %q", m.View().WindowTitle)
		}
		press(m, "/")
		m.Update(pasteMsgFor(s))
		checkFrame(t, "filter", m.View().Content, w, h)
		press(m, "esc")
		// Node detail of w-05 (its OS is hostile): filter to it.
		press(m, "/", "w", "-", "0", "5", "enter", "enter")
		checkFrame(t, "node detail", m.View().Content, w, h)
		press(m, "esc", "esc")
		// Lock detail, then the reap dialog on the lease.
		press(m, "tab", "enter")
		checkFrame(t, "lock detail", m.View().Content, w, h)
		openAfterIgnore(t, f, m, "x")
		frame = m.View().Content
		checkFrame(t, "dialog", frame, w, h)
		plain := screen(m)
		if h >= 24 {
			for _, want := range []string{"gates", "write", "[ No ]"} {
				if !strings.Contains(plain, want) {
					t.Fatalf("%dx%d: the dialog lost %q:\n%s", w, h, want, plain)
				}
			}
		}
		press(m, "esc", "esc")
	}
}

func TestHostileStringsKeepTheDashboard(t *testing.T) {
	for _, s := range sanitizetest.Attacks {
		hostileScreens(t, s)
	}
	for _, s := range sanitizetest.Random(12, 20, 40) {
		hostileScreens(t, s)
	}
}

func FuzzDashboard(f *testing.F) {
	for _, s := range sanitizetest.Attacks[:8] {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" {
			t.Skip("an empty holder is a free lease: no verdict to keep")
		}
		hostileScreens(t, s)
	})
}

func pasteMsgFor(s string) tea.PasteMsg { return tea.PasteMsg{Content: s} }
