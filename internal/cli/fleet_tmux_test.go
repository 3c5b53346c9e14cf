package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tmuxPane drives one program in a detached tmux server of its own.
type tmuxPane struct {
	t    *testing.T
	sock string
}

func (p tmuxPane) run(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", p.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %q: %v\n%s", args, err, out)
	}
	return string(out)
}

func (p tmuxPane) screen() string { return p.run("capture-pane", "-p", "-t", "fleet") }

// waitFor waits (bounded, generous) until the screen satisfies cond.
func (p tmuxPane) waitFor(what string, cond func(string) bool) string {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := p.screen()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("screen never showed %s:\n%s", what, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p tmuxPane) keys(k ...string) { p.run(append([]string{"send-keys", "-t", "fleet"}, k...)...) }

// TestFleetDashboardTmux (issue 25 §4): the real binary's fleet dashboard
// in tmux at 80x24 against an endpoint: b's ghost first, the filter, the
// detail of b (its nodes and blockers from the metrics) and enter opening
// b's live dashboard through --context-for (a kubeconfig context whose
// server refuses: the dashboard opens and names it), q back to the fleet.
// FLEET_SCREENSHOT=path.ans keeps the screen with its styling.
func TestFleetDashboardTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "rebootwatch")
	build := exec.Command("go", "build", "-o", bin, "./cmd/rebootwatch")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
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
	p := tmuxPane{t: t, sock: "rebootwatch-fleet-" + filepath.Base(dir)}
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", p.sock, "-f", "/dev/null", "kill-server").Run() })
	p.run("new-session", "-d", "-s", "fleet", "-x", "80", "-y", "24",
		"env TERM=xterm-256color KUBECONFIG="+kc+" "+bin+" fleet --interval 1s --prometheus-url "+srv.URL+" --context-for b=prod-b; sleep 60")

	s := p.waitFor("the two clusters, b's ghost first", func(s string) bool {
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
		if err := os.WriteFile(shot, []byte(p.run("capture-pane", "-e", "-p", "-t", "fleet")), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	p.keys("/", "a", "Enter")
	p.waitFor("only a after the filter", func(s string) bool {
		return !strings.Contains(s, "  b ") && !strings.Contains(s, "▶ b ") && strings.Contains(s, "▶ a ")
	})
	p.keys("Escape")
	p.waitFor("b back after esc", func(s string) bool { return strings.Contains(s, "▶ b ") })

	p.keys("d")
	p.waitFor("b's detail with its nodes and blockers", func(s string) bool {
		return strings.Contains(s, "cluster b · ghost · context prod-b") && strings.Contains(s, "n2") && strings.Contains(s, "lock-held") &&
			strings.Contains(s, "no node")
	})
	p.keys("Escape")
	p.waitFor("the list after esc", func(s string) bool { return strings.Contains(s, "▶ b ") })

	p.keys("Enter")
	p.waitFor("b's live dashboard, opened through the context mapping", func(s string) bool {
		return strings.Contains(s, "prod-b") && !strings.Contains(s, "fleet · 2 clusters")
	})
	p.keys("q")
	p.waitFor("back in the fleet view", func(s string) bool { return strings.Contains(s, "fleet · 2 clusters") })
	p.keys("q")
}
