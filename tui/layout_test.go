package tui

import (
	"strings"
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/testenv/screencheck"
	"github.com/rebootwatch/rebootwatch/model"
)

// fedoraFixture is the fixture with Fedora CoreOS's long versions (the
// images that the OS column cut at 200 columns).
func fedoraFixture() *fixture {
	f := newFixture()
	for _, name := range f.c.NodeNames() {
		n, _ := f.c.Node(name)
		cp := *n
		cp.OSImage = strings.NewReplacer(oldOS, "Fedora CoreOS 42.20251012.3.0", newOS, "Fedora CoreOS 43.20251110.3.1").Replace(cp.OSImage)
		f.c.Apply(model.NodeUpserted{Node: cp}, t0)
	}
	f.c.Recompute(t0)
	return f
}

// TestLayoutLosesNothing (issue 34 §2): at 80x24, 120x40 and 200x50 the
// main screen, the help, a node's detail, a lock's detail and the
// timeline (l, at every size) cut no version and no blocker in the nodes
// table, and no box cuts a line while it has empty rows left; the Locks
// panel has its header row; the OS column shows both versions whole under
// the distribution.
func TestLayoutLosesNothing(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {160, 45}, {200, 50}} {
		m := fedoraFixture().model(Options{})
		size(m, sz[0], sz[1])
		check := func(what string) string {
			t.Helper()
			s := screen(m)
			if ps := screencheck.Problems(s); len(ps) > 0 {
				t.Errorf("%dx%d, %s:\n  %s\n%s", sz[0], sz[1], what, strings.Join(ps, "\n  "), s)
			}
			return s
		}
		s := check("main screen")
		if !strings.Contains(s, "│KIND ") {
			t.Errorf("%dx%d: the Locks panel has no header row:\n%s", sz[0], sz[1], s)
		}
		if sz[0] >= 120 && (!strings.Contains(s, "OS (Fedora") || !strings.Contains(s, "42.20251012.3.0 → 43.20251110.3.1") || !strings.Contains(s, "✓ 43.20251110.3.1")) {
			t.Errorf("%dx%d: the OS column lacks its distribution or a whole version:\n%s", sz[0], sz[1], s)
		}
		press(m, "?")
		if s := check("help"); !strings.Contains(s, "l timeline") {
			t.Errorf("%dx%d: the help does not list the timeline's key:\n%s", sz[0], sz[1], s)
		}
		press(m, "esc", "enter")
		check("node detail")
		press(m, "esc", "tab", "enter")
		if s := check("lock detail"); !strings.Contains(s, "╭─ Lock ") {
			t.Errorf("%dx%d: no lock detail:\n%s", sz[0], sz[1], s)
		}
		press(m, "esc", "tab", "l")
		if s := check("timeline"); !strings.Contains(s, "╭─ Timeline") || !strings.Contains(s, "w-03 pending → draining") {
			t.Errorf("%dx%d: l does not show the timeline:\n%s", sz[0], sz[1], s)
		}
		press(m, "esc")
		if s := screen(m); !strings.Contains(s, "│NAME ") {
			t.Errorf("%dx%d: esc does not return from the timeline:\n%s", sz[0], sz[1], s)
		}
	}
}
