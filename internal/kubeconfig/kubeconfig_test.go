package kubeconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/internal/kubeconfig/kubeconfigtest"
)

// The shared fixture, under the short names these tests use.
const twoClusters = kubeconfigtest.TwoClusters

var (
	write = kubeconfigtest.Write
	env   = kubeconfigtest.Env
)

func TestRESTConfigFollowsKubectlRules(t *testing.T) {
	path := write(t, t.TempDir(), twoClusters)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(home, ".kube"), twoClusters)
	cases := []struct {
		name                      string
		flag, kenv, home, context string
		wantHost, wantCtx, errHas string
	}{
		{name: "--kubeconfig, current context", flag: path, wantHost: "127.0.0.1", wantCtx: "alpha"},
		{name: "--context picks another", flag: path, context: "beta", wantHost: "127.0.0.2", wantCtx: "beta"},
		{name: "$KUBECONFIG list", kenv: "/nonexistent" + string(os.PathListSeparator) + path, wantHost: "127.0.0.1", wantCtx: "alpha"},
		{name: "--kubeconfig wins over $KUBECONFIG", flag: path, kenv: "/nonexistent", wantHost: "127.0.0.1", wantCtx: "alpha"},
		{name: "~/.kube/config", home: home, wantHost: "127.0.0.1", wantCtx: "alpha"},
		{name: "unknown context", flag: path, context: "gamma", errHas: `no context "gamma" (its contexts: "alpha", "beta")`},
		{name: "$KUBECONFIG names a missing file", kenv: "/nonexistent", errHas: "KUBECONFIG names /nonexistent, which does not exist"},
		{name: "$KUBECONFIG names only missing files", kenv: "/gone/a" + string(os.PathListSeparator) + "/gone/b", errHas: "KUBECONFIG names /gone/a, /gone/b, which do not exist"},
		{name: "missing --kubeconfig file", flag: "/does/not/exist", errHas: "kubeconfig /does/not/exist"},
		{name: "nothing at all", home: t.TempDir(), errHas: "--demo"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := Loader{Kubeconfig: tc.flag, Getenv: env(map[string]string{"KUBECONFIG": tc.kenv, "HOME": tc.home})}
			cfg, ctx, err := l.RESTConfig(tc.context)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err %v, want one containing %q", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(cfg.Host, tc.wantHost) || ctx != tc.wantCtx {
				t.Fatalf("host %s context %s, want %s %s", cfg.Host, ctx, tc.wantHost, tc.wantCtx)
			}
		})
	}
}

// Without a kubeconfig and without --server, loading never falls back to a
// default server (kubectl's http://localhost:8080, $KUBERNETES_MASTER).
func TestNoSilentDefaultServer(t *testing.T) {
	empty := write(t, t.TempDir(), "")
	for _, l := range []Loader{
		{Getenv: env(map[string]string{"HOME": t.TempDir(), "KUBERNETES_MASTER": "http://localhost:8080"})},
		{Kubeconfig: empty, Getenv: env(nil)},
	} {
		cfg, _, err := l.RESTConfig("")
		if err == nil || !errors.Is(err, ErrNoClusterConfig) {
			t.Fatalf("%+v: config %v, err %v; want ErrNoClusterConfig", l, cfg, err)
		}
		if strings.Contains(err.Error(), "localhost") {
			t.Fatalf("mentions localhost: %v", err)
		}
	}
}

const contexts = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:1
users:
- name: u
  user:
    token: x
contexts:
- name: zeta
  context: {cluster: c, user: u}
- name: alpha
  context: {cluster: c, user: u}
current-context: zeta
`

func TestContexts(t *testing.T) {
	dir := t.TempDir()
	kc := write(t, dir, contexts)
	l := Loader{Kubeconfig: kc, Getenv: env(nil)}
	all, err := l.Contexts("", true)
	if err != nil || strings.Join(all, ",") != "alpha,zeta" || strings.Join(l.ContextNames(), ",") != "alpha,zeta" {
		t.Fatalf("all: %v %v", all, err)
	}
	// $KUBECONFIG is a path list; --context keeps the order given.
	got, err := Loader{Getenv: env(map[string]string{"KUBECONFIG": filepath.Join(dir, "missing") + string(os.PathListSeparator) + kc})}.Contexts("zeta,alpha", false)
	if err != nil || strings.Join(got, ",") != "zeta,alpha" {
		t.Fatalf("list: %v %v", got, err)
	}
	if _, err := l.Contexts("alpha,nope,gone", false); err == nil || !strings.Contains(err.Error(), `"nope", "gone" (its contexts: "alpha", "zeta")`) {
		t.Fatalf("missing contexts: %v", err)
	}
	if _, err := (Loader{Getenv: env(map[string]string{"HOME": dir})}).Contexts("a,b", false); err == nil || !strings.Contains(err.Error(), "no kubeconfig") {
		t.Fatalf("no kubeconfig: %v", err)
	}
	if _, err := (Loader{Kubeconfig: filepath.Join(dir, "nope")}).Contexts("a,b", false); err == nil {
		t.Fatal("a missing --kubeconfig must fail")
	}
	if got := strings.Join(Split(" a, b,,a ,c"), "|"); got != "a|b|c" {
		t.Fatalf("split %q", got)
	}
}

// The agent's loading: a named kubeconfig, else in-cluster; never
// ~/.kube/config, never a default server.
func TestInCluster(t *testing.T) {
	dir := t.TempDir()
	kc := write(t, dir, twoClusters)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(home, ".kube"), twoClusters)
	notIn := func() (*rest.Config, error) { return nil, rest.ErrNotInCluster }
	in := func() (*rest.Config, error) { return &rest.Config{Host: "https://10.0.0.1:443"}, nil }

	cfg, origin, err := Loader{Kubeconfig: kc, Getenv: env(nil)}.InCluster("beta", notIn)
	if err != nil || cfg.Host != "https://127.0.0.2:6443" || origin != "kubeconfig "+kc+" context beta" {
		t.Fatalf("kubeconfig: %v %q %v", cfg, origin, err)
	}
	cfg, origin, err = Loader{Getenv: env(map[string]string{"HOME": home})}.InCluster("", in)
	if err != nil || cfg.Host != "https://10.0.0.1:443" || origin != "in-cluster service account" {
		t.Fatalf("in-cluster (a ~/.kube/config must not be used): %v %q %v", cfg, origin, err)
	}
	if _, _, err = (Loader{Getenv: env(map[string]string{"HOME": home})}).InCluster("", notIn); !errors.Is(err, ErrNoClusterConfig) || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Fatalf("nothing: %v", err)
	}
	if _, _, err = (Loader{Getenv: env(nil)}).InCluster("one", in); err == nil {
		t.Fatal("--context without a kubeconfig accepted")
	}
}
