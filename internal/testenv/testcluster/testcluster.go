// Package testcluster starts a real etcd and kube-apiserver on free loopback
// ports for integration tests, and hands out admin and per-user client
// configurations for it: one per test (Start), or one per test binary
// shared by the tests that keep to what is their own (Shared, SharedAlone,
// stopped by Main from the package's TestMain).
//
// The binaries come from bin/ (built by `make testcluster`): the directory
// named by REBOOTWATCH_BIN_DIR, else the first bin/ found walking up from the
// test's working directory. When they are missing a test is skipped, unless
// REBOOTWATCH_INTEGRATION is set, in which case it fails (that is how `make
// test` runs). In -short mode without REBOOTWATCH_INTEGRATION it skips too.
//
// It must only ever bind and contact 127.0.0.1, and it must not be imported by
// non-test code.
package testcluster

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// EnvIntegration names the variable that, set to a non-empty value, makes
// missing binaries a test failure instead of a skip.
const EnvIntegration = "REBOOTWATCH_INTEGRATION"

// EnvBinDir names the directory holding kube-apiserver and etcd.
const EnvBinDir = "REBOOTWATCH_BIN_DIR"

// Users are the static-token users besides the admin: authenticated, with no
// RBAC grants of their own.
var Users = []string{"alice", "bob", "carol"}

// startTimeout bounds how long Start waits for etcd and the apiserver.
const startTimeout = 90 * time.Second

// Cluster is a running etcd + kube-apiserver pair.
type Cluster struct {
	// URL is the apiserver's https URL.
	URL string
	// Admin is a client configuration for a static-token user in system:masters.
	Admin *rest.Config
	// Kubeconfig is the path of a kubeconfig file (context "testcluster") for the admin.
	Kubeconfig string

	dir    string
	tokens map[string]string
	procs  []*proc // started order: etcd, apiserver
	// apiBin and apiArgs start the apiserver again (RestartAPIServer).
	apiBin  string
	apiArgs []string
	once    sync.Once

	longhornMu      sync.Mutex
	longhornEnsured bool // EnsureLonghornCRD installed the CRD
}

type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// Integration reports whether REBOOTWATCH_INTEGRATION is set.
func Integration() bool { return os.Getenv(EnvIntegration) != "" }

// Require skips or fails t when the integration binaries named are not
// available, per the package rule, and returns the path of each.
func Require(t testing.TB, names ...string) []string {
	t.Helper()
	if testing.Short() && !Integration() {
		t.Skip("integration test: skipped in -short mode (set " + EnvIntegration + "=1 to run)")
	}
	dir, err := BinDir()
	var paths []string
	if err == nil {
		for _, n := range names {
			p := filepath.Join(dir, n)
			if st, serr := os.Stat(p); serr != nil || st.IsDir() {
				err = fmt.Errorf("%s not found in %s (run `make testcluster`)", n, dir)
				break
			}
			paths = append(paths, p)
		}
	}
	if err != nil {
		if Integration() {
			t.Fatalf("integration binaries: %v", err)
		}
		t.Skipf("integration binaries missing (%v); set %s=1 to make this a failure", err, EnvIntegration)
	}
	return paths
}

