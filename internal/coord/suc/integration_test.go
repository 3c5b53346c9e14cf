package suc_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc/suctest"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// makeNode registers a Ready node with its hostname label.
func makeNode(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{suc.LabelHostname: name, "kubernetes.io/os": "linux"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(), Reason: "KubeletReady"}}
	n.Status.NodeInfo.BootID = "boot-" + name
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// kubectl runs the real kubectl against the test cluster, as SUC's drain
// and cordon init containers do.
func kubectl(t *testing.T, c *testcluster.Cluster, args ...string) string {
	t.Helper()
	dir, err := testcluster.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(dir, "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestReadAgainstAPIServer: the Plan CRD with upstream's names and printer
// columns, a plan whose job failed on a node its drain container cordoned,
// and the job of a plan deleted mid-cycle; read once with the least RBAC
// the driver declares, then judged.
func TestReadAgainstAPIServer(t *testing.T) {
	testcluster.Require(t, "etcd", "kube-apiserver", "kubectl")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := sucCluster(t)
	cs, dyn := c.Client(t), c.Dynamic(t)
	ns := jobNamespace(t, c, "system-upgrade")
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		makeNode(ctx, t, cs, n)
	}

	spec := suctest.PlanSpec{Concurrency: 1, Drain: true, Version: "v1.31.4+k3s1", NodeSelector: map[string]string{"kubernetes.io/os": "linux"}}
	latest := suctest.MungeVersion(spec.Version)
	hash := suctest.LatestHash(latest, "")
	now := time.Now()
	jb := suctest.Job(ns, "k3s-server", "n1", latest, hash, true, false)
	msg := suctest.JobFailedMessage(ns, jb.Name, "n1", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
	status := suctest.StatusWith(spec.Version, "", []string{"n1"},
		suctest.Cond("Validated", "True", "PlanIsValid", "", now), suctest.Cond("LatestResolved", "True", "Version", "", now),
		suctest.Cond("Complete", "False", "JobFailed", msg, now))
	if _, err := suctest.Create(ctx, dyn, suctest.Plan(ns, "k3s-server", spec), status); err != nil {
		t.Fatal(err)
	}
	if _, err := suctest.CreateJob(ctx, cs, jb, now.Add(-10*time.Minute), time.Time{}); err != nil {
		t.Fatal(err)
	}
	orphan := suctest.Job(ns, "k3s-agent", "n3", latest, hash, true, false)
	if _, err := suctest.CreateJob(ctx, cs, orphan, now.Add(-time.Hour), time.Time{}); err != nil {
		t.Fatal(err)
	}
	// The jobs' drain init containers run `kubectl drain`: n1 is cordoned
	// by its job, n3 by the job of a plan that is gone now; then the jobs
	// fail (after the cordon: the cordon is theirs).
	kubectl(t, c, "cordon", "n1")
	kubectl(t, c, "cordon", "n3")
	for _, j := range []string{jb.Name, orphan.Name} {
		if _, err := suctest.FailJob(ctx, cs, ns, j, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	// n4: cordoned by hand, beside a tenant's Job in another namespace with
	// SUC's plan and node labels but not its controller label: not SUC's.
	kubectl(t, c, "cordon", "n4")
	tenant := jobNamespace(t, c, "tenant")
	tj := suctest.Job(tenant, "k3s-agent", "n4", latest, hash, true, false)
	delete(tj.Labels, suc.LabelController)
	delete(tj.Spec.Template.Labels, suc.LabelController)
	if _, err := suctest.CreateJob(ctx, cs, tj, now.Add(-time.Hour), time.Now()); err != nil {
		t.Fatal(err)
	}

	// Upstream's printer columns answer kubectl get.
	out := kubectl(t, c, "get", "plans", "-n", ns, "-o", "wide")
	for _, col := range []string{"IMAGE", "CHANNEL", "VERSION", "COMPLETE", "MESSAGE", "APPLYING"} {
		if !strings.Contains(out, col) {
			t.Errorf("kubectl get plans lacks column %s:\n%s", col, out)
		}
	}
	if !strings.Contains(out, "[\"n1\"]") || !strings.Contains(out, "failed on Node n1") {
		t.Errorf("kubectl get plans -o wide:\n%s", out)
	}

	// Read with exactly the driver's RBAC plus nodes.
	rules := append([]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}}},
		suc.Driver{}.Capabilities().RBAC...)
	grant(ctx, t, c, "alice", rules)
	acs, err := kubernetes.NewForConfig(c.UserConfig("alice"))
	if err != nil {
		t.Fatal(err)
	}
	adyn, err := dynamic.NewForConfig(c.UserConfig("alice"))
	if err != nil {
		t.Fatal(err)
	}
	in := suc.Read(ctx, adyn, acs, "")
	if in.PlansUnread != "" || in.JobsUnread != "" || in.NodesUnread != "" {
		t.Fatalf("unread with the driver's RBAC: %q %q %q", in.PlansUnread, in.JobsUnread, in.NodesUnread)
	}
	if len(in.Plans) != 1 || len(in.Jobs) != 2 || len(in.Nodes) != 4 {
		t.Fatalf("read %d plans, %d jobs, %d nodes", len(in.Plans), len(in.Jobs), len(in.Nodes))
	}
	r := suc.Judge(in, time.Now())
	jf := find(t, r.Blockers, "n1", suc.BlockerJobFailed)
	if !strings.Contains(jf.Reason, "BackoffLimitExceeded: Job has reached the specified backoff limit") {
		t.Errorf("job-failed = %q", jf.Reason)
	}
	for _, n := range []string{"n1", "n3"} {
		b := find(t, r.Blockers, n, model.BlockerCordon)
		if b.Action != model.ActionUncordon || !strings.HasPrefix(evidence(b, "cordon"), "cordoned by kubectl at ") {
			t.Errorf("%s stuck-cordon = %+v", n, b)
		}
	}
	for _, b := range r.Blockers {
		if b.Node == "n4" && b.Kind == model.BlockerCordon {
			t.Errorf("a tenant's look-alike Job made n4 stuck-cordon: %+v", b)
		}
	}
	if len(r.Uncordon) != 2 || r.Uncordon[0] != "n1" || r.Uncordon[1] != "n3" {
		t.Errorf("uncordon = %v, want n1 and n3", r.Uncordon)
	}
	if lk := find(t, r.Blockers, "n2", model.BlockerLock); !lk.Stalls {
		t.Errorf("n2 waits on a failed holder without stalling: %+v", lk)
	}

	// Issue 32 §1: the one-shot read declares the plan's slot (capacity,
	// holder, the job's step, since the job's creation) and each selected
	// node's place in its cycle, for the model.
	obs := suc.Driver{}.Observe(ctx, coord.Clients{Kube: acs, Dynamic: adyn}, time.Now())
	if !obs.Judged || len(obs.Slots) != 1 {
		t.Fatalf("observed judged %v, slots %+v", obs.Judged, obs.Slots)
	}
	g := obs.Slots[0]
	if g.Kind != suc.Kind || g.Owner != ns+"/k3s-server" || !g.Known || g.Capacity != 1 || len(g.Holders) != 1 ||
		g.Holders[0].Node != "n1" || g.Holders[0].Step != "job failed" || g.Holders[0].Since.IsZero() {
		t.Errorf("slot group %+v", g)
	}
	phases := map[string]model.Phase{}
	for _, nc := range obs.Nodes {
		phases[nc.Node] = nc.Phase
	}
	if phases["n1"] != model.PhaseDraining || phases["n2"] != model.PhasePending || phases["n3"] != model.PhasePending {
		t.Errorf("node cycles %v, want n1 draining (job failed), n2 and n3 waiting", phases)
	}

	// Without the grants: plans unread, nothing judged, nothing offered.
	bcs, _ := kubernetes.NewForConfig(c.UserConfig("bob"))
	bdyn, _ := dynamic.NewForConfig(c.UserConfig("bob"))
	if obs := (suc.Driver{}).Observe(ctx, coord.Clients{Kube: bcs, Dynamic: bdyn}, time.Now()); obs.Judged || len(obs.Slots) != 0 {
		t.Errorf("bob's read declares slots: judged %v %+v (unread is unknown, not none)", obs.Judged, obs.Slots)
	}
	in = suc.Read(ctx, bdyn, bcs, "")
	if !strings.HasPrefix(in.PlansUnread, "forbidden") || !strings.HasPrefix(in.NodesUnread, "forbidden") {
		t.Fatalf("bob read plans %q nodes %q", in.PlansUnread, in.NodesUnread)
	}
	if r := suc.Judge(in, time.Now()); r.Unknown == "" || len(r.Uncordon) != 0 {
		t.Errorf("judged from forbidden reads: %+v", r)
	}
}

func grant(ctx context.Context, t *testing.T, c *testcluster.Cluster, user string, rules []rbacv1.PolicyRule) {
	t.Helper()
	cs := c.Client(t)
	name := "rebootwatch-suc-" + user
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The apiserver is shared: the grant ends with the test.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cs.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("clean-up: ClusterRoleBinding %s: %v", name, err)
		}
		if err := cs.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("clean-up: ClusterRole %s: %v", name, err)
		}
	})
	// RBAC authorizes from a cache that can lag the binding: wait until
	// it allows one request of each rule.
	for _, a := range testcluster.RuleAttributes("", rules) {
		c.WaitAllowed(t, user, a)
	}
}

