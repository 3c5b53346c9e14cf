package cli

import (
	"bytes"
	"context"
	"encoding/json"
	goldenfile "github.com/rebootwatch/rebootwatch/internal/testenv/golden"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

// testEnv is a pipe-like environment at a fixed time.
func testEnv(now time.Time) (Env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	vars := map[string]string{"HOME": "/nonexistent-home"}
	return Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string { return vars[k] }, Now: func() time.Time { return now }}, &out, &errb
}

var demoStart = time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), string(got))
}

// The demo frozen 22 minutes in: cp-2 and cp-3 are done, worker-1 has
// rebooted and holds the kured lock without releasing, the ghost lease.
func TestDemoSnapshotJSONGolden(t *testing.T) {
	env, out, errb := testEnv(demoStart)
	code := run(context.Background(), []string{"--demo=kured", "--speed", "0", "--demo-at", "22m", "--snapshot", "-o", "json"}, env)
	if code != ExitAttention {
		t.Fatalf("exit %d, want 2 (ghost lease); stderr: %s", code, errb)
	}
	var snap model.Snapshot
	if err := json.Unmarshal(out.Bytes(), &snap); err != nil {
		t.Fatal(err)
	}
	// Every field of DESIGN §7 is present, with null where there is no value.
	var raw map[string]any
	_ = json.Unmarshal(out.Bytes(), &raw)
	for _, k := range []string{"schema", "generatedAt", "context", "sources", "fleet", "locks", "nodes", "volumes", "attention"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("snapshot lacks %q", k)
		}
	}
	if snap.Schema != "rebootwatch.snapshot/v1" || snap.Context != "demo" || len(snap.Nodes) != 7 {
		t.Fatalf("schema %q context %q nodes %d", snap.Schema, snap.Context, len(snap.Nodes))
	}
	golden(t, "demo-snapshot.json", out.Bytes())
}

