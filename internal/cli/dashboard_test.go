package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/themes"
)

func envWith(vars map[string]string) Env {
	return Env{Getenv: func(k string) string { return vars[k] }}
}

func TestChooseTheme(t *testing.T) {
	dir := t.TempDir()
	// No flag, no user file: background detection decides (nothing fixed).
	tc, err := chooseTheme(envWith(map[string]string{"XDG_CONFIG_HOME": dir}), "")
	if err != nil || tc.fixed || tc.start != nil || tc.noColor {
		t.Fatalf("default = %+v, %v", tc, err)
	}
	// A built-in name.
	tc, err = chooseTheme(envWith(nil), "light")
	if err != nil || !tc.fixed || tc.start.Name != themes.NameLight {
		t.Fatalf("--theme light = %+v, %v", tc, err)
	}
	// A file.
	p := filepath.Join(dir, "mine.yaml")
	if err := os.WriteFile(p, []byte("base: dark\ncolors:\n  accent: '#ff00ff'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tc, err = chooseTheme(envWith(nil), p)
	if err != nil || !tc.fixed || tc.start.Name != "mine" || tc.user != tc.start {
		t.Fatalf("--theme FILE = %+v, %v", tc, err)
	}
	// A bad file names the key.
	if err := os.WriteFile(p, []byte("colours: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err = chooseTheme(envWith(nil), p); err == nil || !strings.Contains(err.Error(), `unknown key "colours"`) {
		t.Fatalf("bad theme error = %v", err)
	}
	if _, err = chooseTheme(envWith(nil), filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "built-in themes") {
		t.Fatalf("missing theme error = %v", err)
	}
	// The user theme file is picked up from XDG_CONFIG_HOME.
	up := filepath.Join(dir, "rebootwatch", "theme.yaml")
	if err := os.MkdirAll(filepath.Dir(up), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(up, []byte("name: home\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tc, err = chooseTheme(envWith(map[string]string{"XDG_CONFIG_HOME": dir, "NO_COLOR": "1"}), "")
	if err != nil || tc.start == nil || tc.start.Name != "home" || !tc.noColor {
		t.Fatalf("user theme + NO_COLOR = %+v, %v", tc, err)
	}
}

func TestDashboardNeedsATerminal(t *testing.T) {
	var stderr bytes.Buffer
	env := Env{Stderr: &stderr, Getenv: func(string) string { return "" }}
	c := DefaultCommon()
	if code := runDashboard(context.Background(), env, &c); code != ExitError {
		t.Fatalf("exit %d; want %d", code, ExitError)
	}
	if !strings.Contains(stderr.String(), "needs a terminal") {
		t.Fatalf("stderr = %q", stderr.String())
	}
}

// ttyEnv pretends to be a terminal whose keyboard types keys.
func ttyEnv(keys string, stdout, stderr *bytes.Buffer) Env {
	return Env{Stdin: strings.NewReader(keys), Stdout: stdout, Stderr: stderr, StdoutTTY: true, StdinTTY: true,
		Getenv: func(k string) string {
			if k == "XDG_CONFIG_HOME" || k == "HOME" {
				return "/nonexistent"
			}
			return ""
		}, Now: time.Now}
}

// TestDashboardSeveralClusters: --demo --context east,west opens the cluster
// list over two demo fleets (q quits it); bad context lists are clear errors
// before any screen.
func TestDashboardSeveralClusters(t *testing.T) {
	var out, errb bytes.Buffer
	c := DefaultCommon()
	c.Demo, c.Context, c.Theme = true, "east,west", "dark"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a guard against a hang, not a timing assertion
	defer cancel()
	if code := runDashboard(ctx, ttyEnv("q", &out, &errb), &c); code != ExitOK {
		t.Fatalf("exit %d; stderr %s", code, errb.String())
	}
	if ctx.Err() != nil {
		t.Fatal("q did not end the cluster list")
	}

	c = DefaultCommon()
	c.Demo, c.AllContexts = true, true
	errb.Reset()
	if code := runDashboard(context.Background(), ttyEnv("", &out, &errb), &c); code != ExitError || !strings.Contains(errb.String(), "--all-contexts needs a kubeconfig") {
		t.Fatalf("--demo --all-contexts: exit %d, stderr %q", code, errb.String())
	}

	kc := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: a, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: a, context: {cluster: a, user: u}}]
current-context: a
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c = DefaultCommon()
	c.Kubeconfig, c.Context = kc, "a,b"
	errb.Reset()
	if code := runDashboard(context.Background(), ttyEnv("", &out, &errb), &c); code != ExitError || !strings.Contains(errb.String(), `kubeconfig has no context "b"`) {
		t.Fatalf("--context a,b: exit %d, stderr %q", code, errb.String())
	}
}
