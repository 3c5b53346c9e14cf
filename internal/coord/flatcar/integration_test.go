package flatcar_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/internal/coord/flatcar"
	ft "github.com/rebootwatch/rebootwatch/internal/coord/flatcar/flatcartest"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// register is the kubelet's registration: a Node with its own labels (a
// Node created with no field set gets no managedFields entry, and the
// apiserver then records no later Update either).
func register(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string, ready time.Time) {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setReady(ctx, t, cs, n, ready, "boot-1")
}

// setReady is the kubelet's status: Ready since at, this boot id.
func setReady(ctx context.Context, t *testing.T, cs kubernetes.Interface, n *corev1.Node, at time.Time, boot string) {
	t.Helper()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.NewTime(at), LastTransitionTime: metav1.NewTime(at)}}
	n.Status.NodeInfo.BootID = boot
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestReadAgainstAPIServer: FLUO's cycle written step by step by clients
// named as its agent and operator, up to the headline wedge (the agent did
// not run after its node's reboot) on n1 while n2 waits, and a node held
// in its before-reboot check; read once with the driver's RBAC, judged.
func TestReadAgainstAPIServer(t *testing.T) {
	testcluster.Require(t, "etcd", "kube-apiserver")
	c := testcluster.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cs := c.Client(t)
	agent, err := ft.AgentClient(c.Admin)
	if err != nil {
		t.Fatal(err)
	}
	operator, err := ft.OperatorClient(c.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns := c.Namespace(t, "reboot-coordinator")
	const check = "example.com/before-reboot-test"
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, ft.Deployment(ns, []string{"--before-reboot-annotations=" + check}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(-time.Hour)
	for _, n := range []string{"n1", "n2"} {
		register(ctx, t, cs, n, start)
		if err := ft.Write(ctx, agent, n, ft.AgentStarted, ft.UpdateDownloaded("4152.2.0")); err != nil {
			t.Fatal(err)
		}
	}
	// n1 goes through the before-reboot check and starts its reboot.
	steps := []struct {
		c     kubernetes.Interface
		steps []ft.Step
	}{
		{operator, []ft.Step{ft.MarkBefore(check)}},
		{agent, []ft.Step{ft.Annotate(check, "true")}}, // the check's own DaemonSet
		{operator, []ft.Step{ft.CheckBeforePassed(check)}},
		{agent, []ft.Step{ft.AgentRebooting, ft.Cordon}},
	}
	for _, s := range steps {
		if err := ft.Write(ctx, s.c, "n1", s.steps...); err != nil {
			t.Fatal(err)
		}
	}
	// The kubelet comes back after the reboot (a new boot id, Ready again
	// 90s after the agent's last write); the agent never runs again.
	n1, err := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var wrote time.Time
	for _, e := range n1.ManagedFields {
		if e.Manager == "update-agent" && e.Time != nil && e.Time.After(wrote) {
			wrote = e.Time.Time
		}
	}
	if wrote.IsZero() {
		t.Fatalf("no update-agent managedFields entry: %+v; annotations %v", n1.ManagedFields, n1.Annotations)
	}
	back := wrote.Add(90 * time.Second)
	setReady(ctx, t, cs, n1, back, "boot-2")

	// Read with exactly the driver's RBAC plus nodes.
	rules := append([]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}}},
		flatcar.Driver{}.Capabilities().RBAC...)
	grant(ctx, t, c, "alice", rules)
	acs, err := kubernetes.NewForConfig(c.UserConfig("alice"))
	if err != nil {
		t.Fatal(err)
	}
	// judge is Observe's two reads: the nodes and settings, then the
	// update-agent pods of the nodes whose judging needs them.
	judge := func(in flatcar.Input, at time.Time) flatcar.Report {
		r := flatcar.Judge(in, at)
		if len(r.NeedAgentPod) > 0 {
			in.AgentPods = flatcar.ReadAgentPods(ctx, acs, r.NeedAgentPod)
			r = flatcar.Judge(in, at)
		}
		return r
	}
	in := flatcar.Read(ctx, acs, "")
	if in.NodesUnread != "" || in.SettingsUnread != "" || in.Settings.Unknown != "" {
		t.Fatalf("unread: nodes %q settings %q %q", in.NodesUnread, in.SettingsUnread, in.Settings.Unknown)
	}
	if in.Settings.Deployment != ns+"/flatcar-linux-update-operator" || len(in.Settings.Before) != 1 || in.Settings.Before[0] != check {
		t.Fatalf("settings = %+v", in.Settings)
	}
	r := judge(in, back.Add(10*time.Minute))
	// Issue 32 §1: the one-shot read declares FLUO's slot (n1, since the
	// agent's reboot-in-progress write) and each node's place in its
	// cycle, for the model: n1 recovering, n2 waiting.
	obs := flatcar.Driver{}.Observe(ctx, coord.Clients{Kube: acs}, back.Add(10*time.Minute))
	if !obs.Judged || len(obs.Slots) != 1 {
		t.Fatalf("observed judged %v, slots %+v", obs.Judged, obs.Slots)
	}
	if g := obs.Slots[0]; g.Kind != flatcar.Kind || !g.Known || g.Capacity != 1 || len(g.Holders) != 1 || g.Holders[0].Node != "n1" ||
		g.Holders[0].Step != "rebooted, agent not running" || g.Holders[0].Since.IsZero() {
		t.Errorf("slot group %+v", g)
	}
	phases := map[string]model.Phase{}
	for _, nc := range obs.Nodes {
		phases[nc.Node] = nc.Phase
	}
	if phases["n1"] != model.PhaseRecovering || phases["n2"] != model.PhasePending {
		t.Errorf("node cycles %v, want n1 recovering, n2 pending", phases)
	}
	b := find(t, r.Blockers, "n1", flatcar.BlockerAgentStopped)
	if !strings.Contains(b.Reason, "after update-agent set reboot-in-progress") {
		t.Errorf("agent-stopped = %q", b.Reason)
	}
	if len(r.Uncordon) != 1 || r.Uncordon[0] != "n1" {
		t.Errorf("uncordon = %v", r.Uncordon)
	}
	if lk := find(t, r.Blockers, "n2", model.BlockerLock); !lk.Stalls {
		t.Errorf("n2 = %+v", lk)
	}

	// n2's turn, its check unset: the operator's label is there, the
	// annotation is not.
	if err := ft.Write(ctx, agent, "n1", ft.AgentStarted); err != nil {
		t.Fatal(err)
	}
	if err := ft.Write(ctx, operator, "n1", ft.MarkAfter(), ft.CheckAfterPassed()); err != nil {
		t.Fatal(err)
	}
	if err := ft.Write(ctx, operator, "n2", ft.MarkBefore(check)); err != nil {
		t.Fatal(err)
	}
	in = flatcar.Read(ctx, acs, "")
	r = judge(in, time.Now().Add(time.Hour))
	rc := find(t, r.Blockers, "n2", flatcar.BlockerRebootCheck)
	if !rc.Stalls || !strings.Contains(rc.Reason, check+" (unset)") {
		t.Errorf("reboot-check = %+v", rc)
	}
	if sc := find(t, r.Blockers, "n1", model.BlockerCordon); sc.Action != model.ActionUncordon {
		t.Errorf("n1 left cordoned = %+v", sc)
	}
	// Its agent pod runs (the DaemonSet's pod on n1, read with the
	// driver's RBAC): the agent uncordons n1 itself, so it is not offered.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flatcar-linux-update-agent-n1"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "update-agent",
			Image: "ghcr.io/flatcar/flatcar-linux-update-operator:v0.10.0-rc2", Command: []string{"/bin/update-agent"}}}}}
	pod, err = cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	started := metav1.Now()
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning,
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "update-agent", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}}}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := judge(flatcar.Read(ctx, acs, ""), time.Now().Add(time.Hour)); len(r.Uncordon) != 0 || !strings.Contains(r.NotOwned["n1"], "is Running and Ready") {
		t.Errorf("n1 offered while its agent pod runs: %v %q", r.Uncordon, r.NotOwned["n1"])
	}
	// Issue 32 §3 (review): the same agent from a DaemonSet that sets no
	// command (FLUO's image's ENTRYPOINT is /bin/update-agent) runs all
	// the same: still not offered. Before the fix it was "no update-agent
	// pod runs on n1", offered.
	zero := int64(0)
	if err := cs.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	ep := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flatcar-linux-update-agent-n1-ep"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "update-agent",
			Image: "ghcr.io/flatcar/flatcar-linux-update-operator:v0.10.0-rc2"}}}}
	if ep, err = cs.CoreV1().Pods(ns).Create(ctx, ep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ep.Status = corev1.PodStatus{Phase: corev1.PodRunning,
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "update-agent", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}}}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, ep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := judge(flatcar.Read(ctx, acs, ""), time.Now().Add(time.Hour)); len(r.Uncordon) != 0 || !strings.Contains(r.NotOwned["n1"], "update-agent pod "+ns+"/flatcar-linux-update-agent-n1-ep is Running and Ready") {
		t.Errorf("n1 offered while its agent pod (the image's entrypoint) runs: %v %q", r.Uncordon, r.NotOwned["n1"])
	}

	// Without the Deployment grant: the checks are unknown, never none.
	bob := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}}}
	grant(ctx, t, c, "bob", bob)
	bcs, _ := kubernetes.NewForConfig(c.UserConfig("bob"))
	in = flatcar.Read(ctx, bcs, "")
	if !strings.HasPrefix(in.SettingsUnread, "forbidden") {
		t.Fatalf("bob settings %q", in.SettingsUnread)
	}
	r = flatcar.Judge(in, time.Now().Add(time.Hour))
	if rc := find(t, r.Blockers, "n2", flatcar.BlockerRebootCheck); !strings.Contains(rc.Reason, "unknown") {
		t.Errorf("reboot-check without settings = %q", rc.Reason)
	}
}

func grant(ctx context.Context, t *testing.T, c *testcluster.Cluster, user string, rules []rbacv1.PolicyRule) {
	t.Helper()
	cs := c.Client(t)
	name := "rebootwatch-flatcar-" + user
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// RBAC authorizes from a cache that can lag the binding: wait until
	// it allows one request of each rule.
	for _, a := range testcluster.RuleAttributes("", rules) {
		c.WaitAllowed(t, user, a)
	}
}