// BinDir returns the directory that holds the integration binaries:
// $REBOOTWATCH_BIN_DIR, else the first bin/ directory found walking up from
// the working directory.
func BinDir() (string, error) {
	if d := os.Getenv(EnvBinDir); d != "" {
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; {
		if st, err := os.Stat(filepath.Join(d, "bin")); err == nil && st.IsDir() {
			return filepath.Join(d, "bin"), nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no bin/ directory above %s and %s unset", wd, EnvBinDir)
		}
		d = parent
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago. Each listener is held until all n are chosen, so no two are
// the same.
//
// The ports are drawn at random from below the kernel's ephemeral range:
// a port from inside it (what listening on port 0 gives) is also what the
// kernel hands out as the local end of every outgoing connection, so with
// a suite's clients dialling, one was taken between the pick and etcd's
// bind (and one could be while a restarted apiserver is down). Outside
// that range only a process binding it on purpose takes it, and Start
// retries then.
func FreePorts(n int) ([]int, error) {
	lo, hi := pickRange()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		var l net.Listener
		var err error
		if hi > lo && tries < 64*n {
			l, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(lo+mrand.IntN(hi-lo)))
			if err != nil {
				continue // in use: draw again
			}
		} else if l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// pickRange is the range FreePorts draws from: from 10000 up to the start
// of the ephemeral range, or empty when that cannot be read or leaves
// fewer than 1,000 ports.
func pickRange() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0
	}
	start, err := strconv.Atoi(f[0])
	if err != nil || start-10000 < 1000 {
		return 0, 0
	}
	return 10000, start
}

// Start starts a fresh etcd and kube-apiserver on free loopback ports and
// waits until the apiserver is ready. t.Cleanup stops both. It skips or fails
// t per the package rule when the binaries are missing.
//
// A test that only needs an apiserver to read and write objects in
// namespaces of its own uses Shared instead; Start is for tests that need
// a cluster to themselves: they freeze, restart or stop it, count the
// requests it serves, or need cluster-scoped state (nodes, CRDs) no other
// test may see.
func Start(t testing.TB) *Cluster {
	t.Helper()
	return startWith(t, t.Logf, FreePorts)
}

// startWith is Start with the retry's log and port pick of startRetrying:
// Start passes t.Logf and FreePorts, the test of the retry its own.
func startWith(t testing.TB, logf func(string, ...any), pick func(n int) ([]int, error)) *Cluster {
	t.Helper()
	bins := Require(t, "etcd", "kube-apiserver")
	c, err := startRetrying(logf, pick, bins[0], bins[1])
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpLogs(t.Logf)
		}
		c.Stop()
	})
	return c
}

// startRetrying starts a cluster, trying other ports when one was taken
// between pick and the bind. Start and Shared pass FreePorts as pick; a
// test of the retry passes one that hands out a taken port.
func startRetrying(logf func(string, ...any), pick func(n int) ([]int, error), etcdBin, apiserverBin string) (*Cluster, error) {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		c, err := start(logf, pick, etcdBin, apiserverBin)
		if err == nil {
			return c, nil
		}
		lastErr = err
		if !errors.Is(err, errPort) {
			break
		}
		logf("testcluster: %v; retrying with other ports", err)
	}
	return nil, lastErr
}

var errPort = errors.New("address already in use")

// shared is the test binary's shared cluster (Shared), stopped by Main.
var shared struct {
	mu      sync.Mutex
	main    bool // Main runs the tests
	c       *Cluster
	err     error
	stopped bool
	// users counts, per test name, the Shared calls whose test has not
	// ended; itself names the test that holds the cluster by
	// SharedToItself ("" when none does).
	users  map[string]int
	itself string
}

// Main runs the tests of a package that uses Shared and stops the shared
// cluster after them, then runs after (the package's own clean-ups, such
// as removing a binary its tests built). A package's TestMain calls it:
//
//	func TestMain(m *testing.M) { testcluster.Main(m) }
func Main(m *testing.M, after ...func()) {
	shared.mu.Lock()
	shared.main = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	if shared.c != nil {
		if code != 0 {
			shared.c.dumpLogs(func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) })
		}
		shared.c.Stop()
	}
	shared.stopped = true
	shared.mu.Unlock()
	for _, f := range after {
		f()
	}
	os.Exit(code)
}

// Shared returns the test binary's shared cluster, started on the first
// call (so that a run of unit tests alone starts none) and stopped by Main
// after the last test. It skips or fails t per the package rule when the
// binaries are missing, and fails t when the package's TestMain does not
// run Main (the cluster would outlive the tests).
//
// Tests sharing it run alongside one another (t.Parallel), so each keeps
// to what is its own: namespaces from Namespace, and cluster-scoped
// objects (nodes, cluster roles) under names or labels of its own, which
// it deletes when it ends (t.Cleanup). It must not be stopped, frozen,
// restarted or have CRDs installed or removed (but EnsureLonghornCRD's): a
// test that needs any of that uses Start, or SharedToItself to freeze or
// restart it. A test that reads cluster-wide uses SharedAlone. Shared
// fails t while another test holds the cluster by SharedToItself.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	bins := Require(t, "etcd", "kube-apiserver")
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.itself != "" && !related(t.Name(), shared.itself) {
		t.Fatalf("testcluster: the shared cluster is held by %s (SharedToItself); a test that uses it beside that one must not run in its package's parallel phase", shared.itself)
	}
	if !shared.main {
		t.Fatal("testcluster: Shared needs the package's TestMain to call testcluster.Main")
	}
	if shared.stopped {
		t.Fatal("testcluster: Shared called after the tests ended")
	}
	if shared.c == nil && shared.err == nil {
		shared.c, shared.err = startRetrying(t.Logf, FreePorts, bins[0], bins[1])
	}
	if shared.err != nil {
		t.Fatalf("testcluster: shared cluster: %v", shared.err)
	}
	if shared.users == nil {
		shared.users = map[string]int{}
	}
	name := t.Name()
	shared.users[name]++
	t.Cleanup(func() {
		shared.mu.Lock()
		defer shared.mu.Unlock()
		if shared.users[name]--; shared.users[name] == 0 {
			delete(shared.users, name)
		}
	})
	return shared.c
}