func TestDemoSnapshotTextIsPlainWhenPiped(t *testing.T) {
	env, out, errb := testEnv(demoStart)
	code := run(context.Background(), []string{"--demo=kured", "--speed", "0", "--demo-at", "22m", "--snapshot"}, env)
	if code != ExitAttention {
		t.Fatalf("exit %d; stderr %s", code, errb)
	}
	if strings.Contains(out.String(), "\x1b[") {
		t.Fatal("colour escapes in piped output")
	}
	for _, want := range []string{"LOCKS", "NODES", "VOLUMES", "ATTENTION", "ghost", "fleetlock-default", "worker-1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	golden(t, "demo-snapshot.txt", out.Bytes())
}

func TestColourOnTerminalUnlessNoColor(t *testing.T) {
	for _, noColor := range []bool{false, true} {
		env, out, _ := testEnv(demoStart)
		env.StdoutTTY = true
		vars := map[string]string{}
		if noColor {
			vars["NO_COLOR"] = "1"
		}
		env.Getenv = func(k string) string { return vars[k] }
		run(context.Background(), []string{"--demo=kured", "--speed", "0", "--snapshot"}, env)
		if got := strings.Contains(out.String(), "\x1b["); got == noColor {
			t.Fatalf("NO_COLOR=%v: colour escapes present=%v", noColor, got)
		}
	}
}

func TestFlagErrorsAreOneLine(t *testing.T) {
	cases := []struct {
		args []string
		want string
		// usage: a usage error, printed as kubectl prints one (the
		// error, then a line pointing at --help).
		usage bool
	}{
		{[]string{"--nope"}, "unknown flag: --nope", true},
		{[]string{"--snapshot", "-o", "yaml"}, `unknown output format "yaml"`, false},
		{[]string{"--snapshot", "--kubeconfig", "/does/not/exist"}, "kubeconfig /does/not/exist", false},
		{[]string{"--snapshot"}, "no kubeconfig", false},
		{[]string{"frobnicate"}, `unknown command "frobnicate" for "rebootwatch"`, true},
		{[]string{"--kured-daemonset", "kured", "--snapshot"}, "want namespace/name", false},
	}
	for _, tc := range cases {
		env, _, errb := testEnv(demoStart)
		code := run(context.Background(), tc.args, env)
		checkErrorLines(t, tc.args, code, errb.String(), tc.want, tc.usage, "rebootwatch")
	}
}

// checkErrorLines checks that stderr holds exactly the error: one line
// ("rebootwatch: …"), or for a usage error kubectl's two ("error: …" and
// "See 'CMD --help' for usage."), with exit 1.
func checkErrorLines(t *testing.T, args []string, code int, stderr, want string, usage bool, cmd string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	switch {
	case code != ExitError:
		t.Errorf("%v: exit %d, want 1; stderr %q", args, code, stderr)
	case usage && (len(lines) != 2 || !strings.HasPrefix(lines[0], "error: ") || !strings.Contains(lines[0], want) ||
		lines[1] != "See '"+cmd+" --help' for usage."):
		t.Errorf("%v: stderr %q, want kubectl's usage error with %q and a hint to %s --help", args, stderr, want, cmd)
	case !usage && (len(lines) != 1 || !strings.HasPrefix(lines[0], "rebootwatch: ") || !strings.Contains(lines[0], want)):
		t.Errorf("%v: stderr %q, want one line with %q", args, stderr, want)
	}
}

func TestHelpAndVersion(t *testing.T) {
	env, out, _ := testEnv(demoStart)
	if code := run(context.Background(), []string{"--help"}, env); code != 0 || !strings.Contains(out.String(), "--snapshot") || !strings.Contains(out.String(), "-demo") {
		t.Fatalf("help: %d %s", code, out)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		env, out, _ = testEnv(demoStart)
		if code := run(context.Background(), args, env); code != 0 || !strings.HasPrefix(out.String(), "rebootwatch ") ||
			!strings.Contains(out.String(), runtime.Version()) || strings.Count(out.String(), "\n") != 1 {
			t.Fatalf("%v: %d %q", args, code, out)
		}
	}
}

// TestHelpListsEveryCommand: --help names every command of the tree, so
// none is documented only outside the binary.
func TestHelpListsEveryCommand(t *testing.T) {
	env, out, _ := testEnv(demoStart)
	if code := run(context.Background(), []string{"--help"}, env); code != ExitOK {
		t.Fatalf("help: exit %d", code)
	}
	_, cmds, ok := strings.Cut(out.String(), "Available Commands:\n")
	if !ok {
		t.Fatalf("--help lists no commands:\n%s", out)
	}
	for _, cmd := range []string{"watch", "release", "reap", "uncordon", "version", "completion"} {
		if !regexp.MustCompile(`(?m)^  ` + cmd + ` +\S`).MatchString(cmds) {
			t.Errorf("--help does not list %q:\n%s", cmd, out)
		}
	}
}

// TestOutputFormatWithoutAReportIsAnError: `rebootwatch --demo -o json`
// opened the dashboard and dropped -o silently; it is a usage error that
// points at --snapshot, while -o before a subcommand still counts.
func TestOutputFormatWithoutAReportIsAnError(t *testing.T) {
	env, out, errb := testEnv(demoStart)
	if code := run(context.Background(), []string{"--demo", "-o", "json"}, env); code != ExitError || out.Len() != 0 ||
		!strings.Contains(errb.String(), "rebootwatch --snapshot -o json") || strings.Count(errb.String(), "\n") != 1 {
		t.Errorf("--demo -o json: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	env, out, _ = testEnv(demoStart)
	if code := run(context.Background(), []string{"--demo", "-o", "json", "--snapshot"}, env); code != ExitAttention || !strings.Contains(out.String(), `"schema"`) {
		t.Errorf("--demo -o json --snapshot: exit %d, %.200s", code, out)
	}
}

func TestHelpPrintsUsageOnce(t *testing.T) {
	kubeconfigLine := regexp.MustCompile(`(?m)^ +--kubeconfig string `)
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"watch", "--help"}, {"release", "-h"}, {"help", "watch"}} {
		env, out, errb := testEnv(demoStart)
		code := run(context.Background(), args, env)
		if code != ExitOK || strings.Count(out.String(), "Usage:") != 1 || len(kubeconfigLine.FindAllString(out.String(), -1)) != 1 || errb.Len() != 0 {
			t.Errorf("%v: exit %d, %d usages on stdout, stderr %q", args, code, strings.Count(out.String(), "Usage:"), errb)
		}
	}
}

// A bad flag is reported as kubectl reports one: "error: …" (with a "did
// you mean" when a flag is close) and "See '… --help' for usage.", exit 1,
// nothing on stdout.
func TestBadFlagIsOneLineOnStderrWithAHint(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		cmd  string
	}{
		{[]string{"--nope"}, "unknown flag: --nope", "rebootwatch"},
		{[]string{"--sped", "3"}, "unknown flag: --sped (did you mean --seed or --speed?)", "rebootwatch"},
		{[]string{"watch", "--until-dne"}, "did you mean --until-done?", "rebootwatch watch"},
		{[]string{"--speed", "fast"}, `invalid argument "fast" for "--speed" flag`, "rebootwatch"},
		{[]string{"watch", "extra"}, `unknown command "extra" for "rebootwatch watch"`, "rebootwatch watch"},
		{[]string{"wacth"}, `unknown command "wacth" for "rebootwatch" (did you mean watch?)`, "rebootwatch"},
		// A value given with a space to a flag whose value is optional
		// (issue 23 §4), and a mode named as a command.
		{[]string{"--demo", "kured"}, `unknown command "kured" for "rebootwatch" (did you mean --demo=kured?)`, "rebootwatch"},
		{[]string{"--demo", "kured", "watch"}, `unknown command "kured" for "rebootwatch" (did you mean --demo=kured?)`, "rebootwatch"},
		// issue 34 §3: a subcommand or a scenario misspelt after --demo.
		{[]string{"--demo", "watc"}, `unknown command "watc" for "rebootwatch" (did you mean --demo watch?)`, "rebootwatch"},
		{[]string{"--demo", "kurd"}, `unknown command "kurd" for "rebootwatch" (did you mean --demo=kured?)`, "rebootwatch"},
		{[]string{"snapshot"}, `unknown command "snapshot" for "rebootwatch" (did you mean --snapshot?)`, "rebootwatch"},
		{[]string{"--demo=kured", "snapshot", "-o", "json"}, `unknown command "snapshot" for "rebootwatch" (did you mean --snapshot?)`, "rebootwatch"},
	} {
		env, out, errb := testEnv(demoStart)
		code := run(context.Background(), tc.args, env)
		if out.Len() != 0 {
			t.Errorf("%v: %d bytes on stdout", tc.args, out.Len())
		}
		checkErrorLines(t, tc.args, code, errb.String(), tc.want, true, tc.cmd)
	}
}

