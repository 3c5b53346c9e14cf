package kubectlflags

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/rebootwatch/rebootwatch/internal/kubeconfig"
	"github.com/rebootwatch/rebootwatch/internal/kubeconfig/kubeconfigtest"
)

// The shared fixture, under the short names these tests use.
const twoClusters = kubeconfigtest.TwoClusters

var (
	write = kubeconfigtest.Write
	env   = kubeconfigtest.Env
)

// kubectl's flags, parsed from a command line as cobra parses them, reach
// the rest config: --cluster, --user, --server, --token, --as, --as-group,
// --certificate-authority, --insecure-skip-tls-verify.
func TestKubectlFlagsOverrideTheKubeconfig(t *testing.T) {
	path := write(t, t.TempDir(), twoClusters)
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, []byte("not read until a connection"), 0o600); err != nil {
		t.Fatal(err)
	}
	parse := func(args ...string) kubeconfig.Loader {
		t.Helper()
		var kc, ctx string
		f := New()
		Bind(f, &kc, &ctx)
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		f.AddFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return kubeconfig.Loader{Kubeconfig: kc, Overrides: Overrides(f), Getenv: env(nil)}
	}
	l := parse("--kubeconfig", path, "--cluster", "b", "--user", "v", "--as", "alice", "--as-group", "g1", "--as-group", "g2")
	cfg, name, err := l.RESTConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.2:6443" || cfg.BearerToken != "other" || cfg.Impersonate.UserName != "alice" ||
		strings.Join(cfg.Impersonate.Groups, ",") != "g1,g2" || name != "alpha" {
		t.Fatalf("overrides not applied: host %s token %q impersonate %+v context %s", cfg.Host, cfg.BearerToken, cfg.Impersonate, name)
	}
	l = parse("--kubeconfig", path, "--server", "https://10.9.8.7:6443", "--token", "tok", "--insecure-skip-tls-verify")
	if cfg, _, err = l.RESTConfig("beta"); err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://10.9.8.7:6443" || cfg.BearerToken != "tok" || !cfg.Insecure {
		t.Fatalf("--server/--token/--insecure-skip-tls-verify: %+v", cfg)
	}
	l = parse("--kubeconfig", path, "--certificate-authority", ca)
	if cfg, _, err = l.RESTConfig(""); err != nil {
		t.Fatal(err)
	}
	if cfg.CAFile != ca {
		t.Fatalf("--certificate-authority: %q", cfg.CAFile)
	}
	// --server alone (no kubeconfig anywhere) is enough, as with kubectl.
	l = parse("--server", "https://10.9.8.7:6443", "--token", "tok")
	l.Getenv = env(map[string]string{"HOME": t.TempDir()})
	if cfg, name, err = l.RESTConfig(""); err != nil || cfg.Host != "https://10.9.8.7:6443" || name != "https://10.9.8.7:6443" {
		t.Fatalf("--server alone: %v %q %v", cfg, name, err)
	}
	// The flags that are not rebootwatch's are not registered.
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	New().AddFlags(fs)
	for _, name := range []string{"namespace", "cache-dir", "request-timeout"} {
		if fs.Lookup(name) != nil {
			t.Errorf("--%s is registered", name)
		}
	}
}