// related reports whether test names a and b are one test or a test and
// one of its subtests.
func related(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

// SharedToItself returns the shared cluster (Shared) to t alone, and
// enforces it: it fails t when another test uses the cluster now, and while
// t runs any other test's Shared or SharedAlone fails. t may freeze the
// apiserver (Freeze; it is thawed when t ends) and restart it
// (RestartAPIServer), which other users of a shared cluster must not; it
// must not stop it. Like SharedAlone, it deletes the nodes, DaemonSets,
// pods, PodDisruptionBudgets and Leases left on the cluster, now and when
// t ends.
//
// Called after t.Parallel, it gives one test of a package's parallel phase
// the apiserver that the package's one-at-a-time tests are done with,
// instead of starting another (about 3 CPU-seconds, issue 35 §3); none of
// the package's other parallel tests may then use the shared cluster.
func SharedToItself(t testing.TB) *Cluster {
	t.Helper()
	c := Shared(t)
	shared.mu.Lock()
	var others []string
	for name := range shared.users {
		if !related(name, t.Name()) {
			others = append(others, name)
		}
	}
	if len(others) == 0 && shared.itself == "" {
		shared.itself = t.Name()
	}
	held := shared.itself
	shared.mu.Unlock()
	if held != t.Name() {
		if held != "" {
			others = append(others, held+" (SharedToItself)")
		}
		slices.Sort(others)
		t.Fatalf("testcluster: SharedToItself: the shared cluster is in use by %s", strings.Join(others, ", "))
	}
	t.Cleanup(func() {
		shared.mu.Lock()
		shared.itself = ""
		shared.mu.Unlock()
	})
	c.empty(t)
	t.Cleanup(func() {
		if err := c.Thaw(); err != nil {
			t.Errorf("testcluster: thawing the shared cluster: %v", err)
		}
		c.empty(t)
	})
	return c
}

// SharedAlone returns the shared cluster (Shared) for a test that reads
// cluster-wide (every node, or DaemonSets, pods, PodDisruptionBudgets and
// fleetlock's Leases of every namespace) and so runs alone: it must not call t.Parallel, and runs
// before the parallel tests of its package. It deletes those objects now
// (what an earlier test or -count round left) and when the test ends. What
// else the test makes cluster-wide (roles, Events, a CRD it installs since
// it runs alone) it deletes itself, or leaves only where no other test of
// its package reads it.
func SharedAlone(t testing.TB) *Cluster {
	t.Helper()
	c := Shared(t)
	c.empty(t)
	t.Cleanup(func() { c.empty(t) })
	return c
}

// DeleteEvents deletes the Events of every namespace: a test that counts
// or reads the Events an action records starts without those earlier tests
// left.
func (c *Cluster) DeleteEvents(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c.deleteIn(ctx, t, schema.GroupVersionResource{Version: "v1", Resource: "events"}, metav1.DeleteOptions{})
}

// emptied are the kinds empty deletes in every namespace, with the
// namespaces whose objects of that kind it keeps (the apiserver's own
// Leases).
var emptied = []struct {
	gvr  schema.GroupVersionResource
	keep []string
}{
	{gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}},
	{gvr: schema.GroupVersionResource{Version: "v1", Resource: "pods"}},
	{gvr: schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}},
	{gvr: schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"},
		keep: []string{metav1.NamespaceSystem, corev1.NamespaceNodeLease}},
}

