package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
