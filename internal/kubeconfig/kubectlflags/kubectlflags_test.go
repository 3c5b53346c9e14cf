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

// Every kubectl cluster flag rebootwatch takes is registered under
// kubectl's name (and -s for --server) and lands in the override kubectl
// would make of it; nothing else is registered.
func TestEveryKubectlFlagReachesTheOverrides(t *testing.T) {
	var kc, ctx string
	f := New()
	Bind(f, &kc, &ctx)
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	f.AddFlags(fs)
	var names []string
	fs.VisitAll(func(fl *pflag.Flag) { names = append(names, fl.Name) })
	want := "as,as-group,as-uid,as-user-extra,certificate-authority,client-certificate,client-key,cluster,context," +
		"disable-compression,insecure-skip-tls-verify,kubeconfig,proxy-url,server,tls-server-name,token,user"
	if got := strings.Join(names, ","); got != want {
		t.Fatalf("flags:\n got %s\nwant %s", got, want)
	}
	if fs.ShorthandLookup("s") == nil || fs.ShorthandLookup("s").Name != "server" {
		t.Fatal("-s is not --server")
	}
	if err := fs.Parse([]string{
		"--kubeconfig", "/k", "--context", "a,b", "--cluster", "c", "--user", "u", "-s", "https://h:6443",
		"--token", "t", "--as", "alice", "--as-group", "g1", "--as-group", "g2", "--as-uid", "42",
		"--as-user-extra", "scopes=view", "--as-user-extra", "scopes=edit", "--as-user-extra", "dept=ops",
		"--as-user-extra", "no-equals-sign",
		"--certificate-authority", "/ca", "--client-certificate", "/crt", "--client-key", "/key",
		"--insecure-skip-tls-verify", "--tls-server-name", "tls.example", "--proxy-url", "http://proxy:3128",
		"--disable-compression",
	}); err != nil {
		t.Fatal(err)
	}
	if kc != "/k" || ctx != "a,b" {
		t.Fatalf("--kubeconfig %q --context %q", kc, ctx)
	}
	o := Overrides(f)
	a, c := o.AuthInfo, o.ClusterInfo
	if o.Context.Cluster != "c" || o.Context.AuthInfo != "u" || o.Context.Namespace != "" || o.CurrentContext != "" || o.Timeout != "" {
		t.Errorf("context overrides: %+v current %q timeout %q", o.Context, o.CurrentContext, o.Timeout)
	}
	if c.Server != "https://h:6443" || c.CertificateAuthority != "/ca" || !c.InsecureSkipTLSVerify ||
		c.TLSServerName != "tls.example" || c.ProxyURL != "http://proxy:3128" || !c.DisableCompression {
		t.Errorf("cluster overrides: %+v", c)
	}
	if a.Token != "t" || a.Impersonate != "alice" || strings.Join(a.ImpersonateGroups, ",") != "g1,g2" || a.ImpersonateUID != "42" ||
		a.ClientCertificate != "/crt" || a.ClientKey != "/key" || a.Username != "" || a.Password != "" {
		t.Errorf("auth overrides: %+v", a)
	}
	if got := a.ImpersonateUserExtra; len(got) != 2 || strings.Join(got["scopes"], ",") != "view,edit" || strings.Join(got["dept"], ",") != "ops" {
		t.Errorf("--as-user-extra: %v", got)
	}
	// No flag given: no override at all (the kubeconfig's values stand).
	f = New()
	f.AddFlags(pflag.NewFlagSet("t", pflag.ContinueOnError))
	if o := Overrides(f); o.AuthInfo.ImpersonateGroups != nil || o.AuthInfo.ImpersonateUserExtra != nil ||
		o.ClusterInfo.Server != "" || o.ClusterInfo.InsecureSkipTLSVerify || o.Context.Cluster != "" {
		t.Errorf("overrides without flags: %+v", o)
	}
}
