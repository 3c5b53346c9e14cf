package cli

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/testenv/gobuild"
)

// builtBinary returns cmd/rebootwatch, built by gobuild (once per test
// binary, and not linked again while it is up to date): signals, file
// descriptors and the terminal are the process's, so they are tested on
// the real binary, and every such test runs the same one.
func builtBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	return gobuild.Command(t, "./cmd/rebootwatch")
}

// exitCode waits for cmd and returns its exit code.
func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}

// Issue 22 §5: watch, with --until-done or without, interrupted by SIGINT or
// SIGTERM exits 130 (so `watch --until-done && next-step` stops), and a
// watch whose output cannot be written (a full disk) exits 1 with why.
func TestWatchSignalsAndFullDiskBinary(t *testing.T) {
	t.Parallel() // its own processes, on the demo
	bin := builtBinary(t)
	for _, tc := range []struct {
		args []string
		sig  syscall.Signal
	}{
		{[]string{"watch", "--until-done"}, syscall.SIGINT},
		{[]string{"watch", "--until-done"}, syscall.SIGTERM},
		{[]string{"watch"}, syscall.SIGINT},
		{[]string{"watch", "-o", "json"}, syscall.SIGTERM},
	} {
		cmd := exec.Command(bin, append([]string{"--demo", "--speed", "0"}, tc.args...)...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "KUBECONFIG=/nonexistent")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The first line is printed once the demo's first picture is in:
		// the watch is then waiting in its loop.
		lines := bufio.NewScanner(stdout)
		if !lines.Scan() {
			t.Fatalf("%v: no first line; stderr:\n%s", tc.args, stderr.String())
		}
		go func() {
			for lines.Scan() {
			}
		}()
		if err := cmd.Process.Signal(tc.sig); err != nil {
			t.Fatal(err)
		}
		if code := exitCode(t, cmd); code != ExitInterrupted {
			t.Errorf("%v %v: exit %d, want 130; stderr:\n%s", tc.args, tc.sig, code, stderr.String())
		}
	}

	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	for _, out := range [][]string{nil, {"-o", "json"}} {
		cmd := exec.Command(bin, append([]string{"--demo", "--speed", "0", "watch"}, out...)...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "KUBECONFIG=/nonexistent")
		cmd.Stdout = full
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan int, 1)
		go func() { done <- exitCode(t, cmd) }()
		select {
		case code := <-done:
			if code != ExitError || !strings.Contains(stderr.String(), "writing the output: write /dev/stdout: no space left on device") {
				t.Errorf("%v >/dev/full: exit %d, want 1; stderr:\n%s", out, code, stderr.String())
			}
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			t.Fatalf("%v >/dev/full: still running after a minute (it runs on silently); stderr:\n%s", out, stderr.String())
		}
	}
}
