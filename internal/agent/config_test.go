package agent

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/model"
)

func TestParseFlagsDefaults(t *testing.T) {
	c, err := ParseFlags(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := Defaults()
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("defaults differ:\n got %+v\nwant %+v", c, want)
	}
	// DESIGN §9 values.
	if c.Interval != 60*time.Second || c.RequestTimeout != 20*time.Second || !c.LeaderElect || c.DryRun || c.ReleaseOrphaned ||
		!c.ReapGhost || !c.ReapExpired || c.OrphanGrace != 10*time.Minute ||
		c.HealthProbeBindAddress != ":8081" || c.MetricsBindAddress != ":8080" || !c.ReclaimStartupPages {
		t.Fatalf("defaults are not DESIGN §9's: %+v", c)
	}
}

// TestParseFlagsCoordinatorOff: --kured=false / --fleetlock=false turn
// that coordinator's source off, with the flag in its disabled message.
func TestParseFlagsCoordinatorOff(t *testing.T) {
	if off := Defaults().DisabledKinds(); len(off) != 0 {
		t.Fatalf("defaults turn off %v", off)
	}
	for flag, kind := range map[string]model.LockKind{"--kured=false": model.LockKured, "--fleetlock=false": model.LockFleetlock} {
		c, err := ParseFlags([]string{flag}, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		if off := c.DisabledKinds(); len(off) != 1 || !strings.Contains(off[kind], flag) {
			t.Errorf("%s: disabled %v", flag, off)
		}
	}
}

func TestParseFlags(t *testing.T) {
	c, err := ParseFlags([]string{"--interval=5s", "--request-timeout=2s", "--dry-run", "--release-orphaned", "--orphan-grace=1m",
		"--leader-elect=false", "--leader-election-namespace=ops", "--health-probe-bind-address=127.0.0.1:9000",
		"--metrics-bind-address=127.0.0.1:9000", "--kured-daemonset=kube-system/kured", "--fleetlock-namespace=fl",
		"--notify-url=generic+http://127.0.0.1:9/hook", "--notify-url=slack://token@channel", "--notify-blocked-after=1h",
		"--prometheus-url=http://prometheus.monitoring:9090", "--prometheus-alerts=^(KubeNodeNotReady|Watchdog)$", "--prometheus-token-file=/var/run/token",
		"--reclaim-startup-pages=false"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Interval != 5*time.Second || c.RequestTimeout != 2*time.Second || !c.DryRun || !c.ReleaseOrphaned || c.OrphanGrace != time.Minute ||
		c.LeaderElect || c.LeaderElectionNamespace != "ops" || c.HealthProbeBindAddress != c.MetricsBindAddress ||
		c.KuredDaemonSet != "kube-system/kured" || c.FleetlockNamespace != "fl" || c.NotifyBlockedAfter != time.Hour ||
		!slices.Equal(c.NotifyURLs, []string{"generic+http://127.0.0.1:9/hook", "slack://token@channel"}) ||
		c.PrometheusURL != "http://prometheus.monitoring:9090" || c.PrometheusAlerts != "^(KubeNodeNotReady|Watchdog)$" ||
		c.PrometheusTokenFile != "/var/run/token" || c.ReclaimStartupPages {
		t.Fatalf("parsed %+v", c)
	}
}

func TestParseFlagsErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--interval=0s"}, "--interval must be positive"},
		{[]string{"--request-timeout=-1s"}, "--request-timeout must be positive"},
		{[]string{"--orphan-grace=-1s"}, "--orphan-grace must be positive"},
		// Issue 22 §5: 0 is refused, never taken as the default 10m.
		{[]string{"--orphan-grace=0"}, "--orphan-grace must be positive"},
		{[]string{"--fleetlock-namespace=Bad_NS!"}, `--fleetlock-namespace "Bad_NS!" is not a namespace name`},
		{[]string{"--kured-daemonset=kured"}, "namespace/name"},
		{[]string{"--kured=false", "--fleetlock=false", "--coordinators=false"}, "leave no coordinator to watch"},
		{[]string{"--coordinators=zincati"}, `unknown coordinator kind "zincati": the registered kinds are kured, fleetlock, suc, flatcar`},
		{[]string{"--leader-elect-lease-duration=5s", "--leader-elect-renew-deadline=5s"}, "must be greater than --leader-elect-renew-deadline"},
		{[]string{"--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=2s"}, "1.2 ×"},
		{[]string{"--metrics-bind-address=8080"}, "--metrics-bind-address must be host:port"},
		{[]string{"--log-level=loud"}, "--log-level"},
		{[]string{"--notify-blocked-after=-1m"}, "--notify-blocked-after must not be negative"},
		{[]string{"--notify-url="}, "empty URL"},
		{[]string{"--prometheus-alerts=Kube"}, "--prometheus-alerts needs --prometheus-url"},
		{[]string{"--prometheus-url=http://p:9090", "--prometheus-alerts=("}, "--prometheus-alerts: error parsing regexp"},
		{[]string{"--prometheus-url=prometheus:9090"}, "--prometheus-url must be http(s)"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--no-such-flag"}, "unknown flag: --no-such-flag"},
		// Go's flag package took one dash; pflag reads -i -n -t… from it.
		{[]string{"-interval=5s"}, "-interval=5s: long flags take two dashes: --interval=5s"},
		{[]string{"-dry-run"}, "long flags take two dashes: --dry-run"},
	} {
		_, err := ParseFlags(tc.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want it to mention %q", tc.args, err, tc.want)
		}
	}
	// Leader-election timings are not checked when leader election is off.
	if _, err := ParseFlags([]string{"--leader-elect=false", "--leader-elect-lease-duration=1s", "--leader-elect-renew-deadline=5s"}, &bytes.Buffer{}); err != nil {
		t.Errorf("leader-election timings checked with --leader-elect=false: %v", err)
	}
}

func TestResolveNamespace(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	file := func(content string, err error) func(string) ([]byte, error) {
		return func(p string) ([]byte, error) {
			if p != serviceAccountNamespaceFile {
				t.Fatalf("read %s", p)
			}
			return []byte(content), err
		}
	}
	notExist := file("", os.ErrNotExist)
	for _, tc := range []struct {
		name, flag string
		env        map[string]string
		read       func(string) ([]byte, error)
		want       string
	}{
		{"flag wins", "ops", map[string]string{"POD_NAMESPACE": "pod"}, file("sa\n", nil), "ops"},
		{"POD_NAMESPACE", "", map[string]string{"POD_NAMESPACE": "pod"}, file("sa\n", nil), "pod"},
		{"service-account file", "", nil, file("sa\n", nil), "sa"},
		{"empty file", "", nil, file("  \n", nil), "default"},
		{"nothing", "", nil, notExist, "default"},
	} {
		if got := ResolveNamespace(tc.flag, env(tc.env), tc.read); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestIdentity(t *testing.T) {
	a := Identity(func(k string) string { return map[string]string{"POD_NAME": "agent-0"}[k] }, "x1")
	if a != "agent-0_x1" {
		t.Fatalf("identity %q", a)
	}
	if b := Identity(func(string) string { return "" }, "x2"); !strings.HasSuffix(b, "_x2") || b == "_x2" {
		t.Fatalf("identity without POD_NAME %q", b)
	}
}

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c1
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
- name: c2
  cluster: {server: "https://127.0.0.2:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: secret-token-value}
contexts:
- name: one
  context: {cluster: c1, user: u}
- name: two
  context: {cluster: c2, user: u}
current-context: one
`

func TestLoadRESTConfig(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(testKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	noEnv := func(string) string { return "" }
	notIn := func() (*rest.Config, error) { return nil, rest.ErrNotInCluster }
	inCalled := false
	saToken := filepath.Join(dir, "token")
	if err := os.WriteFile(saToken, []byte("sa-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := func() (*rest.Config, error) {
		inCalled = true
		return &rest.Config{Host: "https://10.0.0.1:443", BearerTokenFile: saToken}, nil
	}
	c := Defaults()
	c.RequestTimeout = 7 * time.Second

	// --kubeconfig, with and without --context.
	c.Kubeconfig = kc
	cfg, origin, err := LoadRESTConfig(c, noEnv, notIn)
	if err != nil || cfg.Host != "https://127.0.0.1:6443" || cfg.Timeout != 7*time.Second || !strings.Contains(origin, kc) {
		t.Fatalf("kubeconfig: %v %v %q", cfg, err, origin)
	}
	if strings.Contains(origin, "secret-token-value") {
		t.Fatalf("origin leaks the token: %q", origin)
	}
	c.Context = "two"
	if cfg, _, err = LoadRESTConfig(c, noEnv, notIn); err != nil || cfg.Host != "https://127.0.0.2:6443" {
		t.Fatalf("context two: %v %v", cfg, err)
	}
	c.Context = "three"
	if _, _, err = LoadRESTConfig(c, noEnv, notIn); err == nil || !strings.Contains(err.Error(), "three") {
		t.Fatalf("missing context: %v", err)
	}
	c.Context = ""

	// KUBECONFIG.
	c.Kubeconfig = ""
	env := func(k string) string {
		if k == "KUBECONFIG" {
			return kc
		}
		return ""
	}
	if cfg, _, err = LoadRESTConfig(c, env, notIn); err != nil || cfg.Host != "https://127.0.0.1:6443" {
		t.Fatalf("KUBECONFIG: %v %v", cfg, err)
	}

	// An empty kubeconfig is an error, never a fallback (not even in-cluster).
	c.Kubeconfig = empty
	if _, _, err = LoadRESTConfig(c, noEnv, in); !errors.Is(err, ErrNoClusterConfig) || inCalled {
		t.Fatalf("empty kubeconfig: err %v, in-cluster called %v", err, inCalled)
	}
	c.Kubeconfig = filepath.Join(dir, "missing")
	if _, _, err = LoadRESTConfig(c, noEnv, in); err == nil || inCalled {
		t.Fatalf("missing kubeconfig: err %v, in-cluster called %v", err, inCalled)
	}

	// No kubeconfig: in-cluster, else a clear error.
	c.Kubeconfig = ""
	if _, _, err = LoadRESTConfig(c, noEnv, notIn); !errors.Is(err, ErrNoClusterConfig) {
		t.Fatalf("nothing: %v", err)
	} else if !strings.Contains(err.Error(), "--kubeconfig") {
		t.Fatalf("error does not say what to do: %v", err)
	}
	cfg, origin, err = LoadRESTConfig(c, noEnv, in)
	// The token file is read by the transport (again on a 401,
	// kubeclient.RereadTokenOn401), not copied into the config once.
	if err != nil || cfg.Host != "https://10.0.0.1:443" || cfg.Timeout != 7*time.Second || origin != "in-cluster service account" ||
		cfg.BearerToken != "" || cfg.WrapTransport == nil {
		t.Fatalf("in-cluster: %v %v %q", cfg, err, origin)
	}
	c.Context = "one"
	if _, _, err = LoadRESTConfig(c, noEnv, in); err == nil {
		t.Fatal("--context without a kubeconfig accepted")
	}
}

// A refused --prometheus-url is quoted masked: its secrets never reach stderr.
func TestBadPrometheusURLIsQuotedMasked(t *testing.T) {
	_, err := ParseFlags([]string{"--prometheus-url=ftp://admin:hunter2@prom/?token=s3cret"}, &bytes.Buffer{})
	if err == nil || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "token=xxxxx") {
		t.Fatalf("error %v", err)
	}
}

// --drain-bound: how long a drain may take before it is a stall, when
// kured's own --drain-timeout is not set (issue 23 §4); 10m by default.
func TestParseFlagsDrainBound(t *testing.T) {
	c, err := ParseFlags(nil, &bytes.Buffer{})
	if err != nil || c.DrainBound != 10*time.Minute {
		t.Fatalf("default: %v %v", c.DrainBound, err)
	}
	if c, err = ParseFlags([]string{"--drain-bound=45m"}, &bytes.Buffer{}); err != nil || c.DrainBound != 45*time.Minute {
		t.Fatalf("--drain-bound=45m: %v %v", c.DrainBound, err)
	}
	if _, err = ParseFlags([]string{"--drain-bound=0"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--drain-bound must be positive") {
		t.Fatalf("--drain-bound=0: %v", err)
	}
}

// The agent's GC target is 25 unless GOGC says otherwise, which the runtime
// has then applied and the startup log repeats.
func TestSetGCPercent(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	if got := setGCPercent(func(string) string { return "off" }); got != "off" {
		t.Errorf("GOGC=off: %q", got)
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("GOGC set, the agent changed the GC target to %d", p)
	}
	if got := setGCPercent(func(string) string { return "" }); got != "25" {
		t.Errorf("no GOGC: %q", got)
	}
	if p := debug.SetGCPercent(100); p != 25 {
		t.Errorf("no GOGC: the GC target is %d, want 25", p)
	}
}
