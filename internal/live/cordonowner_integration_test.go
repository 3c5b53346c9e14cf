package live

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/internal/coord/suc"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc/suctest"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// Issue 32 §3, the dashboard's path (u plans through the session's engine,
// the confirm acts through an actor with the session's fresh readers),
// against a real apiserver:
//   - SUC's failed job left its node cordoned: u is offered and planned;
//     before the confirm an administrator uncordons and cordons the node
//     again by hand. The confirm judges the cordon's owner again from a
//     fresh read and writes nothing; once the session reads again, u is
//     refused at the node gate, saying whose cordon it is.
//   - a hand cordon beside a tenant's look-alike Job (SUC's plan and node
//     labels, no controller label, another namespace) is never offered.
func TestDashboardUncordonsOnlyTheCoordinatorsCordonRealCluster(t *testing.T) {
	testcluster.Require(t, "etcd", "kube-apiserver")
	tc := testcluster.SharedAlone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, dyn := tc.Client(t), tc.Dynamic(t)
	sucInstalled(t, tc)
	ns := coordinatorNamespace(t, tc, "system-upgrade")
	node, _, err := suctest.Wedge(ctx, cs, dyn, ns, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	failed := time.Now()
	// The tenant's node and Job.
	const tenantNode = "tenant-1"
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: tenantNode, Labels: map[string]string{"kubernetes.io/hostname": tenantNode}}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := suctest.CordonAs(ctx, cs, suctest.KubectlManager, tenantNode, true); err != nil {
		t.Fatal(err)
	}
	tenant := coordinatorNamespace(t, tc, "tenant")
	latest := suctest.MungeVersion("v1.31.4+k3s1")
	tj := suctest.Job(tenant, "agent-plan", tenantNode, latest, suctest.LatestHash(latest, ""), true, false)
	delete(tj.Labels, suc.LabelController)
	delete(tj.Spec.Template.Labels, suc.LabelController)
	if _, err := suctest.CreateJob(ctx, cs, tj, time.Now().Add(-time.Hour), time.Now()); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, Options{Config: tc.Admin, Context: "itest", RequestTimeout: 5 * time.Second,
		CoordinatorInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "SUC's own cordon offered", func() bool {
		_, left := s.Engine().LeftCordoned(node)
		return left
	})
	plan := func(name string) lock.Plan {
		t.Helper()
		s.Drain(c)
		c.Recompute(s.Clock())
		p, err := s.Engine().PlanUncordon(c, name, s.Clock())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := plan(node)
	if !p.Allowed || p.Write.CordonBy != suctest.KubectlManager {
		t.Fatalf("u on SUC's own cordon: %s; write %s", p.Refusal, p.Write)
	}
	if _, left := s.Engine().LeftCordoned(tenantNode); left {
		t.Error("a tenant's look-alike Job made its node's hand cordon SUC's")
	}
	if q := plan(tenantNode); q.Allowed {
		t.Errorf("u on a hand cordon beside a tenant's Job allowed: %+v", q.Gates)
	}

	// The dialog stays open; an administrator cordons the node again by
	// hand, after the job failed.
	nextSecond(failed)
	if err := suctest.CordonAs(ctx, cs, suctest.KubectlManager, node, false); err != nil {
		t.Fatal(err)
	}
	if err := suctest.CordonAs(ctx, cs, suctest.KubectlManager, node, true); err != nil {
		t.Fatal(err)
	}
	r := (&lock.Actor{Client: s.Client, Who: "alice", Fresh: s.FreshReaders()}).Do(ctx, p, lock.DoOptions{})
	got, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome == model.OutcomeDone || !got.Spec.Unschedulable {
		t.Fatalf("confirm of a plan judged on SUC's cordon undid a later hand cordon: %+v", r)
	}
	t.Logf("confirm refused: %s", r.Message)
	if !strings.Contains(r.Message, "not its coordinator's") && !strings.Contains(r.Message, "another cordon than the one judged") {
		t.Errorf("refusal %q does not say the cordon changed owner", r.Message)
	}
	waitFor(t, "the hand cordon no longer offered", func() bool {
		_, left := s.Engine().LeftCordoned(node)
		return !left
	})
	// The coordinator read may land between the administrator's uncordon
	// and cordon (the node then neither left cordoned nor someone else's):
	// wait for the read that judged the hand cordon, then plan on it.
	var q lock.Plan
	var gate string
	waitFor(t, "the hand cordon judged someone else's", func() bool {
		q, gate = plan(node), ""
		for _, g := range q.FailedGates() {
			if g.Name == lock.GateNode {
				gate = g.Reason
			}
		}
		return strings.Contains(gate, "not its coordinator's cordon")
	})
	if q.Allowed {
		t.Fatalf("u on a hand cordon after SUC's job failed allowed: %+v", q.Gates)
	}
	if !strings.Contains(gate, "not its coordinator's cordon") || !strings.Contains(gate, "cordoned by kubectl at ") || !strings.Contains(gate, "after job") {
		t.Errorf("node gate %q does not say whose cordon it is", gate)
	}
}

// nextSecond waits past the second after at: the apiserver records
// managedFields times to the second, so a write after this is later than
// one at at (a sleep that is the scenario).
func nextSecond(at time.Time) {
	time.Sleep(time.Until(at.Truncate(time.Second).Add(1100 * time.Millisecond)))
}
