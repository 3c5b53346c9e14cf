package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rebootwatch/rebootwatch/model"
)

// The demo frozen 22 minutes in has two incidents: worker-1 rebooted and
// still holds the kured lock (orphaned), and a ghost fleetlock lease. The
// ghost cannot be reaped while worker-1 is mid-cycle.
var demo22 = []string{"--demo=kured", "--speed", "0", "--demo-at", "22m"}

func runArgs(t *testing.T, stdin string, tty bool, args ...string) (int, string, string) {
	t.Helper()
	env, out, errb := testEnv(demoStart)
	env.Stdin = strings.NewReader(stdin)
	env.StdinTTY, env.StdoutTTY = tty, tty
	code := run(context.Background(), append(append([]string{}, demo22...), args...), env)
	return code, out.String(), errb.String()
}

func TestReleaseOrphanedKured(t *testing.T) {
	code, out, errb := runArgs(t, "", false, "release", "--kind", "kured", "--yes")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errb)
	}
	for _, want := range []string{"Verdict: orphaned", "✓ other-nodes", "remove annotation weave.works/kured-node-lock", "Result:  done — released"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errb, `msg="reboot lock release" outcome=done`) {
		t.Errorf("no log line on stderr: %s", errb)
	}
}

func TestReapRefusedByGateExits2(t *testing.T) {
	code, out, _ := runArgs(t, "", false, "reap", "--kind", "fleetlock", "--yes")
	if code != ExitAttention || !strings.Contains(out, "✗ other-nodes") || !strings.Contains(out, "Result:  refused") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	// The wrong action for the verdict is refused by the verdict gate.
	code, out, _ = runArgs(t, "", false, "reap", "--kind", "kured", "--yes")
	if code != ExitAttention || !strings.Contains(out, "✗ verdict") || !strings.Contains(out, "use release") {
		t.Fatalf("reap of orphaned: exit %d\n%s", code, out)
	}
}

func TestActionNeedsYesWithoutTTY(t *testing.T) {
	code, out, errb := runArgs(t, "", false, "release", "--kind", "kured")
	if code != ExitError || !strings.Contains(errb, "pass --yes") || strings.Contains(out, "Result:  done") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errb)
	}
}

func TestActionConfirmOnTTY(t *testing.T) {
	code, out, _ := runArgs(t, "n\n", true, "release", "--kind", "kured")
	if code != ExitAttention || !strings.Contains(out, "not confirmed") {
		t.Fatalf("answer n: exit %d\n%s", code, out)
	}
	code, out, _ = runArgs(t, "\n", true, "release", "--kind", "kured")
	if code != ExitAttention {
		t.Fatalf("default answer must be No: exit %d\n%s", code, out)
	}
	code, out, _ = runArgs(t, "y\n", true, "release", "--kind", "kured")
	if code != ExitOK || !strings.Contains(out, "Result:  done") {
		t.Fatalf("answer y: exit %d\n%s", code, out)
	}
}

func TestAllowUnsafe(t *testing.T) {
	// Never from a script, --yes or not.
	code, _, errb := runArgs(t, "", false, "reap", "--kind", "fleetlock", "--allow-unsafe", "--yes")
	if code != ExitError || !strings.Contains(errb, "needs a terminal") {
		t.Fatalf("no tty: exit %d %s", code, errb)
	}
	// On a terminal, a wrong name refuses and changes nothing.
	code, out, _ := runArgs(t, "worker-1\n", true, "reap", "--kind", "fleetlock", "--allow-unsafe", "--yes")
	if code != ExitAttention || !strings.Contains(out, "override not confirmed") {
		t.Fatalf("wrong name: exit %d\n%s", code, out)
	}
	// The holder's id, typed, overrides the failed gate.
	_, js, _ := runArgs(t, "", false, "reap", "--kind", "fleetlock", "--dry-run", "-o", "json")
	var doc struct{ Holder string }
	if err := json.Unmarshal([]byte(js), &doc); err != nil || doc.Holder == "" {
		t.Fatalf("dry-run json: %v\n%s", err, js)
	}
	code, out, _ = runArgs(t, doc.Holder+"\n", true, "reap", "--kind", "fleetlock", "--allow-unsafe")
	if code != ExitOK || !strings.Contains(out, "OVERRIDING failed gates") {
		t.Fatalf("typed holder: exit %d\n%s", code, out)
	}
}

