package cli

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/testenv/screencheck"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testtmux"
)

// TestLayoutLosesNothingTmux (issue 34 §2): the real binary's dashboard in
// tmux at 80x24, 120x40, 160x45 and 200x50, on every demo scenario: the main
// screen, the help (?), a node's detail (enter), a lock's detail (tab,
// enter: where there are locks) and the timeline (l: reachable at every
// size) cut no version and no blocker in the nodes table, and no box cuts
// a line while it has empty rows left (screencheck.Problems). A failure
// shows the captured screen.
func TestLayoutLosesNothingTmux(t *testing.T) {
	t.Parallel() // its own binary and tmux servers, on the demos
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	bin := builtBinary(t)
	dir := t.TempDir()
	for _, demo := range []string{"fleetlock", "kured", "suc", "flatcar"} {
		for _, sz := range [][2]int{{80, 24}, {120, 40}, {160, 45}, {200, 50}} {
			name := demo + "-" + strconv.Itoa(sz[0]) + "x" + strconv.Itoa(sz[1])
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				p := testtmux.Start(t, sz[0], sz[1], "env TERM=xterm-256color XDG_CONFIG_HOME=/nonexistent KUBECONFIG="+filepath.Join(dir, "none")+" "+bin+" --demo="+demo+"; sleep 120")
				check := func(what string, s string) {
					t.Helper()
					if ps := screencheck.Problems(s); len(ps) > 0 {
						t.Errorf("%s at %s loses what matters:\n  %s\n%s", what, name, strings.Join(ps, "\n  "), s)
					}
				}
				main := func(s string) bool {
					return strings.Contains(s, "│NAME ") && strings.Contains(s, "sort: cycle") &&
						!strings.Contains(s, "connecting") && !strings.Contains(s, "not judged yet")
				}
				s := p.WaitFor("the nodes table", 30*time.Second, main)
				check("the main screen", s)
				hasLocks := strings.Contains(s, "VERDICT")

				p.Keys("?")
				s = p.WaitFor("the help", 10*time.Second, func(s string) bool { return strings.Contains(s, "╭─ Help") })
				if !strings.Contains(s, "l timeline") {
					t.Errorf("the help does not list the timeline's key:\n%s", s)
				}
				check("the help", s)
				p.Keys("Escape")
				p.WaitFor("the nodes table again", 10*time.Second, main)

				p.Keys("Enter")
				s = p.WaitFor("a node's detail", 10*time.Second, func(s string) bool { return strings.Contains(s, "╭─ Node ") })
				check("the node detail", s)
				p.Keys("Escape")
				p.WaitFor("the nodes table again", 10*time.Second, main)

				if hasLocks {
					p.Keys("Tab")
					p.WaitFor("the locks focused", 10*time.Second, func(s string) bool { return strings.Contains(s, "Locks ▸") })
					p.Keys("Enter")
					s = p.WaitFor("a lock's detail", 10*time.Second, func(s string) bool { return strings.Contains(s, "╭─ Lock ") })
					check("the lock detail", s)
					p.Keys("Escape")
					p.WaitFor("the nodes table again", 10*time.Second, main)
					p.Keys("Tab")
				}

				p.Keys("l")
				s = p.WaitFor("the timeline", 10*time.Second, func(s string) bool {
					return strings.Contains(s, "╭─ Timeline") && strings.Contains(s, "l or esc back")
				})
				check("the timeline", s)
			})
		}
	}
}