// empty deletes every node, and every DaemonSet, pod (at once, no kubelet
// runs to end it), PodDisruptionBudget and Lease of every namespace but the
// apiserver's own Leases (kube-system, kube-node-lease).
func (c *Cluster) empty(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	now := metav1.DeleteOptions{GracePeriodSeconds: new(int64)}
	if err := c.Client(t).CoreV1().Nodes().DeleteCollection(ctx, now, metav1.ListOptions{}); err != nil {
		t.Fatalf("testcluster: delete nodes: %v", err)
	}
	for _, k := range emptied {
		c.deleteIn(ctx, t, k.gvr, now, k.keep...)
	}
}

// deleteIn deletes what of one namespaced kind is left, but in the
// namespaces keep names: it lists the kind's metadata across every
// namespace once and deletes the collection in each namespace that holds
// some. A shared cluster gathers the namespaces of every test of its
// package, nearly all of them empty of the kind by then: one request per
// namespace and kind, on every SharedAlone test's start and end, was most
// of what emptying cost.
func (c *Cluster) deleteIn(ctx context.Context, t testing.TB, gvr schema.GroupVersionResource, opts metav1.DeleteOptions, keep ...string) {
	t.Helper()
	md, err := metadata.NewForConfig(c.Admin)
	if err != nil {
		t.Fatal(err)
	}
	l, err := md.Resource(gvr).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("testcluster: list %s: %v", gvr.Resource, err)
	}
	var nss []string
	for _, o := range l.Items {
		if !slices.Contains(keep, o.Namespace) {
			nss = append(nss, o.Namespace)
		}
	}
	slices.Sort(nss)
	for _, ns := range slices.Compact(nss) {
		if err := md.Resource(gvr).Namespace(ns).DeleteCollection(ctx, opts, metav1.ListOptions{}); err != nil {
			t.Fatalf("testcluster: delete %s in %s: %v", gvr.Resource, ns, err)
		}
	}
}

