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

// TestFleetDemoTmux (issue 34 §3): the real binary's `fleet --demo` in
// tmux at 100x30 with no kubeconfig and no endpoint: a row per demo
// scenario and the done one, the ghost (fleetlock) first; enter on it opens
// the single-cluster fleetlock demo (its ghost Lease), q back to the fleet;
// enter on done opens nothing and says why. FLEET_DEMO_SCREENSHOT=path.ans
// keeps the fleet screen with its styling (hack/screenshots.sh).
func TestFleetDemoTmux(t *testing.T) {
	t.Parallel() // its own binary and tmux server
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := builtBinary(t)
	p := testtmux.Start(t, 100, 30, "env TERM=xterm-256color KUBECONFIG="+filepath.Join(dir, "none")+" "+bin+" fleet --demo --interval 1s; sleep 60")

	s := p.WaitFor("the demo's clusters, the ghost first", 30*time.Second, func(s string) bool {
		return strings.Contains(s, "▶ fleetlock ") && strings.Contains(s, "  kured ") && strings.Contains(s, "  suc ") &&
			strings.Contains(s, "  flatcar ") && strings.Contains(s, "  done ")
	})
	lines := strings.Split(s, "\n")
	if !strings.HasPrefix(lines[0], "fleet · 5 clusters: 1 ghost") {
		t.Errorf("header %q", lines[0])
	}
	if !strings.Contains(lines[2], "fleetlock") || !strings.Contains(lines[2], "ghost") {
		t.Errorf("the ghost is not first:\n%s", s)
	}
	// The demo clock runs at --speed 10: flatcar's agent turns stale a
	// demo minute in.
	p.WaitFor("flatcar's agent stale", 30*time.Second, func(s string) bool {
		for _, l := range strings.Split(s, "\n") {
			if strings.Contains(l, " flatcar ") && strings.Contains(l, "stale") {
				return true
			}
		}
		return false
	})
	if shot := os.Getenv("FLEET_DEMO_SCREENSHOT"); shot != "" {
		if err := os.WriteFile(shot, []byte(p.Styled()), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	p.Keys("Enter")
	p.WaitFor("the fleetlock demo's dashboard, its ghost Lease", 30*time.Second, func(s string) bool {
		return !strings.Contains(s, "fleet · 5 clusters") && strings.Contains(s, "fleetlock-default") && strings.Contains(s, "ghost")
	})
	p.Keys("q")
	p.WaitFor("back in the fleet view", 30*time.Second, func(s string) bool { return strings.Contains(s, "fleet · 5 clusters") })

	p.Keys("/", "d", "o", "n", "e", "Enter")
	p.WaitFor("only done after the filter", 30*time.Second, func(s string) bool {
		return strings.Contains(s, "▶ done ") && !strings.Contains(s, "fleetlock ")
	})
	p.Keys("Enter")
	p.WaitFor("done opens nothing, and says why", 30*time.Second, func(s string) bool {
		return strings.Contains(s, "nothing opened: this demo cluster plays no single-cluster scenario")
	})
	p.Keys("q")
}