// Issue 32 §3 (review), against a real apiserver: while SUC's jobs ran,
// n1 was cordoned by an administrator's server-side apply of the node
// (kubectl apply --server-side: manager kubectl, operation Apply) and n2,
// uncordoned by hand, cordoned again by a maintenance controller (an
// Update by its own manager); then the jobs failed. Neither cordon is the
// jobs' kubectl drain, whatever its time: no uncordon, and why says whose.
// Before the fix both were "while job … ran: the job's drain or cordon",
// offered for uncordon.
func TestCordonByAnotherWriterWhileJobRan(t *testing.T) {
	testcluster.Require(t, "etcd", "kube-apiserver", "kubectl")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := sucCluster(t)
	cs, dyn := c.Client(t), c.Dynamic(t)
	ns := jobNamespace(t, c, "system-upgrade")
	for _, n := range []string{"n1", "n2"} {
		makeNode(ctx, t, cs, n)
	}
	spec := suctest.PlanSpec{Concurrency: 2, Drain: true, Version: "v1.31.4+k3s1", NodeSelector: map[string]string{"kubernetes.io/os": "linux"}}
	latest := suctest.MungeVersion(spec.Version)
	hash := suctest.LatestHash(latest, "")
	now := time.Now()
	if _, err := suctest.Create(ctx, dyn, suctest.Plan(ns, "k3s-server", spec), suctest.StatusWith(spec.Version, "", []string{"n1", "n2"},
		suctest.Cond("Validated", "True", "PlanIsValid", "", now), suctest.Cond("LatestResolved", "True", "Version", "", now))); err != nil {
		t.Fatal(err)
	}
	var jobs []string
	for _, n := range []string{"n1", "n2"} {
		jb := suctest.Job(ns, "k3s-server", n, latest, hash, true, false)
		if _, err := suctest.CreateJob(ctx, cs, jb, now, time.Time{}); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, jb.Name)
	}
	manifest := filepath.Join(t.TempDir(), "n1.yaml")
	if err := os.WriteFile(manifest, []byte("apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\nspec:\n  unschedulable: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl(t, c, "apply", "--server-side", "-f", manifest)
	kubectl(t, c, "cordon", "n2")
	kubectl(t, c, "uncordon", "n2")
	if err := suctest.CordonAs(ctx, cs, "node-maintenance-operator", "n2", true); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if _, err := suctest.FailJob(ctx, cs, ns, j, time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	in := suc.Read(ctx, dyn, cs, "")
	if in.PlansUnread != "" || in.JobsUnread != "" || in.NodesUnread != "" || len(in.Jobs) != 2 {
		t.Fatalf("read: %q %q %q, %d jobs", in.PlansUnread, in.JobsUnread, in.NodesUnread, len(in.Jobs))
	}
	r := suc.Judge(in, time.Now())
	if len(r.Uncordon) != 0 {
		t.Errorf("a cordon SUC's kubectl did not write offered for uncordon: %v (%v)", r.Uncordon, r.Blockers)
	}
	for n, want := range map[string]string{"n1": "cordoned by kubectl at ", "n2": "cordoned by node-maintenance-operator at "} {
		why := r.NotOwned[n]
		if !strings.Contains(why, want) || !strings.Contains(why, "not provably its cordon") {
			t.Errorf("%s not owned = %q", n, why)
		}
	}
	if why := r.NotOwned["n1"]; !strings.Contains(why, "(Apply)") {
		t.Errorf("n1's server-side apply is not said: %q", why)
	}
}