func start(logf func(string, ...any), pick func(n int) ([]int, error), etcdBin, apiserverBin string) (*Cluster, error) {
	dir, err := os.MkdirTemp("", "testcluster-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, tokens: map[string]string{}}
	ok := false
	defer func() {
		if !ok {
			c.dumpLogs(logf)
			c.Stop()
		}
	}()

	// etcd.
	etcdPorts, err := pick(2)
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPorts[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPorts[1])
	etcd, err := c.spawn("etcd", etcdBin,
		"--name=testcluster",
		"--data-dir="+filepath.Join(dir, "etcd-data"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=testcluster="+peerURL,
		"--unsafe-no-fsync",
		"--log-level=warn",
	)
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(etcd, startTimeout, func(cl *http.Client) bool {
		resp, err := cl.Get(etcdURL + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}); err != nil {
		// Another process took a port between pick and etcd's bind.
		if etcd.portTaken() {
			return nil, fmt.Errorf("etcd: %w", errPort)
		}
		return nil, err
	}

	// kube-apiserver.
	keyFile := filepath.Join(dir, "sa.key")
	if err := writeSAKey(keyFile); err != nil {
		return nil, err
	}
	certFile, certKeyFile := filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key")
	if err := writeServingCert(certFile, certKeyFile); err != nil {
		return nil, err
	}
	tokenFile := filepath.Join(dir, "tokens.csv")
	var tokens bytes.Buffer
	users := append([]string{"admin"}, Users...)
	for i, u := range users {
		tok := randomToken()
		c.tokens[u] = tok
		groups := ""
		if u == "admin" {
			groups = `,"system:masters"`
		}
		fmt.Fprintf(&tokens, "%s,%s,uid-%d%s\n", tok, u, i, groups)
	}
	if err := os.WriteFile(tokenFile, tokens.Bytes(), 0o600); err != nil {
		return nil, err
	}
	apiPorts, err := pick(1)
	if err != nil {
		return nil, err
	}
	port := apiPorts[0]
	c.URL = "https://127.0.0.1:" + strconv.Itoa(port)
	c.apiBin = apiserverBin
	c.apiArgs = []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(dir, "certs"),
		// A serving certificate of our own (ECDSA, made in microseconds):
		// given only --cert-dir, the apiserver makes a self-signed RSA-2048
		// CA and certificate on every start (about 0.3 of its 3 CPU-seconds
		// to ready on the 2-core machine). Clients skip verification.
		"--tls-cert-file=" + certFile,
		"--tls-private-key-file=" + certKeyFile,
		"--token-auth-file=" + tokenFile,
		"--authorization-mode=RBAC",
		"--service-account-key-file=" + keyFile,
		"--service-account-signing-key-file=" + keyFile,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.0.0.0/24",
		// No controller-manager runs, so no default ServiceAccount appears
		// in new namespaces: without this, creating a Pod would fail.
		"--disable-admission-plugins=ServiceAccount",
		// On SIGTERM (RestartAPIServer, Stop) the apiserver ends its open
		// watches within 2s and exits: without it, an open watch kept it
		// serving until the 30s SIGKILL (a kubelet's default grace), which
		// every restart then waited out.
		"--shutdown-watch-termination-grace-period=2s",
		"--v=1",
	}
	api, err := c.spawn("kube-apiserver", apiserverBin, c.apiArgs...)
	if err != nil {
		return nil, err
	}
	c.Admin = c.config("admin")
	if err := c.waitAPIServer(api); err != nil {
		if api.portTaken() {
			return nil, fmt.Errorf("kube-apiserver: %w", errPort)
		}
		return nil, err
	}
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(c.Kubeconfig, []byte(c.kubeconfig()), 0o600); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// waitAPIServer waits until the apiserver answers ready with the default
// namespace in place.
func (c *Cluster) waitAPIServer(api *proc) error {
	return waitHTTP(api, startTimeout, func(*http.Client) bool {
		cs, err := kubernetes.NewForConfig(c.Admin)
		if err != nil {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil || strings.TrimSpace(string(body)) != "ok" {
			return false
		}
		// The default namespace is created by a bootstrap controller just
		// after start; tests expect it.
		_, err = cs.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		return err == nil
	})
}

// RestartAPIServer stops the kube-apiserver (SIGTERM, as a rolling restart
// does) and starts it again on the same port with the same flags, keeping
// etcd and its data: every client connection breaks, and the objects are
// all still there when it is back. It returns once the new apiserver is
// ready. A frozen apiserver is thawed first. The apiserver ends its open
// watches within 2s of the SIGTERM and exits
// (--shutdown-watch-termination-grace-period), so a restart takes seconds.
func (c *Cluster) RestartAPIServer() error {
	var old *proc
	i := -1
	for j, p := range c.procs {
		if p.name == "kube-apiserver" {
			old, i = p, j
		}
	}
	if old == nil {
		return errors.New("testcluster: no kube-apiserver process")
	}
	pgid := old.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGCONT)
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-old.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-old.done
	}
	api, err := c.spawn("kube-apiserver", c.apiBin, c.apiArgs...)
	if err != nil {
		return err
	}
	c.procs[i] = api
	c.procs = c.procs[:len(c.procs)-1] // spawn appended it too
	return c.waitAPIServer(api)
}

func (c *Cluster) spawn(name, bin string, args ...string) (*proc, error) {
	logPath := filepath.Join(c.dir, name+".log")
	// Appended to: a restarted apiserver logs after its first run.
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	c.procs = append(c.procs, p)
	return p, nil
}

// portTaken reports whether the process logged that its port was in use.
func (p *proc) portTaken() bool {
	b, _ := os.ReadFile(p.log)
	return bytes.Contains(b, []byte(errPort.Error()))
}

// waitHTTP polls ready until it returns true, the process exits, or the timeout passes.
func waitHTTP(p *proc, timeout time.Duration, ready func(*http.Client) bool) error {
	cl := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	for {
		if ready(cl) {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready: %v", p.name, p.err)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s", p.name, timeout)
		}
	}
}

func (c *Cluster) config(user string) *rest.Config {
	return &rest.Config{
		Host:            c.URL,
		BearerToken:     c.tokens[user],
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             -1, // no client-side throttling against a test server
		Timeout:         30 * time.Second,
	}
}

// UserConfig returns a client configuration for one of the static-token users
// ("alice", "bob", "carol"): authenticated, with no RBAC grants.
func (c *Cluster) UserConfig(user string) *rest.Config {
	if _, ok := c.tokens[user]; !ok || user == "admin" {
		panic(fmt.Sprintf("testcluster: unknown user %q (want one of %v)", user, Users))
	}
	return c.config(user)
}

// Client returns a typed clientset for the admin.
func (c *Cluster) Client(t testing.TB) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Admin)
	if err != nil {
		t.Fatalf("testcluster: clientset: %v", err)
	}
	return cs
}

