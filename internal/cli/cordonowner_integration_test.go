package cli

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	ft "github.com/rebootwatch/rebootwatch/internal/coord/flatcar/flatcartest"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc/suctest"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// Issue 32 §3, against a real apiserver: `uncordon --coordinators` undoes
// only the cordon the coordinator provably wrote for the cycle that left
// the node; every other cordon is refused, writing nothing, and the
// output says whose cordon it is (manager and time).

// uncordonCLI runs `uncordon --node node --coordinators` with flags and
// extra (--yes, --dry-run), and returns the exit code and the output.
func uncordonCLI(t *testing.T, flags []string, node string, extra ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env, out, errb := multiEnv()
	args := append(append(append([]string{}, flags...), "uncordon", "--node", node, "--coordinators"), extra...)
	code := run(ctx, args, env)
	return code, out.String() + errb.String()
}

func cordonedNow(t *testing.T, cs kubernetes.Interface, node string) bool {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n.Spec.Unschedulable
}

// registerNode is the kubelet's registration (labels, so the apiserver
// records managedFields) and its Ready status since readySince.
func registerNode(t *testing.T, cs kubernetes.Interface, name string, readySince time.Time) {
	t.Helper()
	ctx := context.Background()
	n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.NewTime(readySince), LastTransitionTime: metav1.NewTime(readySince)}}
	n.Status.NodeInfo = corev1.NodeSystemInfo{BootID: "boot-1", MachineID: "0123456789abcdef0123456789abcdef", OSImage: "os 1", KernelVersion: "k1"}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// kubectl runs the real kubectl as the cluster's administrator (a
