package testcluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestStart: Start retries a port taken between its pick and the bind
// (startTakenPortTwice); a started cluster answers through its kubeconfig, knows its
// users without granting them anything, signs ServiceAccount tokens,
// serves the certificate start wrote, goes idle when left alone (WaitIdle),
// restarts its apiserver with its data kept (RestartAPIServer), and is gone
// after Stop.
func TestStart(t *testing.T) {
	c := startTakenPortTwice(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := c.Client(t)

	ns := c.Namespace(t, "probe")
	if _, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace %s: %v", ns, err)
	}

	// The kubeconfig file works and points at the same server.
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != c.URL {
		t.Fatalf("kubeconfig server %q, want %q", cfg.Host, c.URL)
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list nodes via kubeconfig: %v", err)
	}

	// Users are authenticated but have no grants.
	alice, err := kubernetes.NewForConfig(c.UserConfig("alice"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = alice.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("alice listing nodes: got %v, want forbidden", err)
	}

	// Service-account keys are set: TokenRequest works.
	sa, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token request: %v", err)
	}
	if tr.Status.Token == "" {
		t.Fatal("token request returned no token")
	}

	// The apiserver serves the certificate start wrote (ECDSA, for
	// 127.0.0.1), not one it made itself.
	conn, err := tls.Dial("tcp", strings.TrimPrefix(c.URL, "https://"), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reads the certificate, trusts nothing
	if err != nil {
		t.Fatal(err)
	}
	served := conn.ConnectionState().PeerCertificates
	conn.Close()
	wrote, err := os.ReadFile(filepath.Join(c.dir, "serving.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if block, _ := pem.Decode(wrote); block == nil || len(served) == 0 || !bytes.Equal(served[0].Raw, block.Bytes) {
		t.Fatalf("the apiserver serves a certificate other than %s", filepath.Join(c.dir, "serving.crt"))
	}
	if served[0].PublicKeyAlgorithm != x509.ECDSA || len(served[0].IPAddresses) != 1 || !served[0].IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) {
		t.Fatalf("served certificate: %v key for %v, want ECDSA for 127.0.0.1", served[0].PublicKeyAlgorithm, served[0].IPAddresses)
	}

	// WaitIdle: a server kept busy by a loop of lists is not idle; left
	// alone, it is. Its CPU is read from /proc.
	for _, p := range c.procs {
		if ProcCPUSeconds(p.cmd.Process.Pid) <= 0 {
			t.Fatalf("%s (pid %d): no CPU time read", p.name, p.cmd.Process.Pid)
		}
	}
	busy, stopBusy := context.WithCancel(ctx)
	var lists sync.WaitGroup
	for range 4 {
		lists.Go(func() {
			for busy.Err() == nil {
				_, _ = admin.CoreV1().Namespaces().List(busy, metav1.ListOptions{})
			}
		})
	}
	if waited, idle := c.WaitIdle(time.Second); idle {
		t.Errorf("WaitIdle: idle after %s while four clients list in a loop", waited)
	}
	stopBusy()
	lists.Wait()
	if waited, idle := c.WaitIdle(20 * time.Second); !idle {
		t.Errorf("WaitIdle: not idle %s after the lists stopped", waited)
	}

	// RestartAPIServer: the restarted apiserver answers on the same URL
	// with the objects written before it (etcd and its data are kept), and
	// a watch opened before the restart ends with it. On this test's own
	// cluster (one start fewer than a test of its own: issue 35 §3).
	w, err := admin.CoreV1().ConfigMaps(ns).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RestartAPIServer(); err != nil {
		t.Fatal(err)
	}
	for range w.ResultChan() {
		// A watch opened before the restart ends with it.
	}
	w.Stop()
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace %s after the restart: %v", ns, err)
	}
	if n := strings.Count(c.Logs("kube-apiserver"), "Serving securely"); n != 2 {
		t.Fatalf("the apiserver's log shows %d starts, want both", n)
	}

	c.Stop()
	c.Stop() // idempotent
	if _, err := admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("apiserver still answers after Stop")
	}
}

// startTakenPortTwice starts TestStart's cluster as Start does, with a
// port held and handed out twice, as another process would take a port
// between the pick and the bind: to etcd on the first attempt's first
// pick, then to the apiserver on the second attempt's (etcd up by then).
// It checks that each failure is recognised and retried with other ports,
// and that the third attempt comes up on ports of its own. TestStart's
// cluster is that third attempt's: a failed start costs little, a started
// apiserver about 3 CPU-seconds (issue 35 §3).
func startTakenPortTwice(t *testing.T) *Cluster {
	t.Helper()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	taken := held.Addr().(*net.TCPAddr).Port

	// Picks, in order: 1 etcd (taken), 2 etcd, 3 the apiserver (taken),
	// 4 etcd, 5 the apiserver.
	var picks []int
	pick := func(n int) ([]int, error) {
		picks = append(picks, n)
		ports, err := FreePorts(n)
		if err == nil && (len(picks) == 1 || len(picks) == 3) {
			ports[0] = taken
		}
		return ports, err
	}
	var mu sync.Mutex
	var logs []string
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logs = append(logs, fmt.Sprintf(format, args...))
	}
	c := startWith(t, logf, pick)
	if got := fmt.Sprint(picks); got != "[2 2 1 2 1]" {
		t.Errorf("picks of %s ports, want [2 2 1 2 1]: etcd's, etcd's and the apiserver's, then both again", got)
	}
	if strings.Contains(c.URL, ":"+strconv.Itoa(taken)) {
		t.Fatalf("the apiserver is at %s, the taken port", c.URL)
	}
	mu.Lock()
	joined := strings.Join(logs, "\n")
	mu.Unlock()
	for _, want := range []string{
		"etcd: address already in use; retrying with other ports",
		"kube-apiserver: address already in use; retrying with other ports",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("no retry logged; want %q in:\n%s", want, joined)
		}
	}
	return c
}