// Conflicting modes and out-of-range values are refused with one line that
// names the flag and the allowed range.
func TestFlagValidation(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--snapshot", "watch"}, "--snapshot and watch"},
		{[]string{"--snapshot", "release"}, "--snapshot and release"},
		{[]string{"--snapshot", "reap"}, "--snapshot and reap"},
		{[]string{"--all-contexts", "--context", "x", "--snapshot"}, "--all-contexts and --context"},
		{[]string{"--demo", "--speed", "NaN", "--snapshot"}, "--speed must be a number from 0 to 10000"},
		{[]string{"--demo", "--speed", "+Inf", "--snapshot"}, "--speed must be a number from 0 to 10000"},
		{[]string{"--demo", "--speed", "-1", "--snapshot"}, "--speed must be a number from 0 to 10000"},
		{[]string{"--demo", "--demo-at", "100000h", "--snapshot"}, "--demo-at must be from 0 to 24h"},
		{[]string{"--demo", "--demo-at", "-1m", "--snapshot"}, "--demo-at must be from 0 to 24h"},
		{[]string{"--demo", "--sync-timeout", "0", "--snapshot"}, "--sync-timeout must be from 1s to 1h"},
		{[]string{"--demo", "--prometheus-interval", "1ms", "--snapshot"}, "--prometheus-interval must be from 5s to 1h"},
		{[]string{"--demo", "--prometheus-interval", "0", "--snapshot"}, "--prometheus-interval must be from 5s to 1h"},
		{[]string{"--demo", "--prometheus-interval", "2h", "--snapshot"}, "--prometheus-interval must be from 5s to 1h"},
		{[]string{"--demo", "--request-timeout", "0", "--snapshot"}, "--request-timeout must be from 1s to 10m"},
		{[]string{"--demo", "watch", "--sync-timeout", "0"}, "--sync-timeout must be from 1s to 1h"},
		// Issue 22 §5: 0 silently meant 10m; a bad namespace read as not-installed.
		{[]string{"--demo", "--orphan-grace", "0", "--snapshot"}, "--orphan-grace must be positive"},
		{[]string{"--demo", "--drain-bound", "0", "--snapshot"}, "--drain-bound must be positive"},
		{[]string{"--demo", "--orphan-grace", "-1s", "--snapshot"}, "--orphan-grace must be positive"},
		{[]string{"--demo", "--fleetlock-namespace", "Bad_NS!", "--snapshot"}, `--fleetlock-namespace "Bad_NS!" is not a namespace name`},
		{[]string{"--demo", "--fleetlock-namespace", "", "watch"}, `--fleetlock-namespace "" is not a namespace name`},
	} {
		env, out, errb := testEnv(demoStart)
		code := run(context.Background(), tc.args, env)
		lines := strings.Split(strings.TrimRight(errb.String(), "\n"), "\n")
		if code != ExitError || out.Len() != 0 || len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q, want one line with %q", tc.args, code, out, errb, tc.want)
		}
	}
}