// person's cordon and uncordon).
func kubectl(t *testing.T, tc *testcluster.Cluster, args ...string) {
	t.Helper()
	dir, err := testcluster.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(dir, "kubectl"), append([]string{"--kubeconfig", tc.Kubeconfig}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
}

// nextSecond waits past the second after t: the apiserver records
// managedFields times to the second, so a write after this is seen as
// later than one at t (a sleep that is the scenario).
func nextSecond(t time.Time) {
	time.Sleep(time.Until(t.Truncate(time.Second).Add(1100 * time.Millisecond)))
}

// A node cordoned by hand, and a Job in a tenant's namespace labelled with
// SUC's plan and node labels but not its controller label (anyone who may
// create Jobs there can): not SUC's, so the node is not "stuck-cordon" and
// its uncordon is refused; --dry-run and the refusal say whose cordon it
// is. Before the fix: "its plan no longer exists: stuck-cordon", and the
// uncordon passed every gate.
func TestUncordonTenantLookAlikeJobRealCluster(t *testing.T) {
	tc, cs, ctx := sucCluster(t)
	ns := sucNamespace(t, tc)
	spec := suctest.PlanSpec{Concurrency: 1, Drain: true, Version: "v1.31.4+k3s1", NodeSelector: map[string]string{"node-role.kubernetes.io/control-plane": "true"}}
	if _, err := suctest.Create(ctx, tc.Dynamic(t), suctest.Plan(ns, "server-plan", spec), suctest.Synced(spec.Version, "", nil, time.Now())); err != nil {
		t.Fatal(err)
	}
	tenant := sucNamespace(t, tc)
	const node = "tenant-n1"
	registerNode(t, cs, node, time.Now().Add(-time.Hour))
	kubectl(t, tc, "cordon", node)
	latest := suctest.MungeVersion(spec.Version)
	jb := suctest.Job(tenant, "agent-plan", node, latest, suctest.LatestHash(latest, ""), true, false)
	delete(jb.Labels, "upgrade.cattle.io/controller")
	delete(jb.Spec.Template.Labels, "upgrade.cattle.io/controller")
	if _, err := suctest.CreateJob(ctx, cs, jb, time.Now().Add(-time.Hour), time.Now().Add(-30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--kubeconfig", kubeconfigCopy(t, tc), "--request-timeout", "5s", "--sync-timeout", "30s"}
	code, out := uncordonCLI(t, flags, node, "--dry-run")
	if code != ExitAttention || !strings.Contains(out, "cordoned by kubectl at ") {
		t.Errorf("--dry-run: exit %d, want %d, saying whose cordon it is:\n%s", code, ExitAttention, out)
	}
	code, out = uncordonCLI(t, flags, node, "--yes")
	if code != ExitAttention || !strings.Contains(out, "✗ node") || !cordonedNow(t, cs, node) {
		t.Fatalf("uncordon of a hand cordon beside a tenant's look-alike Job: exit %d, cordoned %v\n%s", code, cordonedNow(t, cs, node), out)
	}
	if strings.Contains(out, "no longer exists") || strings.Contains(out, "stuck-cordon") {
		t.Errorf("the tenant's Job was taken for SUC's:\n%s", out)
	}
}

// SUC's failed job left its node cordoned (its drain container's cordon,
// while the job ran): the uncordon is allowed, and --dry-run says whose
// cordon it undoes. Then an administrator uncordons and cordons the node
// again by hand: that cordon, newer than the job, is not SUC's and is
// refused, saying so.
func TestUncordonSUCLaterHandCordonRealCluster(t *testing.T) {
	tc, cs, ctx := sucCluster(t)
	ns := sucNamespace(t, tc)
	node, _, err := suctest.Wedge(ctx, cs, tc.Dynamic(t), ns, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	failed := time.Now()
	flags := []string{"--kubeconfig", kubeconfigCopy(t, tc), "--request-timeout", "5s", "--sync-timeout", "30s"}
	code, out := uncordonCLI(t, flags, node, "--dry-run")
	if code != ExitOK || !strings.Contains(out, "cordoned by "+suctest.KubectlManager+" at ") {
		t.Fatalf("--dry-run of SUC's own cordon: exit %d\n%s", code, out)
	}
	nextSecond(failed)
	kubectl(t, tc, "uncordon", node)
	kubectl(t, tc, "cordon", node)
	code, out = uncordonCLI(t, flags, node, "--yes")
	if code != ExitAttention || !cordonedNow(t, cs, node) {
		t.Fatalf("a hand cordon after SUC's job failed was undone: exit %d, cordoned %v\n%s", code, cordonedNow(t, cs, node), out)
	}
	if !strings.Contains(out, "not its coordinator's cordon") || !strings.Contains(out, "cordoned by kubectl at ") || !strings.Contains(out, "after job") {
		t.Errorf("the refusal does not say whose cordon it is:\n%s", out)
	}
}

// A user who may not read Jobs (token auth, RBAC without batch/jobs) and a
// node whose failed SUC job was deleted and created again, and runs: the
// user's uncordon is refused (before the fix it passed on the plan's
// JobFailed condition alone, while the administrator was refused), the
// text says which read is missing, and the snapshot lists SUC unread
// (exit 1), never "suc ok" with "unread []".
func TestUncordonJobsUnreadRealCluster(t *testing.T) {
	tc, cs, ctx := sucCluster(t)
	ns := sucNamespace(t, tc)
	node, _, err := suctest.Wedge(ctx, cs, tc.Dynamic(t), ns, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// SUC deletes the failed job after its TTL and creates it again: the
	// new one runs (and drains the node again).
	latest := suctest.MungeVersion("v1.31.4+k3s1")
	old := suctest.Job(ns, "wedge", node, latest, suctest.LatestHash(latest, ""), true, false)
	bg := metav1.DeletePropagationBackground
	if err := cs.BatchV1().Jobs(ns).Delete(ctx, old.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	if err := waitGone(ctx, cs, ns, old.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := suctest.CreateJob(ctx, cs, old, time.Now(), time.Time{}); err != nil {
		t.Fatal(err)
	}
	read := []string{"get", "list", "watch"}
	grantRules(t, tc, "alice", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: append(read, "update", "patch")},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: read},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"daemonsets", "deployments"}, Verbs: read},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: read},
		{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: read},
		{APIGroups: []string{"longhorn.io"}, Resources: []string{"volumes"}, Verbs: read},
		{APIGroups: []string{"upgrade.cattle.io"}, Resources: []string{"plans"}, Verbs: read},
	})
	admin := []string{"--kubeconfig", kubeconfigCopy(t, tc), "--request-timeout", "5s", "--sync-timeout", "30s"}
	alice := append(append([]string{}, admin...), "--token", tc.UserConfig("alice").BearerToken)
	if code, out := uncordonCLI(t, admin, node, "--yes"); code != ExitAttention || !cordonedNow(t, cs, node) {
		t.Fatalf("administrator: exit %d, cordoned %v\n%s", code, cordonedNow(t, cs, node), out)
	}
	code, out := uncordonCLI(t, alice, node, "--yes")
	if code == ExitOK || !cordonedNow(t, cs, node) {
		t.Fatalf("a user who cannot read Jobs uncordoned a node whose job runs: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "jobs are not read (forbidden") {
		t.Errorf("the refusal does not say which read is missing:\n%s", out)
	}
	code, snap, text, stderr := unreadSnapshot(t, append(append([]string{}, alice...), "--coordinators"))
	if code != ExitError {
		t.Errorf("snapshot exit %d, want %d\n%s\n%s", code, ExitError, text, stderr)
	}
	if why, ok := model.UnreadReason(snap.Unread, "coordinators"); !ok || !strings.Contains(why, "suc forbidden") || !strings.Contains(why, "jobs are not read") {
		t.Errorf("unread %+v", snap.Unread)
	}
	if !strings.Contains(text, "jobs are not read") {
		t.Errorf("text does not say which read is missing:\n%s", text)
	}
}

func waitGone(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
	for {
		if _, err := cs.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// FLUO, written step by step by clients named as its agent and operator:
// f1 finished its reboot but its agent died before uncordoning it (the
// agent's own cordon, agent-made-unschedulable=true). While its agent pod
// runs the uncordon is refused (the agent uncordons it itself); once the
// pod crash-loops it is allowed, and done. Then an administrator cordons
// f1 again: agent-made-unschedulable is still "true" (rebootwatch's
// uncordon leaves it), but the cordon is kubectl's: refused, saying so.
// f2's cycle finished and an administrator uncordoned it by hand, leaving
// the annotation; their later cordon is refused too. Before the fix both
// were "still cordoned by FLUO's agent" and uncordoned.
func TestUncordonFlatcarOnlyTheAgentsCordonRealCluster(t *testing.T) {
	tc := cliCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs := tc.Client(t)
	agent, err := ft.AgentClient(tc.Admin)
	if err != nil {
		t.Fatal(err)
	}
	operator, err := ft.OperatorClient(tc.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns := tc.Namespace(t, "reboot-coordinator")
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, ft.Deployment(ns, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cycle := []struct {
		c     kubernetes.Interface
		steps []ft.Step
	}{
		{agent, []ft.Step{ft.AgentStarted, ft.UpdateDownloaded("4152.2.0")}},
		{operator, []ft.Step{ft.MarkBefore(), ft.CheckBeforePassed()}},
		{agent, []ft.Step{ft.AgentRebooting, ft.Cordon}},
		// The reboot; the agent starts again and clears its marks.
		{agent, []ft.Step{ft.AgentStarted}},
		{operator, []ft.Step{ft.MarkAfter(), ft.CheckAfterPassed()}},
	}
	for _, n := range []string{"f1", "f2"} {
		registerNode(t, cs, n, time.Now().Add(-time.Hour))
		for _, w := range cycle {
			if err := ft.Write(ctx, w.c, n, w.steps...); err != nil {
				t.Fatal(err)
			}
		}
	}
	flags := []string{"--kubeconfig", kubeconfigCopy(t, tc), "--request-timeout", "5s", "--sync-timeout", "30s"}

	// f1's agent pod runs: it uncordons f1 itself.
	pod := agentPod(ctx, t, cs, ns, "f1")
	code, out := uncordonCLI(t, flags, "f1", "--yes")
	if code != ExitAttention || !cordonedNow(t, cs, "f1") || !strings.Contains(out, "the agent runs") {
		t.Fatalf("f1 with its agent running: exit %d, cordoned %v\n%s", code, cordonedNow(t, cs, "f1"), out)
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	pod.Status.ContainerStatuses[0].Ready, pod.Status.ContainerStatuses[0].RestartCount = false, 7
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, out = uncordonCLI(t, flags, "f1", "--dry-run")
	if code != ExitOK || !strings.Contains(out, "cordoned by update-agent") {
		t.Fatalf("--dry-run of the agent's own cordon: exit %d\n%s", code, out)
	}
	if code, out = uncordonCLI(t, flags, "f1", "--yes"); code != ExitOK || cordonedNow(t, cs, "f1") {
		t.Fatalf("uncordon of the agent's own cordon: exit %d\n%s", code, out)
	}
	// An administrator cordons f1 again; agent-made-unschedulable is still
	// "true".
	kubectl(t, tc, "cordon", "f1")
	code, out = uncordonCLI(t, flags, "f1", "--yes")
	if code != ExitAttention || !cordonedNow(t, cs, "f1") {
		t.Fatalf("a hand cordon after rebootwatch's uncordon was undone: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "cordoned by kubectl at ") || !strings.Contains(out, "not by update-agent") {
		t.Errorf("f1: the refusal does not say whose cordon it is:\n%s", out)
	}

	// f2: uncordoned by hand after its cycle (the annotation stays), then
	// cordoned by hand.
	kubectl(t, tc, "uncordon", "f2")
	kubectl(t, tc, "cordon", "f2")
	code, out = uncordonCLI(t, flags, "f2", "--yes")
	if code != ExitAttention || !cordonedNow(t, cs, "f2") || !strings.Contains(out, "cordoned by kubectl at ") {
		t.Fatalf("f2: a hand cordon beside a stale agent-made-unschedulable: exit %d, cordoned %v\n%s", code, cordonedNow(t, cs, "f2"), out)
	}
}

// agentPod creates FLUO's update-agent pod on node as its DaemonSet runs
// it (examples/deploy/update-agent.yaml), Running and Ready since now.
func agentPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, node string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flatcar-linux-update-agent-" + node,
		Labels: map[string]string{"app": "flatcar-linux-update-agent"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "update-agent",
			Image: "ghcr.io/flatcar/flatcar-linux-update-operator:v0.10.0-rc2", Command: []string{"/bin/update-agent"}}}}}
	p, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "update-agent", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}}
	p, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sucCluster is the package's shared cluster with SUC's Plan CRD served
// until the test ends (left installed, it would change what later tests
// read), its client, and a context bounding the test's calls (two minutes).
func sucCluster(t *testing.T) (*testcluster.Cluster, kubernetes.Interface, context.Context) {
	t.Helper()
	tc := cliCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	suctest.InstallCRDForTest(t, tc.Dynamic(t), tc.Client(t).Discovery())
	return tc, tc.Client(t), ctx
}
