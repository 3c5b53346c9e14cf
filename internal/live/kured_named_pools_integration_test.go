package live

import (
	"context"
	"strings"
	"testing"
	"time"

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
	a := poolDaemonSet(ctx, t, cs, "kube-system", "kured-a", "a", ann, "", "--lock-annotation="+ann, "--reboot-days="+tomorrow, "--time-zone=UTC")
	b := poolDaemonSet(ctx, t, cs, nsB, "kured-b", "b", ann, kuredtest.Single("gone-b", created, 0, false), "--lock-annotation="+ann)
	readyNodes(ctx, t, cs, created, "a1", "b1")
	poolPod(ctx, t, cs, "kube-system", a.Name+"-a1", "a1", a.Spec.Selector.MatchLabels, a.Name, a.UID)
	poolPod(ctx, t, cs, nsB, "kured-b-b1", "b1", b.Spec.Selector.MatchLabels, b.Name, b.UID)
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
