package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hangingCluster is a kubeconfig whose API server accepts connections and
// never answers; accepted is signalled on the first connection.
func hangingCluster(t *testing.T) (kubeconfig string, accepted chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = make(chan struct{})
	var conns []net.Conn
	go func() {
		first := true
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			if first {
				first = false
				close(accepted)
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
	})
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: hang
  cluster:
    server: http://%s
contexts:
- name: hang
  context:
    cluster: hang
    user: u
- name: hang2
  context:
    cluster: hang
    user: u
users:
- name: u
  user:
    token: t
current-context: hang
`, ln.Addr())
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return kc, accepted
}

// Ctrl-C or SIGTERM (the context ends) while --snapshot waits for its first
// sync prints no report (no "0/0 upgraded to ?"): exit 130, one line.
func TestInterruptedSnapshotPrintsNoReport(t *testing.T) {
	for _, extra := range [][]string{nil, {"-o", "json"}, {"--context", "hang,hang2"}} {
		kc, accepted := hangingCluster(t)
		env, out, errb := testEnv(demoStart)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int)
		args := append([]string{"--snapshot", "--kubeconfig", kc, "--sync-timeout", "10m"}, extra...)
		go func() { done <- run(ctx, args, env) }()
		select {
		case <-accepted:
		case code := <-done:
			t.Fatalf("%v: ended (%d) before connecting: %s", extra, code, errb)
		}
		cancel()
		code := <-done
		if code != ExitInterrupted || out.Len() != 0 || !strings.Contains(errb.String(), "interrupted") {
			t.Fatalf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", extra, code, out, errb)
		}
	}
}

// -v shows client-go's diagnostics (requests, reflectors) on stderr, as
// docs/usage.md says; without it only rebootwatch's one line.
func TestVerboseShowsClientGoDiagnostics(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1'}\n" +
		"contexts:\n- name: c\n  context: {cluster: c, user: u}\nusers:\n- name: u\n  user: {token: bad}\ncurrent-context: c\n"
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, verbose := range []bool{true, false} {
		env, _, _ := testEnv(demoStart)
		errb := &lockedBuffer{} // client-go logs from its own goroutines
		env.Stderr = errb
		args := []string{"--snapshot", "--kubeconfig", kc, "--sync-timeout", "2s"}
		if verbose {
			args = append(args, "-v")
		}
		code := run(context.Background(), args, env)
		got := errb.String()
		if code != ExitError {
			t.Fatalf("-v=%v: exit %d", verbose, code)
		}
		if verbose && !strings.Contains(got, "https://127.0.0.1:1/api/v1/nodes") {
			t.Fatalf("-v printed no client-go diagnostics:\n%s", got)
		}
		if !verbose && strings.Count(strings.TrimSpace(got), "\n") != 0 {
			t.Fatalf("without -v, more than one line:\n%s", got)
		}
	}
}
