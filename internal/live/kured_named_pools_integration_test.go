package live

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured/kuredtest"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// Issue 33 §2 follow-up, on a real apiserver: kured as two DaemonSets in two
// namespaces, read as the deployed agent reads them, by name
// (--kured-daemonset). Named both (ns/a,ns/b), both locks are judged, each
// pending node waits for its own pool's window only, and pool b's reap
// passes the fresh read of both named DaemonSets. Named only pool a, pool
// b's pending node is told that none of the DaemonSets read runs on it —
// never pool a's window — and pool b's lock is not read at all.
func TestKuredNamedNodePools(t *testing.T) {
	tc := testcluster.SharedAlone(t)
	cs := tc.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const nsB = "kured-pool-b"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsB}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	const ann = "example.com/reboot-lock"
	created := time.Now().Add(-time.Hour)
	// Pool a reboots only tomorrow (its window is shut now); pool b any day.
	tomorrow := strings.ToLower(time.Now().UTC().Add(24 * time.Hour).Weekday().String()[:2])
	mk := func(ns, name, pool, value string, args ...string) *appsv1.DaemonSet {
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
	a := mk("kube-system", "kured-a", "a", "", "--lock-annotation="+ann, "--reboot-days="+tomorrow, "--time-zone=UTC")
	b := mk(nsB, "kured-b", "b", kuredtest.Single("gone-b", created, 0, false), "--lock-annotation="+ann)
	for _, n := range []string{"a1", "b1"} {
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
	poolPod(ctx, t, cs, a.Name+"-a1", "a1", a.Spec.Selector.MatchLabels, a.Name, a.UID)
	bp := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: nsB, Name: "kured-b-b1", Labels: b.Spec.Selector.MatchLabels,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(b, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}},
		Spec: corev1.PodSpec{NodeName: "b1", Containers: []corev1.Container{{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.23.0"}}}}
	if _, err := cs.CoreV1().Pods(nsB).Create(ctx, bp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	refA := model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured-a"}
	refB := model.LockRef{Kind: model.LockKured, Namespace: nsB, Name: "kured-b"}

	// open reads the cluster with --kured-daemonset=named until both nodes
	// are judged pending, their pools' pods read.
	open := func(t *testing.T, named string) (*Session, *model.Cluster) {
		t.Helper()
		s, err := Open(ctx, Options{Config: tc.Admin, Context: "itest", RequestTimeout: 5 * time.Second, KuredDaemonSet: named})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		c, err := s.Collect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the named pools read ("+named+")", func() bool {
			s.Drain(c)
			// kured's reboot-required signal comes from Prometheus,
			// which this cluster has not: both nodes need a reboot.
			c.Apply(model.RebootRequiredSet{Values: map[string]bool{"a1": true, "b1": true}}, s.Clock())
			c.Recompute(s.Clock())
			for _, n := range []string{"a1", "b1"} {
				bs := c.Blockers().Nodes[n]
				if len(bs) == 0 || strings.Contains(bs[0].Reason, "not read yet") {
					return false
				}
			}
			return true
		})
		return s, c
	}
	kindsOf := func(bs []model.Blocker) (out []model.BlockerKind) {
		for _, b := range bs {
			out = append(out, b.Kind)
		}
		return out
	}

	t.Run("both named", func(t *testing.T) {
		s, c := open(t, "kube-system/kured-a,"+nsB+"/kured-b")
		if h, _ := c.Source(model.SourceKured); h.Status != model.StatusOK || !strings.Contains(h.Message, "2 kured DaemonSets named, one lock each (node pools): kube-system/kured-a, kured-pool-b/kured-b") {
			t.Fatalf("kured source: %+v", h)
		}
		var locks []string
		for _, l := range c.Locks() {
			if l.Kind == model.LockKured {
				locks = append(locks, l.Namespace+"/"+l.Name)
			}
		}
		if strings.Join(locks, " ") != "kube-system/kured-a kured-pool-b/kured-b" {
			t.Fatalf("kured locks judged: %v", locks)
		}
		bs := c.Blockers()
		if a1 := bs.Nodes["a1"]; len(a1) != 1 || a1[0].Kind != model.BlockerWindow {
			t.Errorf("a1 (pool a: its window shut until %s): %v %+v", tomorrow, kindsOf(a1), a1)
		}
		// b1 waits for pool b's lock (held by the ghost gone-b), never for
		// pool a's shut window.
		if b1 := bs.Nodes["b1"]; len(b1) != 1 || b1[0].Kind != model.BlockerLock || b1[0].Lock == nil || *b1[0].Lock != refB {
			t.Errorf("b1 (pool b: its lock held by gone-b, its window open): %v %+v", kindsOf(b1), b1)
		}
		// The reap of pool b's ghost: its fresh read lists both named
		// DaemonSets, each by its name, and finds them as judged.
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
		gotB, err := cs.AppsV1().DaemonSets(nsB).Get(ctx, "kured-b", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := gotB.Annotations[ann]; ok {
			t.Fatalf("pool b's lock still there: %q", v)
		}
	})

	t.Run("only pool a named", func(t *testing.T) {
		_, c := open(t, "kube-system/kured-a")
		var readA bool
		for _, l := range c.Locks() {
			readA = readA || l.LockRef == refA
			if l.LockRef == refB {
				t.Errorf("pool b's lock read, though only pool a is named: %+v", l.LockRef)
			}
		}
		if !readA {
			t.Errorf("pool a's lock not read")
		}
		bs := c.Blockers()
		if a1 := bs.Nodes["a1"]; len(a1) != 1 || a1[0].Kind != model.BlockerWindow {
			t.Errorf("a1 (pool a): %v %+v", kindsOf(a1), a1)
		}
		b1 := bs.Nodes["b1"]
		if len(b1) != 1 || b1[0].Kind != model.BlockerUnknown || b1[0].Stalls ||
			!strings.Contains(b1[0].Reason, "none of the kured DaemonSets read (kube-system/kured-a) runs on it") {
			t.Fatalf("b1 (pool b, not named): want it told no kured DaemonSet read runs on it, got %v %+v", kindsOf(b1), b1)
		}
		if strings.Contains(b1[0].Reason, "no kured runs on") {
			t.Errorf("b1: claims no kured runs on it, though pool b's is merely not named: %s", b1[0].Reason)
		}
	})
}