// TestFreePortsDistinct checks that the ports of one pick differ, can be
// bound, and lie below the kernel's ephemeral range where it can be read.
func TestFreePortsDistinct(t *testing.T) {
	ports, err := FreePorts(8)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := pickRange()
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || seen[p] {
			t.Fatalf("ports %v: %d repeated or invalid", ports, p)
		}
		seen[p] = true
		if hi > lo && (p < lo || p >= hi) {
			t.Errorf("port %d outside [%d, %d), the range below the ephemeral ports", p, lo, hi)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("port %d cannot be bound: %v", p, err)
			continue
		}
		l.Close()
	}
}

// TestLonghornCRDColumns checks that the fixture's CRD makes the apiserver
// answer a Table of volumes with Longhorn's columns, and the column-less
// one with only Name and Age. It installs and removes the CRD on the shared
// cluster (SharedAlone: no test of this package runs beside it) and leaves
// none behind.
func TestLonghornCRDColumns(t *testing.T) {
	c := SharedAlone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	columns := func() []string {
		t.Helper()
		var table metav1.Table
		err := c.Client(t).CoreV1().RESTClient().Get().AbsPath("/apis/longhorn.io/v1beta2/volumes").
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(&table)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, d := range table.ColumnDefinitions {
			names = append(names, d.Name)
		}
		return names
	}
	c.InstallLonghornCRD(t)
	want := "[Name Data Engine State Robustness Scheduled Size Node Switchover Age]"
	if got := fmt.Sprint(columns()); got != want {
		t.Errorf("columns %s, want %s", got, want)
	}
	c.RemoveLonghornCRD(t)
	c.InstallLonghornCRDWithoutColumns(t)
	t.Cleanup(func() { c.RemoveLonghornCRD(t) })
	if got := fmt.Sprint(columns()); got != "[Name Age]" {
		t.Errorf("columns without printer columns %s, want [Name Age]", got)
	}
}

func TestMain(m *testing.M) { Main(m, afterMain) }

// afterMain is the package's clean-up given to Main: in the child of
// TestSharedStoppedByMain it says whether the shared cluster's directory
// was already gone when it ran.
func afterMain() {
	if os.Getenv(envSharedChild) == "" || shared.c == nil {
		return
	}
	_, err := os.Stat(shared.c.dir)
	fmt.Printf("\nafter-main stopped=%v\n", errors.Is(err, os.ErrNotExist))
}

// envSharedChild makes TestSharedChild run: it is the child process of
// TestSharedStoppedByMain.
const envSharedChild = "TESTCLUSTER_SHARED_CHILD"

// TestSharedStoppedByMain: every Shared call of a test binary returns the
// same running cluster, and Main stops it (etcd and the apiserver exit, its
// directory is gone) when the tests end, pass or fail, then runs the
// package's clean-up.
func TestSharedStoppedByMain(t *testing.T) {
	Require(t, "etcd", "kube-apiserver")
	for _, fail := range []bool{false, true} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSharedChild$", "-test.v")
		cmd.Env = append(os.Environ(), envSharedChild+"="+strconv.FormatBool(fail))
		out, err := cmd.CombinedOutput()
		if fail != (err != nil) {
			t.Fatalf("child (fail=%v): %v\n%s", fail, err, out)
		}
		var pids []int
		var dir string
		for line := range strings.SplitSeq(string(out), "\n") {
			line = strings.TrimSpace(line)
			if v, ok := strings.CutPrefix(line, "shared-pid "); ok {
				pid, err := strconv.Atoi(v)
				if err != nil {
					t.Fatal(err)
				}
				pids = append(pids, pid)
			}
			if v, ok := strings.CutPrefix(line, "shared-dir "); ok {
				dir = v
			}
		}
		if !strings.Contains(string(out), "\nafter-main stopped=true\n") {
			t.Errorf("Main did not run the clean-up after stopping the cluster (fail=%v):\n%s", fail, out)
		}
		if len(pids) != 2 || dir == "" {
			t.Fatalf("child output lacks the pids and dir:\n%s", out)
		}
		for _, pid := range pids {
			// The children were in their own process groups, reaped by the
			// child binary: a signal 0 finds no such process.
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("process %d of the shared cluster still exists after the tests (fail=%v): %v", pid, fail, err)
			}
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the shared cluster's directory %s is still there (fail=%v): %v", dir, fail, err)
		}
	}
}

