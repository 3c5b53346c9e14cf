package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// twoClusters writes one kubeconfig with the contexts "alpha" and "beta":
// alpha is the package's shared apiserver (cliCluster), reachable; beta
// names a loopback port nothing listens on, so it refuses connections.
func twoClusters(t *testing.T) string {
	t.Helper()
	a := cliCluster(t)
	port, err := testcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	servers := []struct{ name, url, token string }{
		{"alpha", a.URL, a.Admin.BearerToken},
		{"beta", fmt.Sprintf("https://127.0.0.1:%d", port), "beta-token"},
	}
	cfg := "apiVersion: v1\nkind: Config\nclusters:\n"
	for _, x := range servers {
		cfg += fmt.Sprintf("- name: %s\n  cluster:\n    server: %s\n    insecure-skip-tls-verify: true\n", x.name, x.url)
	}
	cfg += "users:\n"
	for _, x := range servers {
		cfg += fmt.Sprintf("- name: %s\n  user:\n    token: %s\n", x.name, x.token)
	}
	cfg += "contexts:\n"
	for _, n := range []string{"alpha", "beta"} {
		cfg += fmt.Sprintf("- name: %s\n  context:\n    cluster: %s\n    user: %s\n", n, n, n)
	}
	cfg += "current-context: alpha\n"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// bounded runs f and fails the test if it has not returned within limit:
// one unreachable cluster must never hold up the others.
func bounded(t *testing.T, limit time.Duration, f func() int) int {
	t.Helper()
	done := make(chan int, 1)
	go func() { done <- f() }()
	select {
	case code := <-done:
		return code
	case <-time.After(limit):
		t.Fatalf("did not return within %s: an unreachable cluster blocked the run", limit)
		return -1
	}
}

func multiEnv() (Env, *lockedBuffer, *lockedBuffer) {
	out, errb := &lockedBuffer{}, &lockedBuffer{}
	return Env{Stdin: strings.NewReader(""), Stdout: out, Stderr: errb,
		Getenv: func(k string) string {
			if k == "HOME" {
				return "/nonexistent-home"
			}
			return ""
		}, Now: time.Now}, out, errb
}

func TestMultiClusterSnapshotAndWatch(t *testing.T) {
	kc := twoClusters(t)
	flags := []string{"--kubeconfig", kc, "--request-timeout", "5s", "--sync-timeout", "10s"}

	t.Run("snapshot json", func(t *testing.T) {
		env, out, errb := multiEnv()
		args := append(append([]string{}, flags...), "--context", "alpha,beta", "--snapshot", "-o", "json")
		code := bounded(t, 2*time.Minute, func() int { return run(context.Background(), args, env) })
		if code != ExitError {
			t.Fatalf("exit %d, want 1 (beta unreachable, alpha fine); stderr:\n%s", code, errb.String())
		}
		var snaps []model.Snapshot
		if err := json.Unmarshal([]byte(out.String()), &snaps); err != nil {
			t.Fatalf("%v:\n%s", err, out.String())
		}
		if len(snaps) != 2 || snaps[0].Context != "alpha" || snaps[1].Context != "beta" {
			t.Fatalf("want alpha then beta, got %d snapshots: %+v", len(snaps), snaps)
		}
		for _, s := range snaps {
			if s.Schema != model.SnapshotSchema {
				t.Fatalf("%s: schema %q", s.Context, s.Schema)
			}
		}
		status := func(s model.Snapshot) model.SnapshotSource {
			for _, src := range s.Sources {
				if src.Name == model.SourceNodes {
					return src
				}
			}
			return model.SnapshotSource{}
		}
		if st := status(snaps[0]); st.Status != model.StatusOK {
			t.Fatalf("alpha nodes source %+v, want ok", st)
		}
		// beta's node source says why (error) — or, when it never answered
		// at all within --sync-timeout, is absent: never ok.
		if st := status(snaps[1]); st.Status == model.StatusOK || (st.Status != "" && st.Message == "") {
			t.Fatalf("beta nodes source %+v, want error with the reason (or no report)", st)
		}
		if len(snaps[1].Nodes) != 0 {
			t.Fatalf("beta snapshot %+v", snaps[1])
		}
		if !strings.Contains(errb.String(), `could not read the cluster "beta"`) || strings.Contains(errb.String(), `"alpha"`) {
			t.Fatalf("stderr should name beta only:\n%s", errb.String())
		}
	})

	t.Run("snapshot text, all contexts", func(t *testing.T) {
		env, out, _ := multiEnv()
		args := append(append([]string{}, flags...), "--all-contexts", "--snapshot")
		code := bounded(t, 2*time.Minute, func() int { return run(context.Background(), args, env) })
		if code != ExitError {
			t.Fatalf("exit %d, want 1", code)
		}
		txt := out.String()
		ia, ib := strings.Index(txt, "context alpha"), strings.Index(txt, "context beta")
		if ia < 0 || ib < 0 || ia > ib {
			t.Fatalf("want a section for alpha then beta:\n%s", txt)
		}
	})

	t.Run("watch", func(t *testing.T) {
		env, out, errb := multiEnv()
		args := append(append([]string{}, flags...), "--context", "alpha,beta", "--until-done", "--tick", "100ms")
		code := bounded(t, 2*time.Minute, func() int { return run(context.Background(), append([]string{"watch"}, args...), env) })
		if code != ExitError {
			t.Fatalf("exit %d, want 1 (alpha done, beta unreachable); stderr:\n%s\nout:\n%s", code, errb.String(), out.String())
		}
		txt := out.String()
		t.Logf("watch output:\n%s", txt)
		for _, want := range []string{
			"[beta] ✗ cluster beta unreachable: no",
			"[alpha]   start   watching alpha: 0/0 upgraded",
			"[alpha]   done    done: no node needs a reboot and every lock is free",
		} {
			if !strings.Contains(txt, want) {
				t.Fatalf("output lacks %q:\n%s", want, txt)
			}
		}
		if strings.Contains(txt, "[beta]   start") {
			t.Fatalf("beta was never read, yet it started:\n%s", txt)
		}
	})

	t.Run("watch json", func(t *testing.T) {
		env, out, _ := multiEnv()
		args := append(append([]string{}, flags...), "--context", "alpha,beta", "--until-done", "--tick", "100ms", "-o", "json")
		bounded(t, 2*time.Minute, func() int { return run(context.Background(), append([]string{"watch"}, args...), env) })
		seen := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			seen[fmt.Sprint(m["context"], "/", m["kind"])] = true
		}
		for _, k := range []string{"beta/cluster", "alpha/start", "alpha/done"} {
			if !seen[k] {
				t.Fatalf("no %s line: %v", k, seen)
			}
		}
	})
}

