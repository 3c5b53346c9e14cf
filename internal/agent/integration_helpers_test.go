package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/deploy"
	"github.com/rebootwatch/rebootwatch/internal/testenv/gobuild"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// moduleRoot walks up from the test's directory to go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}

// buildOnce returns the command pkg (a path relative to the module root,
// such as ./cmd/rebootwatch-agent), built by gobuild: once per test binary,
// and not linked again while it is up to date.
func buildOnce(t *testing.T, pkg string) string {
	t.Helper()
	return gobuild.Command(t, pkg)
}

// buildAgent returns the agent binary (cmd/rebootwatch-agent), built once.
func buildAgent(t *testing.T) string {
	t.Helper()
	return buildOnce(t, "./cmd/rebootwatch-agent")
}

func bg() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// applyDeploy creates every object of deploy/ as written on c.
func applyDeploy(t *testing.T, c *testcluster.Cluster) {
	t.Helper()
	objs, err := deploy.Objects()
	if err != nil {
		t.Fatal(err)
	}
	applyObjects(t, c, objs)
}

// applyObjects creates the objects as written, in order, on c, and waits
// until the authorizer allows each subject of their bindings what those
// grant (RBAC authorizes from a cache that can lag the writes; the agent
// starts, or a test asks what its token may do, right after). When the
// test ends it deletes them and then waits until the authorizer refuses
// each of those requests again: the next test on the shared cluster runs
// the same ServiceAccount under grants of its own, a chart's smaller ones
// or a role with nodes removed, and must not find these in the cache.
func applyObjects(t *testing.T, c *testcluster.Cluster, objs []deploy.Object) {
	t.Helper()
	cs := c.Client(t)
	granted := bindingRequests(objs)
	// Registered before the objects' own clean-ups, this runs after every
	// one of them: a request two of the roles allow is refused only then.
	t.Cleanup(func() {
		for _, g := range granted {
			c.WaitDenied(t, g.user, g.attrs)
		}
	})
	for _, o := range objs {
		create := func(ctx context.Context) error {
			var err error
			switch x := o.Object.(type) {
			case *corev1.Namespace:
				_, err = cs.CoreV1().Namespaces().Create(ctx, x, metav1.CreateOptions{})
			case *corev1.ServiceAccount:
				_, err = cs.CoreV1().ServiceAccounts(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
			case *rbacv1.ClusterRole:
				_, err = cs.RbacV1().ClusterRoles().Create(ctx, x, metav1.CreateOptions{})
			case *rbacv1.ClusterRoleBinding:
				_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, x, metav1.CreateOptions{})
			case *rbacv1.Role:
				_, err = cs.RbacV1().Roles(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
			case *rbacv1.RoleBinding:
				_, err = cs.RbacV1().RoleBindings(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
			case *coordinationv1.Lease:
				_, err = cs.CoordinationV1().Leases(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
			case *appsv1.Deployment:
				_, err = cs.AppsV1().Deployments(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
			case *policyv1.PodDisruptionBudget:
				_, err = cs.PolicyV1().PodDisruptionBudgets(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
			case *corev1.Service:
				_, err = cs.CoreV1().Services(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
			default:
				t.Fatalf("%s: cannot apply %T", o.File, x)
			}
			return err
		}
		_, isNamespace := o.Object.(*corev1.Namespace)
		eventually(t, fmt.Sprintf("apply %s %T", o.File, o.Object), func() (bool, string) {
			ctx, cancel := bg()
			defer cancel()
			err := create(ctx)
			// The system namespaces appear shortly after the apiserver starts.
			if apierrors.IsNotFound(err) {
				return false, err.Error()
			}
			// A namespace stays on the shared cluster (with no namespace
			// controller running, a deleted one would never go): it takes
			// this object's labels (deploy/'s Pod Security level, or a
			// chart's none).
			if isNamespace && apierrors.IsAlreadyExists(err) {
				relabelNamespace(t, cs, o.Object.(*corev1.Namespace))
				return true, ""
			}
			if err != nil {
				t.Fatalf("%s: %v", o.File, err)
			}
			return true, ""
		})
		if !isNamespace {
			t.Cleanup(func() { deleteObject(t, cs, o) })
		}
	}
	for _, g := range granted {
		c.WaitAllowed(t, g.user, g.attrs)
	}
}

// userRequest is a request a user (or a ServiceAccount's) is granted.
type userRequest struct {
	user  string
	attrs authorizationv1.ResourceAttributes
}

// bindingRequests returns, for each binding among objs to a role among
// them, one request of each rule of the role for each User or
// ServiceAccount it binds (testcluster.RuleAttributes).
func bindingRequests(objs []deploy.Object) []userRequest {
	clusterRoles := map[string][]rbacv1.PolicyRule{}
	roles := map[string][]rbacv1.PolicyRule{} // namespace/name
	for _, o := range objs {
		switch x := o.Object.(type) {
		case *rbacv1.ClusterRole:
			clusterRoles[x.Name] = x.Rules
		case *rbacv1.Role:
			roles[x.Namespace+"/"+x.Name] = x.Rules
		}
	}
	var out []userRequest
	bound := func(ns string, ref rbacv1.RoleRef, subjects []rbacv1.Subject) {
		rules, ok := clusterRoles[ref.Name]
		if ref.Kind == "Role" {
			rules, ok = roles[ns+"/"+ref.Name]
		}
		if !ok {
			return
		}
		for _, s := range subjects {
			var user string
			switch s.Kind {
			case rbacv1.UserKind:
				user = s.Name
			case rbacv1.ServiceAccountKind:
				saNS := s.Namespace
				if saNS == "" {
					saNS = ns
				}
				user = testcluster.ServiceAccountUser(saNS, s.Name)
			default:
				continue
			}
			for _, a := range testcluster.RuleAttributes(ns, rules) {
				out = append(out, userRequest{user: user, attrs: a})
			}
		}
	}
	for _, o := range objs {
		switch x := o.Object.(type) {
		case *rbacv1.ClusterRoleBinding:
			bound("", x.RoleRef, x.Subjects)
		case *rbacv1.RoleBinding:
			bound(x.Namespace, x.RoleRef, x.Subjects)
		}
	}
	return out
}

// relabelNamespace gives the existing namespace want's labels.
func relabelNamespace(t *testing.T, cs kubernetes.Interface, want *corev1.Namespace) {
	t.Helper()
	ctx, cancel := bg()
	defer cancel()
	ns, err := cs.CoreV1().Namespaces().Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{corev1.LabelMetadataName: want.Name}
	for k, v := range want.Labels {
		labels[k] = v
	}
	ns.Labels = labels
	if _, err := cs.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// deleteObject deletes an object applyObjects created, so that the next
// test on the shared cluster applies its own (a chart's RBAC grants less
// than deploy/'s, and a test may have edited a role).
func deleteObject(t *testing.T, cs kubernetes.Interface, o deploy.Object) {
	t.Helper()
	ctx, cancel := bg()
	defer cancel()
	var err error
	opts := metav1.DeleteOptions{}
	switch x := o.Object.(type) {
	case *corev1.ServiceAccount:
		err = cs.CoreV1().ServiceAccounts(x.Namespace).Delete(ctx, x.Name, opts)
	case *rbacv1.ClusterRole:
		err = cs.RbacV1().ClusterRoles().Delete(ctx, x.Name, opts)
	case *rbacv1.ClusterRoleBinding:
		err = cs.RbacV1().ClusterRoleBindings().Delete(ctx, x.Name, opts)
	case *rbacv1.Role:
		err = cs.RbacV1().Roles(x.Namespace).Delete(ctx, x.Name, opts)
	case *rbacv1.RoleBinding:
		err = cs.RbacV1().RoleBindings(x.Namespace).Delete(ctx, x.Name, opts)
	case *coordinationv1.Lease:
		err = cs.CoordinationV1().Leases(x.Namespace).Delete(ctx, x.Name, opts)
	case *appsv1.Deployment:
		err = cs.AppsV1().Deployments(x.Namespace).Delete(ctx, x.Name, opts)
	case *policyv1.PodDisruptionBudget:
		err = cs.PolicyV1().PodDisruptionBudgets(x.Namespace).Delete(ctx, x.Name, opts)
	case *corev1.Service:
		err = cs.CoreV1().Services(x.Namespace).Delete(ctx, x.Name, opts)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("clean-up: delete %s %T: %v", o.File, o.Object, err)
	}
}

// agentCluster returns the package's shared apiserver for one agent test.
// The agent reads every node, kured's DaemonSet, fleetlock's Lease and the
// budgets and pods of every namespace, at fixed names, so the test has the
// cluster to itself (testcluster.SharedAlone: no t.Parallel, and those
// objects deleted before and after it). It also starts without the Events
// earlier tests left, since tests count the agent's Events.
func agentCluster(t *testing.T) *testcluster.Cluster {
	t.Helper()
	c := testcluster.SharedAlone(t)
	c.DeleteEvents(t)
	return c
}

// privateAgentCluster gives a long test an apiserver of its own
// (testcluster.Start) and runs it alongside the package's other private
// tests (t.Parallel): it waits on a clock it cannot shorten (client-go's
// token re-read, a Prometheus scrape, rule evaluation and remote-write
// flush, the node audit's default interval), and those waits overlap
// instead of adding up. The package's SharedAlone tests run
// first, one at a time, then these together.
func privateAgentCluster(t *testing.T) *testcluster.Cluster {
	t.Helper()
	t.Parallel()
	return testcluster.Start(t)
}

// parallelAgentCluster is privateAgentCluster for one of those tests
// without starting an apiserver: it has the package's shared one to itself
// (testcluster.SharedToItself), which the one-at-a-time tests are done with
// when the parallel ones run, and which none of the others uses. It starts
// without the Events earlier tests left, as agentCluster does.
func parallelAgentCluster(t *testing.T) *testcluster.Cluster {
	t.Helper()
	t.Parallel()
	c := testcluster.SharedToItself(t)
	c.DeleteEvents(t)
	return c
}

// mintToken asks for a ServiceAccount token with TokenRequest.
func mintToken(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	ctx, cancel := bg()
	defer cancel()
	exp := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts("rebootwatch").CreateToken(ctx, "rebootwatch-agent",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest: %v", err)
	}
	if len(tr.Status.Token) < 20 {
		t.Fatalf("token too short: %d", len(tr.Status.Token))
	}
	return tr.Status.Token
}

// heldLeaseCluster seeds the cluster most agent tests start from: nodes n1
// (testMachineID, the fleetlock holder's machine) and n2, both up for 3h, a
// fleetlock Lease held by n1's Zincati for 2h, and kured's DaemonSet without
// a lock. It returns the admin client, the agent binary, a kubeconfig with
// the deploy/ RBAC's token, and that token.
func heldLeaseCluster(t *testing.T) (admin kubernetes.Interface, bin, kubeconfig, token string) {
	t.Helper()
	return heldLeaseOn(t, agentCluster(t))
}

// heldLeaseOn seeds c as heldLeaseCluster does.
func heldLeaseOn(t *testing.T, c *testcluster.Cluster) (admin kubernetes.Interface, bin, kubeconfig, token string) {
	t.Helper()
	_, bin, token = setupOn(t, c)
	admin = c.Client(t)
	now := time.Now()
	createNode(t, admin, "n1", testMachineID, now.Add(-3*time.Hour))
	createNode(t, admin, "n2", "22222222222222222222222222222222", now.Add(-3*time.Hour))
	createFleetLease(t, admin, testZincatiID, now.Add(-2*time.Hour))
	createKured(t, admin, "")
	return admin, bin, writeKubeconfig(t, c.URL, token), token
}

// writeKubeconfig writes a kubeconfig for server with the token.
func writeKubeconfig(t *testing.T, server, token string) string {
	t.Helper()
	return writeKubeconfigUser(t, server, fmt.Sprintf("{token: %q}", token))
}

// writeKubeconfigUser writes a kubeconfig for server with the given user
// stanza (e.g. {tokenFile: "/path"}).
func writeKubeconfigUser(t *testing.T, server, user string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	content := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: agent
  user: %s
contexts:
- name: c
  context: {cluster: c, user: agent}
current-context: c
`, server, user)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func tokenConfig(c *testcluster.Cluster, token string) *rest.Config {
	return &rest.Config{Host: c.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, Timeout: 30 * time.Second}
}

// agentProc is a running agent binary.
type agentProc struct {
	name        string
	cmd         *exec.Cmd
	out         *syncBuffer
	done        chan struct{}
	healthAddr  string
	metricsAddr string

	// The log as parsed so far (parseLog): every line once.
	logMu  sync.Mutex
	logOff int              // bytes of out parsed: whole lines only
	logged []map[string]any // every line
	beats  []heartbeat      // the heartbeat lines among them
}

// startAgentProc runs the agent with the kubeconfig and args; it returns
// once the agent logged its start line.
func startAgentProc(t *testing.T, bin, name, kubeconfig string, args ...string) *agentProc {
	t.Helper()
	return startAgentArgs(t, bin, name, append([]string{"--kubeconfig=" + kubeconfig, "--health-probe-bind-address=127.0.0.1:0",
		"--metrics-bind-address=127.0.0.1:0", "--kured-daemonset=kube-system/kured"}, args...))
}

// startAgentArgs runs the agent with exactly these args (a kubeconfig and
// loopback bind addresses among them).
func startAgentArgs(t *testing.T, bin, name string, all []string) *agentProc {
	t.Helper()
	cmd := exec.Command(bin, all...)
	env := []string{"POD_NAMESPACE=rebootwatch", "POD_NAME=" + name}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "KUBERNETES_SERVICE_") && !strings.HasPrefix(e, "KUBECONFIG=") && !strings.HasPrefix(e, "POD_") {
			env = append(env, e)
		}
	}
	cmd.Env = env
	p := &agentProc{name: name, cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.stop(t, syscall.SIGTERM) })
	eventually(t, name+" logged its start line", func() (bool, string) {
		for _, l := range p.lines(t) {
			if l["msg"] == "starting" {
				p.healthAddr, _ = l["healthAddress"].(string)
				p.metricsAddr, _ = l["metricsAddress"].(string)
				return p.healthAddr != "", ""
			}
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited:\n%s", name, p.out.String())
		default:
		}
		return false, p.tail(10)
	})
	return p
}

// stop signals the agent and waits for it to exit.
func (p *agentProc) stop(t *testing.T, sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("%s did not stop on %v", p.name, sig)
	}
}

// lines parses every log line; a line that is not JSON fails the test.
func (p *agentProc) lines(t *testing.T) []map[string]any {
	t.Helper()
	p.logMu.Lock()
	defer p.logMu.Unlock()
	p.parseLog(t)
	return slices.Clip(p.logged)
}

// parseLog parses the lines the agent wrote since its last call, each
// once, and only whole ones (a line still being written waits for the next
// call). The waits poll the log every 50 ms, and parsing all of it again
// each time, under -race, grew with every line the agent had logged.
// The caller holds logMu.
func (p *agentProc) parseLog(t *testing.T) {
	t.Helper()
	b := p.out.from(p.logOff)
	whole := bytes.LastIndexByte(b, '\n') + 1
	for line := range bytes.SplitSeq(b[:whole], []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("%s log line is not JSON: %q", p.name, line)
		}
		p.logged = append(p.logged, m)
		if m["msg"] == "heartbeat" {
			var h heartbeat
			if err := json.Unmarshal(line, &h); err != nil {
				t.Fatalf("%s: heartbeat does not parse: %q: %v", p.name, line, err)
			}
			p.beats = append(p.beats, h)
		}
	}
	p.logOff += whole
}

// startupPagesReclaimed checks p's log lines "start-up pages reclaimed", one
// at each stage (start, synced): the binary's read-only mappings advised, and
// its file-backed RSS lower after.
func startupPagesReclaimed(t *testing.T, p *agentProc) {
	t.Helper()
	seen := map[string]bool{}
	for _, l := range p.lines(t) {
		if l["msg"] != "start-up pages reclaimed" {
			continue
		}
		stage, _ := l["stage"].(string)
		advised, _ := l["advisedMiB"].(float64)
		before, _ := l["fileBackedRSSMiBBefore"].(float64)
		after, ok := l["fileBackedRSSMiBAfter"].(float64)
		if advised <= 0 || !ok || after >= before || seen[stage] {
			t.Errorf("%s: start-up pages: %v", p.name, l)
		}
		seen[stage] = true
		t.Logf("%s: %s: advised %.1f MiB; file-backed RSS %.1f → %.1f MiB", p.name, stage, advised, before, after)
	}
	if !seen["start"] || !seen["synced"] || len(seen) != 2 {
		t.Errorf("%s: start-up pages reclaimed at %v, want at start and synced:\n%s", p.name, seen, p.tail(20))
	}
}

// heartbeats returns the heartbeat lines logged so far, in order.
func (p *agentProc) heartbeats(t *testing.T) []heartbeat {
	t.Helper()
	p.logMu.Lock()
	defer p.logMu.Unlock()
	p.parseLog(t)
	return slices.Clip(p.beats)
}

func (p *agentProc) tail(n int) string {
	return p.name + " log tail:\n" + p.out.tail(n)
}

// waitHeartbeat waits for a heartbeat satisfying cond.
func (p *agentProc) waitHeartbeat(t *testing.T, what string, cond func(heartbeat) bool) heartbeat {
	t.Helper()
	return p.waitHeartbeatSince(t, 0, what, cond)
}

// mark is the number of heartbeats logged so far.
func (p *agentProc) mark(t *testing.T) int { return len(p.heartbeats(t)) }

// waitHeartbeatSince waits for a heartbeat after the first since ones.
func (p *agentProc) waitHeartbeatSince(t *testing.T, since int, what string, cond func(heartbeat) bool) heartbeat {
	t.Helper()
	var found heartbeat
	eventually(t, p.name+": "+what, func() (bool, string) {
		hbs := p.heartbeats(t)
		if since > len(hbs) {
			since = len(hbs)
		}
		for _, hb := range hbs[since:] {
			if cond(hb) {
				found = hb
				return true, ""
			}
		}
		return false, p.tail(6)
	})
	return found
}

func (p *agentProc) probe(path string) int {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + p.healthAddr + path)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// metrics returns the agent's /metrics text.
func (p *agentProc) metrics(t *testing.T) string {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + p.metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/metrics %d %v", resp.StatusCode, err)
	}
	return string(b)
}

// eventually polls cond for a generous bound (machines are noisy).
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting until %s\n%s", what, last)
}

// World building.

func createNode(t *testing.T, cs kubernetes.Interface, name, machineID string, readySince time.Time) {
	t.Helper()
	ctx, cancel := bg()
	defer cancel()
	n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.NodeInfo = corev1.NodeSystemInfo{MachineID: machineID, BootID: "boot-" + name, OSImage: "Fedora CoreOS 42", KernelVersion: "6.14.0"}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.NewTime(readySince)}}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createFleetLease(t *testing.T, cs kubernetes.Interface, holder string, acquired time.Time) {
	t.Helper()
	ctx, cancel := bg()
	defer cancel()
	at := metav1.NewMicroTime(acquired)
	_, err := cs.CoordinationV1().Leases("default").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "fleetlock-default", Namespace: "default"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, AcquireTime: &at},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

func fleetHolder(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	ctx, cancel := bg()
	defer cancel()
	l, err := cs.CoordinationV1().Leases("default").Get(ctx, "fleetlock-default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func setFleetHolder(t *testing.T, cs kubernetes.Interface, holder string) {
	t.Helper()
	ctx, cancel := bg()
	defer cancel()
	l, err := cs.CoordinationV1().Leases("default").Get(ctx, "fleetlock-default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Spec.HolderIdentity = &holder
	now := metav1.NewMicroTime(time.Now().Add(-time.Hour))
	l.Spec.AcquireTime = &now
	if _, err := cs.CoordinationV1().Leases("default").Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createKured(t *testing.T, cs kubernetes.Interface, annotation string) {
	t.Helper()
	ctx, cancel := bg()
	defer cancel()
	labels := map[string]string{"name": "kured"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kured", Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "kured", Image: "kured:test"}}},
			},
		},
	}
	if annotation != "" {
		ds.Annotations = map[string]string{"weave.works/kured-node-lock": annotation}
	}
	if _, err := cs.AppsV1().DaemonSets("kube-system").Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func kuredAnnotation(t *testing.T, cs kubernetes.Interface) (string, bool) {
	t.Helper()
	ctx, cancel := bg()
	defer cancel()
	ds, err := cs.AppsV1().DaemonSets("kube-system").Get(ctx, "kured", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, ok := ds.Annotations["weave.works/kured-node-lock"]
	return v, ok
}

func eventsFor(t *testing.T, cs kubernetes.Interface, ns, name, reason string) []corev1.Event {
	t.Helper()
	ctx, cancel := bg()
	defer cancel()
	evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

func mustNotContainToken(t *testing.T, token string, procs ...*agentProc) {
	t.Helper()
	for _, p := range procs {
		if strings.Contains(p.out.String(), token) {
			t.Errorf("%s's log contains the ServiceAccount token", p.name)
		}
		// A JWT's signature part alone must not leak either.
		if parts := strings.Split(token, "."); len(parts) == 3 && strings.Contains(p.out.String(), parts[2]) {
			t.Errorf("%s's log contains the token's signature", p.name)
		}
	}
}

func isForbidden(err error) bool { return apierrors.IsForbidden(err) }