// As the kubectl plugin, help, examples and hints name the command as its
// user typed it.
func TestPluginNamesItselfKubectlRebootwatch(t *testing.T) {
	env, out, _ := testEnv(demoStart)
	if code := execute(context.Background(), []string{"--help"}, env, execOptions{displayName: PluginName}); code != ExitOK ||
		!strings.Contains(out.String(), "kubectl rebootwatch [flags]") || !strings.Contains(out.String(), "  kubectl rebootwatch --demo") ||
		strings.Contains(out.String(), "\n  rebootwatch ") {
		t.Fatalf("plugin --help: exit %d\n%s", code, out)
	}
	env, _, errb := testEnv(demoStart)
	code := execute(context.Background(), []string{"watch", "--nope"}, env, execOptions{displayName: PluginName})
	checkErrorLines(t, []string{"watch", "--nope"}, code, errb.String(), "unknown flag: --nope", true, "kubectl rebootwatch watch")
}

// docs/cli.md's flag reference is the one the command tree renders: a flag
// or command added, removed or reworded without `go run ./hack/gendocs`
// fails here.
func TestFlagReference(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	want, ok := ReplaceReference(string(b), Reference())
	if !ok {
		t.Fatal("docs/cli.md has no generated flag reference markers")
	}
	if want != string(b) {
		t.Fatal("docs/cli.md's flag reference is stale: run `go run ./hack/gendocs`")
	}
	// Every command and every flag of the tree is in it.
	ref := Reference()
	for _, name := range []string{"watch", "release", "reap", "uncordon", "version", "completion"} {
		if !strings.Contains(ref, "#### `rebootwatch "+name) {
			t.Errorf("reference lacks %s", name)
		}
	}
	for _, flag := range []string{"--kubeconfig", "--context", "--as-group", "--token", "--server", "--snapshot", "--until-done", "--keep-cordoned", "--node"} {
		if !strings.Contains(ref, flag) {
			t.Errorf("reference lacks %s", flag)
		}
	}
}
