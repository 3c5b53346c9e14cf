package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testtmux"
)

// TestCoordinatorDemosTmux (issue 24 §4): the real binary's dashboard in
// tmux, --demo=suc and --demo=flatcar at the default speed: within the
// first minute the headline wedge is on the screen and the node the
// coordinator left cordoned is uncordoned through the confirm dialog (its
// gates passed), after which the node list no longer says cordoned.
func TestCoordinatorDemosTmux(t *testing.T) {
	t.Parallel() // its own binary and tmux servers, on the demos
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := builtBinary(t)
	for _, tc := range []struct {
		demo, node string
		// first is what the screen shows at once; wedge the headline
		// blocker, within the first minute. Both show the node's slot in
		// the Locks panel (kind, whose slots, used/capacity, holder, the
		// coordinator's step), its phase, and the timeline's slot entry
		// (issue 32 §1).
		first, wedge []string
	}{
		{"suc", "k3s-agent-1",
			[]string{"PodDisruptionBudget shop/postgres", "PDB shop/postgres", "suc  system-upgrade/agent-plan  1/1  k3s-agent-1 job running, node cordoned",
				"draining", "1/4 upgraded (25%)", "slot held by k3s-agent-1"},
			[]string{"■ job system-upgrade/apply-agent-plan", "job failed: Deadline", "1/1  k3s-agent-1 job failed", "k3s-agent-1: job running, node cordoned → job failed"}},
		// The flatcar demo's node is back 15 s of demo time in, 1.5 s
		// of wall time at the default speed: a start slower than that
		// (a loaded machine; the suite runs six packages at once) first
		// shows the node back, its slot still held, "rebooted". Either
		// step is the coordinator's own; the wedge below requires the
		// "rebooted" one.
		{"flatcar", "flatcar-worker-1",
			[]string{"flatcar-worker-1 ", "flatcar —        1/1  flatcar-worker-1 reboot", "slot held by flatcar-worker-1"},
			[]string{"■ flatcar-worker-1 rebooted", "agent not running", "1/1  flatcar-worker-1 rebooted, agent not running", "recovering"}},
	} {
		t.Run(tc.demo, func(t *testing.T) {
			// Each demo has its own process, clock and tmux server: the
			// waits on the two demos' clocks overlap.
			t.Parallel()
			p := testtmux.Start(t, 160, 40, "env TERM=xterm-256color XDG_CONFIG_HOME=/nonexistent "+bin+" --demo="+tc.demo+"; sleep 120")
			// The demo's clock starts with the binary: the first minute is
			// counted from here.
			has := func(want []string) func(string) bool {
				return func(s string) bool {
					for _, w := range want {
						if !strings.Contains(s, w) {
							return false
						}
					}
					return true
				}
			}
			p.WaitFor(strings.Join(tc.first, ", "), 30*time.Second, has(tc.first))
			p.WaitFor("the headline wedge "+strings.Join(tc.wedge, ", "), time.Minute, has(tc.wedge))
			// Only the node's row, then u: the uncordon dialog.
			p.Keys("/")
			p.Keys("-l", tc.node)
			p.Keys("Enter")
			p.WaitFor("only "+tc.node, 20*time.Second, func(s string) bool {
				return strings.Contains(s, tc.node+" ") && strings.Count(s, "cordoned") >= 1
			})
			p.Keys("u")
			s := p.WaitFor("the uncordon dialog", 20*time.Second, has([]string{"Uncordon node?", "left cordoned: " + tc.demo + ":", "✓ node"}))
			for _, g := range []string{"fresh-data", "node", "other-nodes", "volumes", "alerts"} {
				if !strings.Contains(s, "✓ "+g+" ") {
					t.Fatalf("gate %s did not pass:\n%s", g, s)
				}
			}
			if shot := os.Getenv("COORD_DEMO_SCREENSHOT_DIR"); shot != "" {
				if err := os.WriteFile(filepath.Join(shot, tc.demo+".ans"), []byte(p.Styled()), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			// The dialog ignores keys for a moment after it opens: y again
			// until it is taken.
			deadline := time.Now().Add(20 * time.Second)
			for !strings.Contains(p.Screen(), "uncordoned "+tc.node) {
				if time.Now().After(deadline) {
					t.Fatalf("the uncordon was never confirmed:\n%s", p.Screen())
				}
				if strings.Contains(p.Screen(), "Uncordon node?") {
					p.Keys("y")
				}
				time.Sleep(100 * time.Millisecond)
			}
			s = p.WaitFor(tc.node+" schedulable again", 20*time.Second, func(s string) bool {
				for _, l := range strings.Split(s, "\n") {
					if strings.Contains(l, "│"+tc.node+" ") {
						return !strings.Contains(l, "cordoned")
					}
				}
				return false
			})
			if !strings.Contains(s, "done") {
				t.Errorf("no outcome on the screen:\n%s", s)
			}
		})
	}
}
