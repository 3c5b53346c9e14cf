package cli

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/sanitize/sanitizetest"
	"github.com/rebootwatch/rebootwatch/model"
)

// hostilePlan is a reap plan whose holder, reason, evidence, gate reason and
// write all carry s, as the lock engine builds them from a hostile Lease.
func hostilePlan(s string) lock.Plan {
	ref := model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-default"}
	return lock.Plan{
		Status: model.LockStatus{LockRef: ref, Holder: s, Verdict: model.VerdictGhost, Reason: "holder " + s + " matches no node",
			Evidence: []model.Evidence{{Key: "holder", Value: s}}},
		Action: model.ActionReap,
		Gates:  []lock.Gate{{Name: lock.GateVerdict, Passed: true, Reason: "ghost " + s}},
		Write: lock.Write{Ref: ref, Object: "Lease default/fleetlock-default", UID: "u", ResourceVersion: "7",
			Op: fleetlock.OpClearHolder, Field: "spec.holderIdentity", Holder: s},
		Allowed: true,
	}
}

func TestHostileStringsKeepActionOutput(t *testing.T) {
	strs := append(append([]string{}, sanitizetest.Attacks...), sanitizetest.Random(5, 200, 40)...)
	for _, s := range strs {
		env, out, errb := testEnv(demoStart)
		o := &actionOutput{env: env, plan: hostilePlan(s)}
		o.describe()
		o.finish(lock.Result{Outcome: model.OutcomeRefused, Message: "not confirmed: " + s})
		fail(env, errors.New("no lock held by "+s))
		for name, got := range map[string]string{"stdout": out.String(), "stderr": errb.String()} {
			if p := sanitizetest.Problem(got, true); p != "" {
				t.Fatalf("holder %.40q, %s: %s", s, name, p)
			}
		}
		if n := strings.Count(out.String(), "\n"); n != 8 {
			t.Fatalf("holder %.40q: %d lines, want 8 (a forged line?):\n%s", s, n, out)
		}
		if strings.Contains(out.String(), "\x1b") || len(out.String()) > 12000 {
			t.Fatalf("holder %.40q: ESC or %d bytes of output", s, out.Len())
		}
		if !strings.Contains(out.String(), "resourceVersion 7") {
			t.Fatalf("the write lost its precondition:\n%s", out)
		}
	}
}

// Ctrl-C (the context ends) while the [y/N] prompt waits aborts at once:
// exit 130, nothing written, no "Result:" line.
func TestCtrlCAtThePromptAborts(t *testing.T) {
	for _, args := range [][]string{
		{"release", "--kind", "kured"},
		{"reap", "--kind", "fleetlock", "--allow-unsafe"}, // the typed-name prompt
	} {
		stdin, w := io.Pipe() // nobody ever answers
		var out, errb lockedBuffer
		env := Env{Stdin: stdin, Stdout: &out, Stderr: &errb, StdinTTY: true, StdoutTTY: true,
			Getenv: func(string) string { return "" }, Now: func() time.Time { return demoStart }}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int)
		go func() { done <- run(ctx, append(append([]string{}, demo22...), args...), env) }()
		// Interrupt once the prompt is up.
		for !strings.Contains(errb.String(), "[y/N]") && !strings.Contains(errb.String(), "to go ahead") {
			select {
			case code := <-done:
				t.Fatalf("%v ended (%d) before prompting:\n%s\n%s", args, code, out.String(), errb.String())
			default:
				time.Sleep(time.Millisecond) // polling, not a timed assertion
			}
		}
		cancel()
		code := <-done
		w.Close()
		if code != ExitInterrupted || strings.Contains(out.String(), "Result:") || !strings.Contains(errb.String(), "nothing written") {
			t.Fatalf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out.String(), errb.String())
		}
	}
}

// The demo with a hostile ghost holder (as hack/e2e-tmux.sh runs it): the
// coloured snapshot keeps its lines and sets no title.
func TestHostileDemoSnapshot(t *testing.T) {
	clean := -1
	for _, s := range append([]string{"0123456789abcdef0123456789abcdef"}, sanitizetest.Attacks...) {
		env, out, errb := testEnv(demoStart)
		env.StdoutTTY = true
		env.Getenv = func(k string) string {
			if k == "REBOOTWATCH_DEMO_GHOST_HOLDER" {
				return s
			}
			return ""
		}
		code := run(context.Background(), append(append([]string{}, demo22...), "--snapshot"), env)
		if code != ExitAttention {
			t.Fatalf("holder %.40q: exit %d\n%s", s, code, errb)
		}
		if p := sanitizetest.Problem(out.String(), true); p != "" {
			t.Fatalf("holder %.40q: %s", s, p)
		}
		n := strings.Count(out.String(), "\n")
		if clean < 0 {
			clean = n
		} else if n != clean {
			t.Fatalf("holder %.40q: %d lines, want %d:\n%s", s, n, clean, out)
		}
		// The lease's row keeps its verdict (a holder that is no Zincati id
		// cannot be mapped: unknown).
		row := false
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(l, "  fleetlock ") && (strings.Contains(l, "ghost") || strings.Contains(l, "unknown")) {
				row = true
			}
		}
		if !row || out.Len() > 20000 {
			t.Fatalf("holder %.40q: the lease's row lost its verdict, or %d bytes:\n%.3000s", s, out.Len(), out)
		}
	}
}

// FuzzActionOutput feeds arbitrary holders through release/reap's text
// output and error line.
func FuzzActionOutput(f *testing.F) {
	for _, s := range sanitizetest.Attacks[:10] {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		env, out, errb := testEnv(demoStart)
		o := &actionOutput{env: env, plan: hostilePlan(s)}
		o.describe()
		o.finish(lock.Result{Outcome: model.OutcomeRefused, Message: "not confirmed: " + s})
		fail(env, errors.New("no lock held by "+s))
		for _, got := range []string{out.String(), errb.String()} {
			if p := sanitizetest.Problem(got, true); p != "" {
				t.Fatalf("holder %q: %s", s, p)
			}
		}
		if n := strings.Count(out.String(), "\n"); n != 8 {
			t.Fatalf("holder %q: %d lines, want 8", s, n)
		}
	})
}

// Issue 22 §6: the action's log line on stderr bounds every value as the
// text output does: a 200,000-character ghost holder made it 206,263
// characters long.
func TestActionLogLineIsBounded(t *testing.T) {
	holder := strings.Repeat("h", 200000)
	env, out, errb := testEnv(demoStart)
	env.Getenv = func(k string) string {
		if k == "REBOOTWATCH_DEMO_GHOST_HOLDER" {
			return holder
		}
		return ""
	}
	code := run(context.Background(), append(append([]string{}, demo22...), "reap", "--kind", "fleetlock", "--dry-run"), env)
	var logLine string
	for _, l := range strings.Split(errb.String(), "\n") {
		if strings.Contains(l, "msg=\"reboot lock reap\"") {
			logLine = l
		}
	}
	if logLine == "" {
		t.Fatalf("exit %d, no log line\n%s\n%.2000s", code, out.String(), errb.String())
	}
	if n := len(logLine); n > 8*maxValue {
		t.Fatalf("log line is %d bytes:\n%.3000s", n, logLine)
	}
	if !strings.Contains(logLine, "holder="+holder[:100]) || !strings.Contains(logLine, "…") {
		t.Fatalf("log line:\n%.3000s", logLine)
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if len(l) > 4*maxValue {
			t.Fatalf("a stdout line is %d bytes", len(l))
		}
	}
}
