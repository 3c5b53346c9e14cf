package live

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured/kuredtest"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// Issue 33 §2, on a real apiserver: kured as two DaemonSets, one per node
// pool, each naming itself and each keeping its lock under the same
// annotation name on itself. Both locks are judged (a slot group each, at
// its own --concurrency), each pool is the nodes its own pods run on (a
// look-alike pod with pool A's labels and another owner is not pool A's),
// and the reap of pool B's ghost writes pool B's DaemonSet only: pool A's
// is not touched (same resourceVersion, same annotation).
func TestKuredTwoNodePools(t *testing.T) {
	tc := testcluster.SharedAlone(t)
	cs := tc.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const ann = "example.com/reboot-lock"
	created := time.Now().Add(-time.Hour)
	a := poolDaemonSet(ctx, t, cs, "kube-system", "kured-a", "a", ann, kuredtest.Multi(2, kuredtest.Value{NodeID: "gone-a", Created: created}),
		"--lock-annotation="+ann, "--concurrency=2")
	b := poolDaemonSet(ctx, t, cs, "kube-system", "kured-b", "b", ann, kuredtest.Single("gone-b", created, 0, false), "--lock-annotation="+ann)
	readyNodes(ctx, t, cs, created, "a1", "b1", "x1")
	poolPod(ctx, t, cs, "kube-system", a.Name+"-a1", "a1", a.Spec.Selector.MatchLabels, a.Name, a.UID)
	poolPod(ctx, t, cs, "kube-system", b.Name+"-b1", "b1", b.Spec.Selector.MatchLabels, b.Name, b.UID)
	poolPod(ctx, t, cs, "kube-system", "impostor-x1", "x1", a.Spec.Selector.MatchLabels, "kured-a", types.UID("not-kured-a"))

	s, err := Open(ctx, Options{Config: tc.Admin, Context: "itest", RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	refA := model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured-a"}
	refB := model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured-b"}
	waitFor(t, "both pools read", func() bool {
		s.Drain(c)
		c.Recompute(s.Clock())
		sa, okA := c.LockScope(refA)
		sb, okB := c.LockScope(refB)
		return okA && okB && len(sa.Nodes) == 1 && sa.Nodes["a1"] && len(sb.Nodes) == 1 && sb.Nodes["b1"]
	})
	if h, _ := c.Source(model.SourceKured); h.Status != model.StatusOK || !strings.Contains(h.Message, "2 kured DaemonSets, one lock each (node pools): kube-system/kured-a, kube-system/kured-b") {
		t.Fatalf("kured source: %+v", h)
	}
	caps := map[string]int{}
	for _, g := range c.Slots() {
		if g.Kind == model.LockKured {
			caps[g.Owner] = g.Capacity
		}
	}
	if len(caps) != 2 || caps["kube-system/kured-a"] != 2 || caps["kube-system/kured-b"] != 1 {
		t.Fatalf("kured slot groups: %v", caps)
	}
	// --snapshot -o json: the two groups, and an exit code that is about
	// the locks (two ghosts: attention, 2), not "could not read" (1).
	jcaps := map[string]int{}
	for _, g := range c.Snapshot(s.Clock()).Slots {
		if g.Kind == model.LockKured && g.Capacity != nil {
			jcaps[g.Owner] = *g.Capacity
		}
	}
	if len(jcaps) != 2 || jcaps["kube-system/kured-a"] != 2 || jcaps["kube-system/kured-b"] != 1 {
		t.Fatalf("snapshot slots: %v", jcaps)
	}
	if code := c.ExitCode(s.Clock()); code != 2 {
		t.Fatalf("exit code %d, want 2 (two ghosts), never 1 (ambiguous)", code)
	}

	p, err := s.Engine().Plan(c, refB, "gone-b", model.ActionReap, s.Clock())
	if err != nil {
		t.Fatal(err)
	}
	if !p.Allowed {
		t.Fatalf("reap of pool b's ghost refused: %s", p.Refusal)
	}
	r := (&lock.Actor{Client: s.Client, Who: "alice", Fresh: s.FreshReaders()}).Do(ctx, p, lock.DoOptions{})
	if r.Outcome != model.OutcomeDone {
		t.Fatalf("reap: %+v", r)
	}
	gotA, err := cs.AppsV1().DaemonSets("kube-system").Get(ctx, "kured-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if gotA.ResourceVersion != a.ResourceVersion || gotA.Annotations[ann] != a.Annotations[ann] {
		t.Fatalf("pool b's reap touched pool a's DaemonSet: rv %s → %s, %q", a.ResourceVersion, gotA.ResourceVersion, gotA.Annotations[ann])
	}
	gotB, err := cs.AppsV1().DaemonSets("kube-system").Get(ctx, "kured-b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := gotB.Annotations[ann]; ok {
		t.Fatalf("pool b's lock still there: %q", v)
	}
}

// poolPod creates a pod bound to node whose controller is the DaemonSet
// name/uid (no controller runs here: the pod stays Pending).
func poolPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name, node string, labels map[string]string, owner string, uid types.UID) {
	t.Helper()
	yes := true
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: owner, UID: uid, Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.23.0"}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// poolDaemonSet creates kured's DaemonSet ns/name for node pool pool (its
// labels and nodeSelector pool=<pool>), kured's args extended by args and
// its lock annotation ann set to value (none when value is empty); it is
// deleted when the test ends.
func poolDaemonSet(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name, pool, ann, value string, args ...string) *appsv1.DaemonSet {
	t.Helper()
	d := kuredtest.DaemonSet(ns, name)
	labels := map[string]string{"app.kubernetes.io/name": "kured", "pool": pool}
	d.Labels, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels = labels, labels, labels
	d.Spec.Template.Spec.NodeSelector = map[string]string{"pool": pool}
	d.Spec.Template.Spec.Containers[0].Args = append(d.Spec.Template.Spec.Containers[0].Args, args...)
	if value != "" {
		d.Annotations = map[string]string{ann: value}
	}
	got, err := cs.AppsV1().DaemonSets(ns).Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AppsV1().DaemonSets(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return got
}

// readyNodes creates the nodes named, Ready since created, each with its
// own boot id.
func readyNodes(ctx context.Context, t *testing.T, cs kubernetes.Interface, created time.Time, names ...string) {
	t.Helper()
	for _, n := range names {
		got, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.NewTime(created)}}
		got.Status.NodeInfo.BootID = "boot-" + n
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