// WaitAllowed waits until the apiserver's authorizer allows user what attrs
// names (a SubjectAccessReview, asked as the admin): RBAC authorizes from
// an informer's cache, so a grant just written can still be refused for a
// moment, longer on a loaded machine. A test that grants a user something
// and then acts as that user calls it in between.
func (c *Cluster) WaitAllowed(t testing.TB, user string, attrs authorizationv1.ResourceAttributes) {
	t.Helper()
	c.waitAccess(t, user, attrs, true)
}

// WaitDenied waits until the apiserver's authorizer refuses user what attrs
// names, as WaitAllowed waits until it allows it: a grant just deleted (or
// a role just narrowed) can still be allowed for a moment. A test that
// revokes a grant and then relies on the refusal, or that leaves the user
// of a shared cluster to a later test that does, calls it after the revoke.
func (c *Cluster) WaitDenied(t testing.TB, user string, attrs authorizationv1.ResourceAttributes) {
	t.Helper()
	c.waitAccess(t, user, attrs, false)
}

// waitAccess asks the authorizer, every 20 ms for up to 30 s, whether user
// may do what attrs names, until the review's Status.Allowed is allowed.
func (c *Cluster) waitAccess(t testing.TB, user string, attrs authorizationv1.ResourceAttributes, allowed bool) {
	t.Helper()
	cs := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &attrs}}, metav1.CreateOptions{})
		if err == nil && r.Status.Allowed == allowed {
			return
		}
		select {
		case <-ctx.Done():
			if allowed {
				t.Fatalf("testcluster: %s is still not allowed %+v: %v", user, attrs, err)
			}
			t.Fatalf("testcluster: %s is still allowed %+v: %v", user, attrs, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// RuleAttributes returns one request that each resource rule of rules
// allows, in namespace (that of a RoleBinding; "" for a ClusterRoleBinding):
// the rule's first verb, API group, resource (a "pods/log" as resource and
// subresource) and resource name; rules of non-resource URLs have none. A
// test that binds a role waits until each is allowed (WaitAllowed): that
// sees the binding and the role both in the authorizer's caches, and a
// role's every rule.
func RuleAttributes(namespace string, rules []rbacv1.PolicyRule) []authorizationv1.ResourceAttributes {
	var out []authorizationv1.ResourceAttributes
	for _, r := range rules {
		if len(r.Verbs) == 0 || len(r.Resources) == 0 {
			continue
		}
		a := authorizationv1.ResourceAttributes{Namespace: namespace, Verb: r.Verbs[0]}
		a.Resource, a.Subresource, _ = strings.Cut(r.Resources[0], "/")
		if len(r.APIGroups) > 0 {
			a.Group = r.APIGroups[0]
		}
		if len(r.ResourceNames) > 0 {
			a.Name = r.ResourceNames[0]
		}
		out = append(out, a)
	}
	return out
}

// ServiceAccountUser is the user a token of the ServiceAccount
// namespace/name authenticates as, the user WaitAllowed and WaitDenied ask
// about for it: system:serviceaccount:NAMESPACE:NAME.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// Namespace creates a fresh namespace named prefix-<random> and returns its name.
func (c *Cluster) Namespace(t testing.TB, prefix string) string {
	t.Helper()
	cs := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: strings.TrimSuffix(prefix, "-") + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("testcluster: create namespace: %v", err)
	}
	return ns.Name
}

// Freeze stops the kube-apiserver with SIGSTOP: its connections stay open
// and nothing answers on them, like a hung or black-holed API server. Thaw
// (SIGCONT) resumes it; Stop also stops a frozen cluster. Freeze returns once
// every thread of the apiserver is stopped: kill(2) only queues the signal,
// and a thread still running on the other core could otherwise answer one
// more request.
func (c *Cluster) Freeze() error {
	if err := c.signalAPIServer(syscall.SIGSTOP); err != nil {
		return err
	}
	pid, err := c.apiServerPID()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for !stopped(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("testcluster: kube-apiserver (pid %d) did not stop within 10s of SIGSTOP", pid)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// stopped reports whether every thread of pid is in the stopped state (T).
func stopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
		if err != nil {
			return false
		}
		// The state follows the parenthesised command name.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
			return false
		}
	}
	return true
}

