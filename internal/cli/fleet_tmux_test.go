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

// TestFleetDashboardTmux (issue 25 §4): the real binary's fleet dashboard
// in tmux at 80x24 against an endpoint: b's ghost first, the filter, the
// detail of b (its nodes and blockers from the metrics) and enter opening
// b's live dashboard through --context-for (a kubeconfig context whose
// server refuses: the dashboard opens and names it), q back to the fleet.
// FLEET_SCREENSHOT=path.ans keeps the screen with its styling.
func TestFleetDashboardTmux(t *testing.T) {
	t.Parallel() // its own binary, tmux server and fake Prometheus
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := builtBinary(t)
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters:
- name: b
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: x}
contexts:
- name: prod-b
  context: {cluster: b, user: u}
current-context: prod-b
`), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, _ := fleetEndpoint(t, time.Now(), false)
	p := testtmux.Start(t, 80, 24, "env TERM=xterm-256color KUBECONFIG="+kc+" "+bin+" fleet --interval 1s --prometheus-url "+srv.URL+" --context-for b=prod-b; sleep 60")

	s := p.WaitFor("the two clusters, b's ghost first", 30*time.Second, func(s string) bool {
		return strings.Contains(s, "▶ b ") && strings.Contains(s, "  a ")
	})
	lines := strings.Split(s, "\n")
	if !strings.HasPrefix(lines[0], "fleet · 2 clusters: 1 ghost, 1 done") {
		t.Errorf("header %q", lines[0])
	}
	if i, j := strings.Index(s, "▶ b "), strings.Index(s, "  a "); i > j || !strings.Contains(lines[2], "ghost") {
		t.Errorf("b (ghost) is not first:\n%s", s)
	}
	for _, l := range lines {
		if len([]rune(l)) > 80 {
			t.Errorf("line wider than 80: %q", l)
		}
	}
	if shot := os.Getenv("FLEET_SCREENSHOT"); shot != "" {
		if err := os.WriteFile(shot, []byte(p.Styled()), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	p.Keys("/", "a", "Enter")
	p.WaitFor("only a after the filter", 30*time.Second, func(s string) bool {
		return !strings.Contains(s, "  b ") && !strings.Contains(s, "▶ b ") && strings.Contains(s, "▶ a ")
	})
	p.Keys("Escape")
	p.WaitFor("b back after esc", 30*time.Second, func(s string) bool { return strings.Contains(s, "▶ b ") })

	p.Keys("d")
	p.WaitFor("b's detail with its nodes and blockers", 30*time.Second, func(s string) bool {
		return strings.Contains(s, "cluster b · ghost · context prod-b") && strings.Contains(s, "n2") && strings.Contains(s, "lock-held") &&
			strings.Contains(s, "no node")
	})
	p.Keys("Escape")
	p.WaitFor("the list after esc", 30*time.Second, func(s string) bool { return strings.Contains(s, "▶ b ") })

	p.Keys("Enter")
	p.WaitFor("b's live dashboard, opened through the context mapping", 30*time.Second, func(s string) bool {
		return strings.Contains(s, "prod-b") && !strings.Contains(s, "fleet · 2 clusters")
	})
	p.Keys("q")
	p.WaitFor("back in the fleet view", 30*time.Second, func(s string) bool { return strings.Contains(s, "fleet · 2 clusters") })
	p.Keys("q")
}