func TestActionDryRunJSON(t *testing.T) {
	code, out, _ := runArgs(t, "", false, "release", "--kind", "kured", "--dry-run", "-o", "json")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	var doc struct {
		Verdict, Outcome, Write, Message string
		Allowed                          bool
		HolderNode                       *string
		Gates                            []struct {
			Name   string
			Passed bool
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if doc.Verdict != "orphaned" || doc.Outcome != "dry-run" || !doc.Allowed || len(doc.Gates) != 6 ||
		doc.HolderNode == nil || *doc.HolderNode != "worker-1" || !strings.Contains(doc.Message, doc.Write) {
		t.Fatalf("doc %+v", doc)
	}
}

func TestActionLockSelection(t *testing.T) {
	// Two locks, one whose verdict allows the action (issue 23 §4): that
	// one is picked, and stderr says which and why.
	code, out, errb := runArgs(t, "", false, "release", "--dry-run")
	if code != ExitOK || !strings.Contains(out, "Lock:    kured:kube-system/kured") || !strings.Contains(out, "dry run: would update DaemonSet kube-system/kured") {
		t.Fatalf("release, two locks: exit %d\n%s\n%s", code, out, errb)
	}
	if want := "rebootwatch: 2 locks match; picked --kind kured --lock kube-system/kured, the only one whose verdict allows release (fleetlock:default/fleetlock-default: verdict ghost: the holder is not a finished node — use reap, not release)\n"; !strings.HasPrefix(errb, want) {
		t.Fatalf("release, two locks: stderr %q, want it to start with %q", errb, want)
	}
	code, out, errb = runArgs(t, "", false, "reap", "--dry-run", "-o", "json")
	var doc struct{ Kind, Verdict, Outcome string }
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != ExitAttention || doc.Kind != "fleetlock" || doc.Verdict != "ghost" || doc.Outcome != "refused" ||
		!strings.Contains(errb, "picked --kind fleetlock --lock default/fleetlock-default, the only one whose verdict allows reap (kured:kube-system/kured: verdict orphaned") {
		t.Fatalf("reap, two locks (the ghost picked, refused by its other-nodes gate): exit %d %v\n%s\n%s", code, err, out, errb)
	}
	code, out, _ = runArgs(t, "", false, "release", "--lock", "kube-system/kured", "--holder", "worker-1", "--dry-run")
	if code != ExitOK || !strings.Contains(out, "dry run: would update DaemonSet kube-system/kured") {
		t.Fatalf("by --lock: exit %d\n%s", code, out)
	}
	for _, bad := range [][]string{
		{"release", "--kind", "etcd"},
		{"release", "--lock", "kured"},
		{"release", "--lock", "kube-system/nope", "--yes"},
		{"release", "--kind", "kured", "--holder", "worker-9", "--yes"},
	} {
		code, _, errb := runArgs(t, "", false, bad...)
		if code != ExitError || strings.Count(strings.TrimSpace(errb), "\n") != 0 || !strings.HasPrefix(errb, "rebootwatch: ") {
			t.Errorf("%v: exit %d, stderr %q", bad, code, errb)
		}
	}
}

// TestActionLogAfterHumanOutput: the action's structured log line never
// lands inside the human output. On a terminal (stdout and stderr one
// screen) it is written only with -v, after the Result line; from a script
// (no terminal) it is on stderr, after the whole human output.
func TestActionLogAfterHumanOutput(t *testing.T) {
	screen := func(stdin string, tty bool, args ...string) (int, string) {
		t.Helper()
		env, _, _ := testEnv(demoStart)
		// One screen: stdout and stderr interleaved as written; with -v,
		// client-go's informers write their diagnostics from their own
		// goroutines, as they do to a terminal.
		both := &lockedBuffer{}
		env.Stdout, env.Stderr = both, both
		env.Stdin = strings.NewReader(stdin)
		env.StdinTTY, env.StdoutTTY = tty, tty
		code := run(context.Background(), append(append([]string{}, demo22...), args...), env)
		return code, both.String()
	}
	// worker-1's release also uncordons it (two results): the log line
	// comes after both.
	for _, c := range []struct {
		name    string
		stdin   string
		tty     bool
		args    []string
		wantLog bool
		verbose bool
	}{
		{"terminal", "y\n", true, []string{"release", "--kind", "kured"}, false, false},
		{"terminal -v", "y\n", true, []string{"release", "--kind", "kured", "-v=1"}, true, true},
		{"script", "", false, []string{"release", "--kind", "kured", "--yes"}, true, false},
		{"script dry-run", "", false, []string{"release", "--kind", "kured", "--dry-run"}, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, s := screen(c.stdin, c.tty, c.args...)
			if code != ExitOK {
				t.Fatalf("exit %d\n%s", code, s)
			}
			if !c.wantLog {
				if strings.Contains(s, "level=") {
					t.Fatalf("a log line on the terminal without -v:\n%s", s)
				}
				return
			}
			// -v adds client-go's own diagnostics: look for the action's line.
			at := strings.Index(s, `level=INFO msg="reboot lock release"`)
			end := max(strings.LastIndex(s, "Result:  "), strings.LastIndex(s, "Uncordon: "))
			if at < 0 || end < 0 || at < end {
				t.Fatalf("the log line must follow the human output:\n%s", s)
			}
			if !c.verbose && strings.Count(s[at:], "\n") != 1 {
				t.Fatalf("after the log line, nothing else:\n%s", s)
			}
		})
	}
}

// TestPickByVerdict: of several matching locks, the one whose verdict
// allows the action is picked; with none or more than one, the choice is
// refused, naming every candidate and why.
func TestPickByVerdict(t *testing.T) {
	a := model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured"}
	b := model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-default"}
	c := model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-workers"}
	verdicts := map[model.LockRef]string{}
	allows := func(r model.LockRef) (bool, string) {
		why, ok := verdicts[r]
		return ok && why == "", why
	}
	verdicts[a], verdicts[b] = "", "verdict ghost: use reap"
	got, note, err := pickByVerdict([]model.LockRef{a, b}, model.ActionRelease, allows)
	if err != nil || got != a || note != "2 locks match; picked --kind kured --lock kube-system/kured, the only one whose verdict allows release (fleetlock:default/fleetlock-default: verdict ghost: use reap)" {
		t.Fatalf("one allowed: %v %q %v", got, note, err)
	}
	verdicts[c] = ""
	if _, _, err := pickByVerdict([]model.LockRef{a, b, c}, model.ActionRelease, allows); err == nil ||
		err.Error() != "3 locks match and the verdicts of 2 allow release; pick one: --kind fleetlock --lock default/fleetlock-workers, --kind kured --lock kube-system/kured" {
		t.Fatalf("two allowed: %v", err)
	}
	verdicts[a], verdicts[c] = "verdict held: wait", "verdict held: wait"
	if _, _, err := pickByVerdict([]model.LockRef{a, b, c}, model.ActionRelease, allows); err == nil ||
		err.Error() != "3 locks match and no verdict allows release; pick one: --kind fleetlock --lock default/fleetlock-default, --kind fleetlock --lock default/fleetlock-workers, --kind kured --lock kube-system/kured" {
		t.Fatalf("none allowed: %v", err)
	}
}
