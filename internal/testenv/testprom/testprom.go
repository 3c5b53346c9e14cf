// Package testprom starts a real Prometheus (the system's `prometheus`
// binary, Debian's package in CI) on a free loopback port for integration
// tests, scraping the targets a test names every second and evaluating the
// alert rules it gives; for a fleet, with external labels, remote-writing
// into another one that receives remote writes.
//
// A test is skipped when the binary is missing, unless REBOOTWATCH_INTEGRATION
// is set, in which case it fails. It must only bind and contact 127.0.0.1, and
// must not be imported by non-test code.
package testprom

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// Options shape the Prometheus configuration.
type Options struct {
	// Targets are host:port addresses scraped every second under job "kured".
	Targets []string
	// Rules is the text of a rule file (groups: ...), optional.
	Rules string
	// ExternalLabels are the global external_labels (e.g. cluster: a), as
	// a per-cluster Prometheus of a fleet has them.
	ExternalLabels map[string]string
	// RemoteWrite, if set, is a base URL (another Server's) this one
	// remote-writes everything it scrapes and evaluates to, flushing
	// within about a second.
	RemoteWrite string
	// Receiver enables the remote-write receiver
	// (--web.enable-remote-write-receiver): the central Prometheus.
	Receiver bool
}

// Server is a running (or stopped) Prometheus.
type Server struct {
	// URL is the base URL, http://127.0.0.1:port.
	URL string

	bin, dir, addr string
	receiver       bool
	mu             sync.Mutex
	cmd            *exec.Cmd
	done           chan struct{}
	log            string
}

// Binary returns the path of prometheus, skipping or failing t when missing.
func Binary(t testing.TB) string {
	t.Helper()
	if testing.Short() && !testcluster.Integration() {
		t.Skip("integration test: skipped in -short mode")
	}
	p, err := exec.LookPath("prometheus")
	if err != nil {
		if testcluster.Integration() {
			t.Fatalf("prometheus binary not found (apt-get install prometheus): %v", err)
		}
		t.Skipf("prometheus not installed: %v", err)
	}
	return p
}

// Start writes the configuration and starts Prometheus; t.Cleanup stops it.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	port, err := testcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n")
	if len(o.ExternalLabels) > 0 {
		cfg.WriteString("  external_labels:\n")
		keys := make([]string, 0, len(o.ExternalLabels))
		for k := range o.ExternalLabels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&cfg, "    %s: %q\n", k, o.ExternalLabels[k])
		}
	}
	if o.RemoteWrite != "" {
		if !strings.HasPrefix(o.RemoteWrite, "http://127.0.0.1:") {
			t.Fatalf("testprom: remote write %q is not on loopback", o.RemoteWrite)
		}
		fmt.Fprintf(&cfg, "remote_write:\n  - url: %q\n    queue_config: {batch_send_deadline: 500ms, min_backoff: 100ms, max_backoff: 1s}\n",
			o.RemoteWrite+"/api/v1/write")
	}
	if o.Rules != "" {
		if err := os.WriteFile(filepath.Join(dir, "rules.yml"), []byte(o.Rules), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg.WriteString("rule_files:\n  - rules.yml\n")
	}
	cfg.WriteString("scrape_configs:\n  - job_name: kured\n    static_configs:\n      - targets: [")
	for i, tg := range o.Targets {
		if !strings.HasPrefix(tg, "127.0.0.1:") {
			t.Fatalf("testprom: target %q is not on loopback", tg)
		}
		if i > 0 {
			cfg.WriteString(", ")
		}
		fmt.Fprintf(&cfg, "%q", tg)
	}
	cfg.WriteString("]\n")
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Server{bin: bin, dir: dir, addr: fmt.Sprintf("127.0.0.1:%d", port), receiver: o.Receiver}
	s.URL = "http://" + s.addr
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(s.log)
			t.Logf("testprom: prometheus log:\n%s", tail(b))
		}
		s.Stop()
	})
	if err := s.start(); err != nil {
		t.Fatalf("testprom: %v", err)
	}
	return s
}

func tail(b []byte) []byte {
	const keep = 8 << 10
	if len(b) > keep {
		return b[len(b)-keep:]
	}
	return b
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = filepath.Join(s.dir, "prometheus.log")
	f, err := os.OpenFile(s.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	args := []string{
		"--config.file=" + filepath.Join(s.dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(s.dir, "data"),
		"--web.listen-address=" + s.addr,
		"--log.level=warn",
	}
	if s.receiver {
		args = append(args, "--web.enable-remote-write-receiver")
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(done) }()
	s.cmd, s.done = cmd, done
	cl := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := cl.Get(s.URL + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-done:
			b, _ := os.ReadFile(s.log)
			return fmt.Errorf("prometheus exited before it was ready:\n%s", tail(b))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("prometheus not ready after 60s")
		}
	}
}

// Stop stops Prometheus now (idempotent).
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	pgid := s.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-s.done
	}
	s.cmd = nil
}

// Restart starts Prometheus again on the same address and data directory.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		t.Fatalf("testprom: restart: %v", err)
	}
}
