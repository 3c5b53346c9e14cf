// Package testtmux runs one program in a detached tmux server of a test's
// own, so end-to-end tests can drive a real binary's terminal UI with keys
// and read its screen. It must not be imported by non-test code, and it
// only ever talks to the tmux server it started (its own socket).
package testtmux

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Pane is the one window of a private tmux server.
type Pane struct {
	t    *testing.T
	sock string
}

// Start runs the shell command in a new width×height tmux session on a
// private socket; the server is killed when the test ends. It skips the
// test when tmux is not installed.
func Start(t *testing.T, width, height int, command string) Pane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	// A socket path of its own (short: a Unix socket's path is bounded),
	// so no other test's or run's tmux server can share it.
	dir, err := os.MkdirTemp("", "rwtmux")
	if err != nil {
		t.Fatal(err)
	}
	p := Pane{t: t, sock: filepath.Join(dir, "s")}
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-S", p.sock, "-f", "/dev/null", "kill-server").Run()
		_ = os.RemoveAll(dir)
	})
	p.Run("new-session", "-d", "-s", "pane", "-x", strconv.Itoa(width), "-y", strconv.Itoa(height), command)
	return p
}

// Run runs one tmux command against this pane's server and returns its output.
func (p Pane) Run(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %q: %v\n%s", args, err, out)
	}
	return string(out)
}

// Screen is the pane's text as shown now.
func (p Pane) Screen() string { return p.Run("capture-pane", "-p", "-t", "pane") }

// Styled is the pane's screen with its escape sequences (colours, bold).
func (p Pane) Styled() string { return p.Run("capture-pane", "-e", "-p", "-t", "pane") }

// WaitFor waits (bounded, generous: timeout) until the screen satisfies
// cond, and returns that screen; past the bound the test fails showing
// the last screen.
func (p Pane) WaitFor(what string, timeout time.Duration, cond func(string) bool) string {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := p.Screen()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("screen never showed %s:\n%s", what, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Keys sends tmux key names (send-keys syntax: "Enter", "Escape", "j").
func (p Pane) Keys(k ...string) { p.Run(append([]string{"send-keys", "-t", "pane"}, k...)...) }