func TestMultiContextErrors(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: x\n  cluster:\n    server: https://127.0.0.1:1\ncontexts:\n- name: x\n  context:\n    cluster: x\ncurrent-context: x\n"
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--kubeconfig", kc, "--context", "x,nope", "--snapshot"}, `kubeconfig has no context "nope"`},
		{[]string{"--kubeconfig", kc, "--context", ",", "--snapshot"}, `names no context`},
		{[]string{"--demo=kured", "--all-contexts", "--snapshot"}, "--all-contexts needs a kubeconfig"},
		{[]string{"--kubeconfig", kc, "--context", "x,nope", "watch"}, `kubeconfig has no context "nope"`},
	} {
		var out, errb bytes.Buffer
		env := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Now: time.Now}
		if code := run(context.Background(), c.args, env); code != ExitError || !strings.Contains(errb.String(), c.want) {
			t.Fatalf("%v: exit %d, stderr %q (want %q)", c.args, code, errb.String(), c.want)
		}
	}
}

// Several demo clusters: each its own fleet, named as asked.
func TestMultiDemoSnapshot(t *testing.T) {
	env, out, errb := multiEnv()
	env.Now = func() time.Time { return watchStart }
	code := run(context.Background(), []string{"--demo=kured", "--speed", "0", "--demo-at", "22m", "--context", "east,west", "--snapshot", "-o", "json"}, env)
	if code != ExitAttention {
		t.Fatalf("exit %d, want 2; stderr %s", code, errb.String())
	}
	var snaps []model.Snapshot
	if err := json.Unmarshal([]byte(out.String()), &snaps); err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 2 || snaps[0].Context != "east" || snaps[1].Context != "west" {
		t.Fatalf("snapshots %+v", snaps)
	}
	if snaps[0].Fleet.Nodes != 7 || snaps[1].Fleet.Nodes != 7 {
		t.Fatalf("fleets %+v %+v", snaps[0].Fleet, snaps[1].Fleet)
	}
}