// WaitIdle waits, up to limit, until the cluster's kube-apiserver and etcd
// are idle: under 0.02 CPU-seconds together in 250 ms (from
// /proc/PID/stat). A benchmark calls it so that a run does not start while
// the server still serves what an earlier run or the session's start left
// (a dashboard's informer lists every volume as JSON right after its first
// picture: 0.9 s of the apiserver's CPU at 10,000 volumes). It returns how
// long it waited and whether the servers went idle.
func (c *Cluster) WaitIdle(limit time.Duration) (time.Duration, bool) {
	t0 := time.Now()
	cpu := func() float64 {
		var sum float64
		for _, p := range c.procs {
			if p.cmd.Process != nil {
				sum += ProcCPUSeconds(p.cmd.Process.Pid)
			}
		}
		return sum
	}
	for time.Since(t0) < limit {
		before := cpu()
		time.Sleep(250 * time.Millisecond)
		if cpu()-before < 0.02 {
			return time.Since(t0), true
		}
	}
	return time.Since(t0), false
}

// ProcCPUSeconds is a process's user + sys CPU time in seconds
// (/proc/PID/stat, in clock ticks of 1/100 s); 0 if it cannot be read.
func ProcCPUSeconds(pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / 100
}

func (c *Cluster) apiServerPID() (int, error) {
	for _, p := range c.procs {
		if p.name == "kube-apiserver" {
			return p.cmd.Process.Pid, nil
		}
	}
	return 0, errors.New("testcluster: no kube-apiserver process")
}

// Thaw resumes a frozen kube-apiserver (SIGCONT).
func (c *Cluster) Thaw() error { return c.signalAPIServer(syscall.SIGCONT) }

func (c *Cluster) signalAPIServer(sig syscall.Signal) error {
	pid, err := c.apiServerPID()
	if err != nil {
		return err
	}
	return syscall.Kill(pid, sig)
}

// Stop stops the apiserver and etcd now and removes their data. It is
// idempotent.
func (c *Cluster) Stop() {
	c.once.Do(func() {
		defer os.RemoveAll(c.dir)
		for i := len(c.procs) - 1; i >= 0; i-- {
			p := c.procs[i]
			pgid := p.cmd.Process.Pid
			_ = syscall.Kill(-pgid, syscall.SIGCONT) // a frozen process cannot act on SIGTERM
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(5 * time.Second):
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				<-p.done
			}
		}
	})
}

// Logs returns the log text of a process ("etcd" or "kube-apiserver").
func (c *Cluster) Logs(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.dir, name+".log"))
	return string(b)
}

func (c *Cluster) dumpLogs(logf func(string, ...any)) {
	for _, p := range c.procs {
		b, _ := os.ReadFile(p.log)
		const keep = 16 << 10
		if len(b) > keep {
			b = append([]byte("…\n"), b[len(b)-keep:]...)
		}
		logf("testcluster: %s log (%s):\n%s", p.name, p.log, b)
	}
}

func (c *Cluster) kubeconfig() string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: testcluster
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: %s
contexts:
- name: testcluster
  context:
    cluster: testcluster
    user: admin
