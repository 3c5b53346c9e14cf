package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rebootwatch/rebootwatch/model"
)

// lastLine is the footer: the screen's last line, styling stripped.
func lastLine(m *Model) string {
	lines := strings.Split(screen(m), "\n")
	return lines[len(lines)-1]
}

// TestFooterKeepsTabHelpAndQuit: at every width from the minimum up, in
// normal and read-only mode, the footer shows tab (the README's story
// starts with it), ? help and q quit; other hints are shortened or left
// out first, and none is cut in the middle.
func TestFooterKeepsTabHelpAndQuit(t *testing.T) {
	for _, ro := range []bool{false, true} {
		m := newFixture().model(Options{ReadOnly: ro})
		for w := MinWidth; w <= 220; w++ {
			size(m, w, 24)
			f := lastLine(m)
			for _, want := range []string{"tab nodes/locks", "? help", "q quit"} {
				if !strings.Contains(f, want) {
					t.Fatalf("read-only %v, %d columns: footer lacks %q: %q", ro, w, want, f)
				}
			}
			if strings.Contains(f, "…") {
				t.Fatalf("read-only %v, %d columns: a hint is cut: %q", ro, w, f)
			}
		}
		size(m, 80, 24)
		if f := lastLine(m); !ro && !strings.Contains(f, "r release") {
			t.Fatalf("80 columns: the release hint is gone: %q", f)
		}
	}
}

// TestLocksKeepTheirNameAt80: at 80x24, after a release and a reap, two
// free fleetlock Leases are still told apart: the condensed locks panel
// keeps the LOCK column (the Lease's name) and narrows the others.
func TestLocksKeepTheirNameAt80(t *testing.T) {
	f := newFixture()
	for i, name := range []string{"fleetlock-default", "fleetlock-workers"} {
		ref := model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: name}
		f.c.Apply(model.LockUpserted{Lock: model.LockObject{LockRef: ref, UID: "lease-" + name, ResourceVersion: fmt.Sprint(100 + i)}}, t0)
	}
	f.c.Recompute(t0)
	m := f.model(Options{})
	for _, w := range []int{80, 100} {
		size(m, w, 24)
		var rows []string
		for _, l := range strings.Split(screen(m), "\n") {
			if strings.Contains(l, "free") {
				rows = append(rows, l)
			}
		}
		if len(rows) != 2 || !strings.Contains(rows[0], "fleetlock-default") || !strings.Contains(rows[1], "fleetlock-workers") {
			t.Fatalf("%d columns: the free Leases' rows do not name them:\n%s", w, screen(m))
		}
	}
}

// TestYConfirmsTheDialog: in the dashboard, y alone confirms an allowed
// action (after the ignore window), and the help screen says so.
func TestYConfirmsTheDialog(t *testing.T) {
	f := newFixture()
	m := f.model(Options{})
	size(m, 80, 24)
	press(m, "tab")
	openAfterIgnore(t, f, m, "x")
	cmd := press(m, "y")
	if cmd == nil || m.dialog != nil {
		t.Fatalf("y did not confirm:\n%s", screen(m))
	}
	cmd()
	if len(f.actions.calls) != 1 {
		t.Fatalf("%d actions ran; want 1", len(f.actions.calls))
	}
	press(m, "?")
	if s := screen(m); !strings.Contains(s, "in the dialog y confirms") {
		t.Fatalf("help does not say which keys confirm:\n%s", s)
	}
}

// TestToastKeepsTheEssentialKeysWhenThereIsRoom: an action's toast takes
// the footer; where the line has room for both, tab, ? help and q quit
// stay at its right. The toast's text is never cut for them.
func TestToastKeepsTheEssentialKeysWhenThereIsRoom(t *testing.T) {
	f := newFixture()
	m := f.model(Options{})
	size(m, 160, 40)
	press(m, "t") // a toast: "theme: light"
	if f := lastLine(m); !strings.Contains(f, "theme: light") || !strings.HasSuffix(strings.TrimRight(f, " "), "tab nodes/locks • ? help • q quit") {
		t.Fatalf("footer with a toast: %q", f)
	}
}
