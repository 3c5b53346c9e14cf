package tui

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	goldenfile "github.com/rebootwatch/rebootwatch/internal/testenv/golden"
	"github.com/rebootwatch/rebootwatch/themes"
	"github.com/rebootwatch/rebootwatch/tui/detail"
	"github.com/rebootwatch/rebootwatch/tui/header"
	"github.com/rebootwatch/rebootwatch/tui/locks"
	"github.com/rebootwatch/rebootwatch/tui/longhorn"
)

// golden compares got with testdata/<name>.golden (rewritten with -update).
// The files hold View().Content with its ANSI styling.
func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name+".golden"), got)
}

var goldenSizes = []struct {
	name string
	w, h int
}{{"small", 60, 15}, {"80x24", 80, 24}, {"medium", 100, 30}, {"large", 200, 60}}

// TestGoldenScreens renders the fixture at four sizes (dark; 80x24 is the
// ordinary terminal) and the medium one in the light theme, driven through
// Update (size, theme key).
// The panels' styling in both themes is in TestGoldenPanels' files.
func TestGoldenScreens(t *testing.T) {
	for _, sz := range goldenSizes {
		for _, th := range []string{themes.NameDark, themes.NameLight} {
			if th == themes.NameLight && sz.name != "medium" {
				continue
			}
			t.Run(sz.name+"-"+th, func(t *testing.T) {
				f := newFixture()
				m := f.model(Options{Demo: true})
				size(m, sz.w, sz.h)
				if th == themes.NameLight {
					press(m, "t")
					press(m, "esc") // (no-op) keep the toast: it is part of the screen
				}
				if m.Theme() != th {
					t.Fatalf("theme = %s; want %s", m.Theme(), th)
				}
				got := m.View().Content
				assertScreen(t, got, sz.w, sz.h)
				golden(t, "screen-"+sz.name+"-"+th, got)
			})
		}
	}
}

func TestGoldenStates(t *testing.T) {
	f := newFixture()
	m := f.model(Options{})
	size(m, 100, 30)
	press(m, "enter")
	golden(t, "state-detail", m.View().Content)
	press(m, "esc", "?")
	golden(t, "state-help", m.View().Content)
	press(m, "esc")
	f.actions.failGate = "volumes"
	press(m, "r")
	golden(t, "state-dialog-refused", m.View().Content)
	f.clock.Add(time.Second)
	press(m, "esc")
	if m.dialog != nil {
		t.Fatal("esc after the ignore window must close the dialog")
	}
	f.actions.failGate = ""
	press(m, "tab", "x")
	golden(t, "state-dialog-reap", m.View().Content)
}

// assertScreen checks the frame's shape: exactly h lines of exactly w cells.
func assertScreen(t *testing.T, s string, w, h int) {
	t.Helper()
	lines := strings.Split(s, "\n")
	if len(lines) != h {
		t.Fatalf("%d lines; want %d", len(lines), h)
	}
	for i, l := range lines {
		if got := ansi.StringWidth(l); got != w {
			t.Fatalf("line %d is %d cells wide; want %d: %q", i+1, got, w, ansi.Strip(l))
		}
	}
}

// TestGoldenPanels renders each panel on its own (header, locks, Longhorn,
// a node's and a lock's detail) in the dark and light themes, so a change
// in one panel shows in its own golden files; the whole-screen goldens keep
// the layout at three sizes (dark) and one light screen.
func TestGoldenPanels(t *testing.T) {
	for _, th := range []string{themes.NameDark, themes.NameLight} {
		t.Run(th, func(t *testing.T) {
			f := newFixture()
			m := f.model(Options{})
			size(m, 100, 30)
			if th == themes.NameLight {
				press(m, "t")
			}
			if m.Theme() != th {
				t.Fatalf("theme = %s; want %s", m.Theme(), th)
			}
			g := m.geometry()
			p := m.ctx.P
			panel := func(name string, lines []string) {
				t.Helper()
				if len(lines) == 0 {
					t.Fatalf("panel %s rendered nothing", name)
				}
				golden(t, "panel-"+name+"-"+th, strings.Join(lines, "\n")+"\n")
			}
			panel("header", header.Render(m.ctx, header.Data{Context: m.c.Context, Fleet: m.derived.fleet,
				Sources: m.derived.sources, Attention: m.derived.attention}, 100, g.headerH))
			sts := m.c.LockStatuses()
			panel("locks", locks.Render(m.ctx, p, sts, nil, 0, 60, len(sts)+1))
			panel("longhorn", longhorn.Render(p, longhorn.Data{Summary: m.derived.vsum, Volumes: m.derived.vols, Unread: m.derived.lhUnread}, 38, 8))
			panel("detail-node", detail.Lines(m.ctx, m.c, "w-03", 98))
			panel("detail-lock", detail.LockLines(m.ctx, sts[0], 80))
		})
	}
}

// TestGoldenBlocked: once w-03 has drained for longer than the bound, the
// header's attention line leads with the fleet's blocker (its drain), the
// nodes table says what each node waits for, and the node detail lists
// every blocker with its evidence.
func TestGoldenBlocked(t *testing.T) {
	f := newFixture()
	m := f.model(Options{})
	size(m, 120, 40)
	f.clock.Add(10 * time.Minute)
	m.Update(tickMsg(f.clock.Now()))
	got := m.View().Content
	assertScreen(t, got, 120, 40)
	plain := ansi.Strip(got)
	if lines := strings.Split(plain, "\n"); !strings.HasPrefix(lines[2], "■ w-03 has been draining for 17m; cannot tell why the drain is slow") {
		t.Fatalf("the attention line does not lead with the fleet's blocker:\n%s", plain)
	}
	golden(t, "state-blocked", got)
	press(m, "enter")
	got = m.View().Content
	if !strings.Contains(ansi.Strip(got), "Waiting for") {
		t.Fatalf("node detail lists no blocker:\n%s", ansi.Strip(got))
	}
	golden(t, "state-blocked-detail", got)
}