current-context: testcluster
`, c.URL, c.tokens["admin"])
}

// writeSAKey writes the service-account signing key: ECDSA P-256 (tokens
// signed ES256), whose generation is nearly free, where an RSA-2048 key took
// about 0.15 CPU-seconds under -race on every start.
func writeSAKey(path string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	return writeECKey(path, key)
}

// writeECKey writes key as a PEM "EC PRIVATE KEY" file only its owner reads.
func writeECKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

// writeServingCert writes a self-signed ECDSA P-256 serving certificate for
// 127.0.0.1 and localhost, valid for a week, and its key.
func writeServingCert(certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "testcluster-apiserver"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return err
	}
	return writeECKey(keyPath, key)
}

func randomToken() string {
	return rand.Text()
}

// LonghornVolumeGVR is Longhorn's volume resource, served once
// InstallLonghornCRD ran.
var LonghornVolumeGVR = schema.GroupVersionResource{Group: "longhorn.io", Version: "v1beta2", Resource: "volumes"}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// LonghornCRDName is the name of the CRD InstallLonghornCRD creates.
const LonghornCRDName = "volumes.longhorn.io"

// LonghornPrinterColumns are the additionalPrinterColumns Longhorn declares
// for volumes.longhorn.io v1beta2, as upstream writes them in
// chart/templates/crds.yaml of github.com/longhorn/longhorn at commit
// bb2f2223a6f7b5d97a98b7e765937fe48a1b96f7 (the same names State,
// Robustness and Node, with the same paths, since Longhorn v1.1.0, in
// v1beta1 as in v1beta2). They decide what a Table of volumes carries
// (kubectl get, and the one-shot read of sources/longhorn).
func LonghornPrinterColumns() []any {
	col := func(name, typ, path, desc string) map[string]any {
		c := map[string]any{"name": name, "type": typ, "jsonPath": path}
		if desc != "" {
			c["description"] = desc
		}
		return c
	}
	switchover := col("Switchover", "string", ".status.switchoverState", "The engine switchover state")
	switchover["priority"] = int64(1)
	return []any{
		col("Data Engine", "string", ".spec.dataEngine", "The data engine of the volume"),
		col("State", "string", ".status.state", "The state of the volume"),
		col("Robustness", "string", ".status.robustness", "The robustness of the volume"),
		col("Scheduled", "string", ".status.conditions[?(@.type=='Schedulable')].status", "The scheduled condition of the volume"),
		col("Size", "string", ".spec.size", "The size of the volume"),
		col("Node", "string", ".status.currentNodeID", "The node that the volume is currently attaching to"),
		switchover,
		col("Age", "date", ".metadata.creationTimestamp", ""),
	}
}

// InstallLonghornCRD installs a volumes.longhorn.io CRD (v1beta2,
// namespaced, status subresource, schema preserving unknown fields) with
// Longhorn's own printer columns (LonghornPrinterColumns), and waits until
// volumes can be listed.
func (c *Cluster) InstallLonghornCRD(t testing.TB) {
	t.Helper()
	c.installLonghornCRD(t, LonghornPrinterColumns())
}

// EnsureLonghornCRD installs the Longhorn CRD as InstallLonghornCRD does
// unless this call already did on this cluster: tests on a Shared cluster
// that want Longhorn present each call it.
func (c *Cluster) EnsureLonghornCRD(t testing.TB) {
	t.Helper()
	c.longhornMu.Lock()
	defer c.longhornMu.Unlock()
	if !c.longhornEnsured {
		c.InstallLonghornCRD(t)
		c.longhornEnsured = true
	}
}

// InstallLonghornCRDWithoutColumns installs the same CRD without printer
// columns: a Table of its volumes has only Name and Age, as an edited or
// foreign CRD might.
func (c *Cluster) InstallLonghornCRDWithoutColumns(t testing.TB) {
	t.Helper()
	c.installLonghornCRD(t, nil)
}

func (c *Cluster) installLonghornCRD(t testing.TB, columns []any) {
	t.Helper()
	dyn := c.Dynamic(t)
	version := map[string]any{
		"name": "v1beta2", "served": true, "storage": true,
		"schema":       map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
		"subresources": map[string]any{"status": map[string]any{}},
	}
	if columns != nil {
		version["additionalPrinterColumns"] = columns
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": LonghornCRDName},
		"spec": map[string]any{
			"group": "longhorn.io", "scope": "Namespaced",
			"names": map[string]any{"kind": "Volume", "listKind": "VolumeList", "plural": "volumes", "singular": "volume",
				"shortNames": []any{"lhv"}},
			"versions": []any{version},
		},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("testcluster: create Longhorn CRD: %v", err)
	}
	for {
		_, err := dyn.Resource(LonghornVolumeGVR).List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("testcluster: Longhorn CRD never served: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// RemoveLonghornCRD deletes the CRD and waits until it is gone.
func (c *Cluster) RemoveLonghornCRD(t testing.TB) {
	t.Helper()
	dyn := c.Dynamic(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := dyn.Resource(crdGVR).Delete(ctx, LonghornCRDName, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("testcluster: delete Longhorn CRD: %v", err)
	}
	for {
		_, err := dyn.Resource(crdGVR).Get(ctx, LonghornCRDName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("testcluster: Longhorn CRD not deleted: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Dynamic returns a dynamic client for the admin.
func (c *Cluster) Dynamic(t testing.TB) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(c.Admin)
	if err != nil {
		t.Fatalf("testcluster: dynamic client: %v", err)
	}
	return d
}
