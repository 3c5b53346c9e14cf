package agent

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/internal/buildinfo"
)

func TestMainExitCodes(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"help", []string{"--help"}, 0, "-leader-elect-lease-duration"},
		{"bad flag", []string{"--interval=0s"}, 2, "--interval must be positive"},
		{"no cluster config", nil, 1, "no cluster configuration"},
		{"empty kubeconfig", []string{"--kubeconfig=" + empty}, 1, "no cluster configuration"},
	} {
		var out, errOut bytes.Buffer
		code := Main(tc.args, &out, &errOut)
		if code != tc.code || !strings.Contains(out.String()+errOut.String(), tc.want) {
			t.Errorf("%s: exit %d, want %d; output %q %q, want %q", tc.name, code, tc.code, out.String(), errOut.String(), tc.want)
		}
		if strings.Contains(out.String()+errOut.String(), "localhost") {
			t.Errorf("%s: mentions localhost: a silent fallback?", tc.name)
		}
	}
}

// The alert gate's configuration is a decision the startup log states.
func TestAlertGateDecision(t *testing.T) {
	c := Defaults()
	if got := AlertGateDecision(c); !strings.HasPrefix(got, "kured's or off: no --prometheus-url") {
		t.Fatalf("no Prometheus: %q", got)
	}
	c.PrometheusURL = "http://prometheus:9090"
	if got := AlertGateDecision(c); !strings.HasPrefix(got, "off: no --prometheus-alerts") {
		t.Fatalf("no filter: %q", got)
	}
	c.PrometheusAlerts = "^(RebootRequired|NodeDown)$"
	if got := AlertGateDecision(c); !strings.HasPrefix(got, "on:") {
		t.Fatalf("filter: %q", got)
	}
}

// The agent's startup log states its --prometheus-url with the one masking
// function of every surface (issue 22 §6): a password or a ?token= never
// reaches the log.
func TestStartupLogMasksPrometheusURL(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1'}\n" +
		"contexts:\n- name: c\n  context: {cluster: c, user: u}\nusers:\n- name: u\n  user: {token: t}\ncurrent-context: c\n"
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"--kubeconfig=" + kc, "--leader-elect=false", "--interval=1h",
			"--health-probe-bind-address=127.0.0.1:0", "--metrics-bind-address=127.0.0.1:0",
			"--prometheus-url=http://admin:hunter2@127.0.0.1:1/?token=s3cret"}, out, errOut,
			func(string) string { return "" }, func() (*rest.Config, error) { return nil, errors.New("not in a cluster") }, "100")
	}()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(out.String(), `"msg":"starting"`) {
		select {
		case code := <-done:
			t.Fatalf("the agent ended (%d) before its startup log:\n%s\n%s", code, out.String(), errOut.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no startup log:\n%s", out.String())
		}
	}
	// The agent stops on SIGTERM, its signal handler registered before it
	// logs "starting".
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-done
	var start string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, `"msg":"starting"`) {
			start = l
		}
	}
	if strings.Contains(out.String()+errOut.String(), "hunter2") || strings.Contains(out.String()+errOut.String(), "s3cret") ||
		!strings.Contains(start, `"prometheusURL":"http://admin:xxxxx@127.0.0.1:1/?token=xxxxx"`) {
		t.Fatalf("startup log:\n%s\n%s", start, errOut.String())
	}
}

// The agent's flags follow the CLI's convention (issue 23 §2): --version
// and --help (-h) answer on stdout with exit 0, and nothing on stderr; a
// bad flag is an error on stderr with exit 2 and nothing on stdout.
func TestMainVersionAndHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--version"}, "rebootwatch-agent " + buildinfo.Read().Version + " ("},
		{[]string{"--help"}, "--leader-elect-lease-duration duration"},
		{[]string{"-h"}, "--leader-elect-lease-duration duration"},
		// Help and version answer before the other flags are validated.
		{[]string{"--interval=0s", "--help"}, "Usage:\n  rebootwatch-agent [flags]"},
		{[]string{"--version", "--interval=0s"}, "rebootwatch-agent "},
	} {
		var out, errOut bytes.Buffer
		code := Main(tc.args, &out, &errOut)
		if code != 0 || !strings.Contains(out.String(), tc.want) || errOut.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 0 and %q on stdout only", tc.args, code, out.String(), errOut.String(), tc.want)
		}
	}
	var out, errOut bytes.Buffer
	if code := Main([]string{"--no-such-flag"}, &out, &errOut); code != 2 || out.Len() != 0 ||
		!strings.Contains(errOut.String(), "unknown flag: --no-such-flag") || !strings.Contains(errOut.String(), "rebootwatch-agent --help") {
		t.Errorf("bad flag: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}