// TestSharedChild runs in the child process of TestSharedStoppedByMain.
func TestSharedChild(t *testing.T) {
	fail := os.Getenv(envSharedChild)
	if fail == "" {
		t.Skip("the child of TestSharedStoppedByMain")
	}
	a, b := Shared(t), Shared(t)
	if a != b {
		t.Fatal("two Shared calls gave two clusters")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := a.Client(t).CoreV1().Namespaces().Get(ctx, a.Namespace(t, "shared"), metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range a.procs {
		t.Logf("\nshared-pid %d", p.cmd.Process.Pid)
	}
	t.Logf("\nshared-dir %s", a.dir)
	if fail == "true" {
		t.Error("failing on purpose: Main stops the cluster after a failed run too")
	}
}

// TestSharedAlone: SharedAlone hands out the shared cluster without the
// nodes, DaemonSets, pods, PodDisruptionBudgets and Leases left on it, and
// leaves none of those the test made.
func TestSharedAlone(t *testing.T) {
	c := Shared(t)
	cs := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leave := func(t *testing.T, name string) {
		t.Helper()
		ns := c.Namespace(t, name)
		labels := map[string]string{"app": name}
		if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}}}}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	empty := func(t *testing.T, when string) {
		t.Helper()
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dss, err := cs.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pdbs, err := cs.PolicyV1().PodDisruptionBudgets("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var leases int
		for _, ns := range []string{"before", "during"} {
			l, err := cs.CoordinationV1().Leases("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + ns})
			if err != nil {
				t.Fatal(err)
			}
			leases += len(l.Items)
		}
		if n := len(nodes.Items) + len(dss.Items) + len(pods.Items) + len(pdbs.Items) + leases; n != 0 {
			t.Errorf("%s: %d nodes, %d DaemonSets, %d pods, %d PDBs, %d Leases left", when, len(nodes.Items), len(dss.Items), len(pods.Items), len(pdbs.Items), leases)
		}
	}
	leave(t, "before")
	t.Run("alone", func(t *testing.T) {
		if SharedAlone(t) != c {
			t.Fatal("SharedAlone gave another cluster than Shared")
		}
		empty(t, "at the start")
		leave(t, "during")
	})
	empty(t, "after the test")
}

// namedTB is a testing.TB that runs in a goroutine of its own (goroutineTB)
// under another test's name, as a test of the package running beside this
// one would call Shared.
type namedTB struct {
	goroutineTB
	name string
}

func (n *namedTB) Name() string { return n.name }

// as runs f as the test called name in a goroutine and returns its
// failure ("" when it passed).
func as(t *testing.T, name string, f func(testing.TB)) string {
	t.Helper()
	tb := &namedTB{goroutineTB: goroutineTB{TB: t}, name: name}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(tb)
	}()
	<-done
	return tb.failure
}

// TestSharedToItself: SharedToItself hands the shared cluster to one test
// and its subtests, refuses it while another test uses it, fails any other
// test's Shared while it is held, and when the holder ends thaws the
// apiserver it froze, empties the cluster and lets it go.
func TestSharedToItself(t *testing.T) {
	c := Shared(t)
	t.Run("holds", func(t *testing.T) {
		if SharedToItself(t) != c {
			t.Fatal("SharedToItself gave another cluster than Shared")
		}
		t.Run("sub", func(t *testing.T) {
			if Shared(t) != c {
				t.Fatal("a subtest of the holder got another cluster")
			}
		})
		for _, f := range []func(testing.TB){func(tb testing.TB) { Shared(tb) }, func(tb testing.TB) { SharedAlone(tb) }, func(tb testing.TB) { SharedToItself(tb) }} {
			if msg := as(t, "TestBeside", f); !strings.Contains(msg, "held by "+t.Name()) && !strings.Contains(msg, t.Name()+" (SharedToItself)") {
				t.Errorf("another test's call while %s holds the cluster: %q, want a failure naming the holder", t.Name(), msg)
			}
		}
		if _, err := c.Client(t).CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "itself"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := c.Freeze(); err != nil {
			t.Fatal(err)
		}
		// Left frozen: the clean-up thaws it.
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes, err := c.Client(t).CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("the shared cluster after its holder ended: %v (not thawed?)", err)
	}
	if len(nodes.Items) != 0 {
		t.Errorf("%d nodes left after the holder ended, want none", len(nodes.Items))
	}
	if msg := as(t, "TestBeside", func(tb testing.TB) { Shared(tb) }); msg != "" {
		t.Errorf("Shared after the holder ended: %s", msg)
	}
	// This test still uses the cluster (its Shared above): another test
	// may not have it to itself.
	if msg := as(t, "TestBeside", func(tb testing.TB) { SharedToItself(tb) }); !strings.Contains(msg, "in use by "+t.Name()) {
		t.Errorf("SharedToItself while %s uses the cluster: %q, want a failure naming it", t.Name(), msg)
	}
}
