package lock

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
)

// apiNode is the API Node a model node was read from.
func apiNode(n model.Node) *corev1.Node {
	out := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: types.UID(n.UID)},
		Spec:   corev1.NodeSpec{Unschedulable: n.Unschedulable},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{BootID: n.BootID, MachineID: n.MachineID}}}
	for _, c := range n.Conditions {
		out.Status.Conditions = append(out.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeConditionType(c.Type),
			Status: corev1.ConditionStatus(c.Status), LastTransitionTime: metav1.NewTime(c.LastTransition)})
	}
	return out
}

// withNodes returns objs plus the API Nodes the plan was judged on: the
// cluster as it really is when nothing changed since the judgement.
func withNodes(p Plan, objs ...runtime.Object) []runtime.Object {
	for _, n := range p.Nodes {
		objs = append(objs, apiNode(n))
	}
	return objs
}

func writesOf(cs *fake.Clientset) int {
	n := 0
	for _, a := range cs.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
		default:
			n++
		}
	}
	return n
}

// Before it writes, the actor reads the node list with a quorum read and
// refuses with fresh-data when it differs from the judged one, or when it
// cannot be read (a frozen API server): nothing is written (issue 11 §1).
func TestActorRefusesWhenFreshNodeListDiffers(t *testing.T) {
	ann := single(ent("n9", at(0), 0))
	p := ghostPlan(t, ann)
	if len(p.Nodes) != 1 || p.Nodes[0].Name != "n1" {
		t.Fatalf("the plan must carry the judged nodes: %+v", p.Nodes)
	}
	notReady := apiNode(p.Nodes[0])
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	notReady.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at(50 * time.Minute))
	extra := apiNode(node("n2"))
	cases := []struct {
		name  string
		objs  []runtime.Object
		wants []string
	}{
		{"a node went NotReady since", []runtime.Object{ds(ann, "100"), notReady}, []string{"n1 changed (ready=True → ready=False"}},
		{"a node joined since", withNodes(p, ds(ann, "100"), extra), []string{"n2 is new"}},
		{"a node left since", []runtime.Object{ds(ann, "100")}, []string{"n1 is gone"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := newFakeClientset(tc.objs...)
			a := &Actor{Client: cs, Who: "alice", Fresh: asJudged(p)}
			r := a.Do(context.Background(), p, DoOptions{})
			if r.Outcome != model.OutcomeRefused || !strings.Contains(r.Message, "reap refused: fresh-data: the node list read now differs") ||
				!strings.Contains(r.Message, "nothing written") {
				t.Fatalf("result %s: %s", r.Outcome, r.Message)
			}
			for _, w := range tc.wants {
				if !strings.Contains(r.Message, w) {
					t.Errorf("message %q lacks %q", r.Message, w)
				}
			}
			if n := writesOf(cs); n != 0 {
				t.Fatalf("%d writes after a refusal: %v", n, cs.Actions())
			}
			got, _ := cs.AppsV1().DaemonSets("kube-system").Get(context.Background(), "kured", metav1.GetOptions{})
			if got.Annotations[kured.Annotation] != ann {
				t.Fatal("the lock changed")
			}
		})
	}
}

func TestActorRefusesWhenNodeListCannotBeReadFresh(t *testing.T) {
	ann := single(ent("n9", at(0), 0))
	p := ghostPlan(t, ann)
	cs := newFakeClientset(withNodes(p, ds(ann, "100"))...)
	cs.PrependReactor("list", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, context.DeadlineExceeded
	})
	a := &Actor{Client: cs, Who: "alice", Fresh: asJudged(p)}
	r := a.Do(context.Background(), p, DoOptions{})
	if r.Outcome != model.OutcomeRefused || !strings.Contains(r.Message, "fresh-data: could not read the node list fresh") ||
		!strings.Contains(r.Message, "request timed out") {
		t.Fatalf("result %s: %s", r.Outcome, r.Message)
	}
	if n := writesOf(cs); n != 0 {
		t.Fatalf("%d writes: %v", n, cs.Actions())
	}
	var ds *appsv1.DaemonSet
	ds, _ = cs.AppsV1().DaemonSets("kube-system").Get(context.Background(), "kured", metav1.GetOptions{})
	if ds.Annotations[kured.Annotation] != ann {
		t.Fatal("the lock changed")
	}
}

// freshWorld is a ghost kured lock on n9 beside n1, one healthy Longhorn
// volume, a free fleetlock Lease and a blocking-alert filter with nothing
// firing: every gate of its reap passes, on every source's input.
func freshWorld(t *testing.T) (Plan, []runtime.Object) {
	t.Helper()
	now := at(time.Hour)
	e := New(Options{})
	ann := single(ent("n9", at(0), 0))
	k := kuredLock(ann)
	cfg := kured.ParseConfig([]string{"/usr/bin/kured", "--reboot-days=mo,tu", "--prometheus-url=http://user:secret@prom:9090"}, nil, nil)
	kspec(&k).Config = &cfg
	c := build(e, step{now, []model.Event{nodesOK(), up(node("n1")), lockEv(k), lockEv(fleet("")),
		model.VolumeUpserted{Volume: model.Volume{Namespace: "longhorn-system", Name: "pvc-db", Robustness: model.RobustnessHealthy}},
		model.AlertsFiring{}}})
	p, err := e.Plan(c, kuredRef, "n9", model.ActionReap, now)
	if err != nil || !p.Allowed {
		t.Fatalf("plan %+v %v", p, err)
	}
	return p, withNodes(p, ds(ann, "100"))
}

// Before it writes, the actor reads fresh every input of every gate, not
// only the nodes: what changed behind the sources' caches (a watch that
// stalled) refuses with fresh-data naming it, and nothing is written
// (issue 22 §1). Each case changes one source; the plan passed on all.
func TestActorRefusesWhenAGateInputChangedSinceJudged(t *testing.T) {
	p, objs := freshWorld(t)
	changedLocks := func(edit func(ls []model.LockObject)) func(context.Context) ([]model.LockObject, error) {
		return func(context.Context) ([]model.LockObject, error) {
			ls := make([]model.LockObject, len(p.Judged.Locks))
			for i, l := range p.Judged.Locks {
				ls[i] = l
				switch s := l.Spec.(type) {
				case *kured.Spec:
					c := *s
					cfg := *s.Config
					c.Config = &cfg
					ls[i].Spec = &c
				case *fleetlock.Spec:
					c := *s
					ls[i].Spec = &c
				}
			}
			edit(ls)
			return ls, nil
		}
	}
	kspecOf := func(ls []model.LockObject) *kured.Spec {
		for _, l := range ls {
			if s, ok := l.Spec.(*kured.Spec); ok {
				return s
			}
		}
		t.Fatal("no kured lock")
		return nil
	}
	cases := []struct {
		name  string
		fresh func(*FreshReaders)
		wants []string
	}{
		{"a volume turned degraded", func(f *FreshReaders) {
			f.Volumes = func(context.Context) ([]model.Volume, bool, error) {
				return []model.Volume{{Namespace: "longhorn-system", Name: "pvc-db", Robustness: model.RobustnessDegraded}}, true, nil
			}
		}, []string{"Longhorn volume longhorn-system/pvc-db is degraded now (was healthy)"}},
		{"a new volume is faulted", func(f *FreshReaders) {
			f.Volumes = func(context.Context) ([]model.Volume, bool, error) {
				return []model.Volume{{Namespace: "longhorn-system", Name: "pvc-db", Robustness: model.RobustnessHealthy},
					{Namespace: "data", Name: "pvc-new", Robustness: model.RobustnessFaulted}}, true, nil
			}
		}, []string{"Longhorn volume data/pvc-new is faulted now (it was not judged)"}},
		{"a blocking alert fires", func(f *FreshReaders) {
			f.Alerts = func(context.Context, *kured.Config) ([]string, bool, error) { return []string{"EtcdDown"}, true, nil }
		}, []string{"blocking alerts fire now: EtcdDown (not firing when judged)"}},
		{"kured's reboot window changed", func(f *FreshReaders) {
			f.Locks = changedLocks(func(ls []model.LockObject) { kspecOf(ls).Config.RebootDays = []string{"su"} })
		}, []string{"lock kured:kube-system/kured changed: Config.RebootDays [mo tu] → [su]"}},
		{"kured's alert settings changed", func(f *FreshReaders) {
			f.Locks = changedLocks(func(ls []model.LockObject) {
				kspecOf(ls).Config.AlertFilterRegexp = "^Etcd"
				kspecOf(ls).Config.PrometheusURL = "http://other:9090"
			})
		}, []string{`Config.AlertFilterRegexp "" → "^Etcd"`, "Config.PrometheusURL changed"}},
		{"kured's release delay changed", func(f *FreshReaders) {
			f.Locks = changedLocks(func(ls []model.LockObject) { kspecOf(ls).Config.LockReleaseDelay = time.Hour })
		}, []string{"Config.LockReleaseDelay 0s → 1h0m0s"}},
		{"another lock was taken", func(f *FreshReaders) {
			f.Locks = changedLocks(func(ls []model.LockObject) {
				for _, l := range ls {
					if s, ok := l.Spec.(*fleetlock.Spec); ok {
						s.Holder = "n1"
					}
				}
			})
		}, []string{`lock fleetlock:default/fleetlock-default changed: Holder "" → "n1"`}},
		{"another lock appeared", func(f *FreshReaders) {
			f.Locks = changedLocks(func(ls []model.LockObject) {})
			inner := f.Locks
			f.Locks = func(ctx context.Context) ([]model.LockObject, error) {
				ls, _ := inner(ctx)
				l := fleet("n1")
				l.Name = "fleetlock-other"
				return append(ls, l), nil
			}
		}, []string{"lock fleetlock:default/fleetlock-other is new"}},
		{"the volumes cannot be read", func(f *FreshReaders) {
			f.Volumes = func(context.Context) ([]model.Volume, bool, error) {
				return nil, false, errors.New("connection refused")
			}
		}, []string{"could not list Longhorn's volumes fresh for the action (connection refused)"}},
		{"Prometheus cannot be asked", func(f *FreshReaders) {
			f.Alerts = func(context.Context, *kured.Config) ([]string, bool, error) {
				return nil, false, errors.New("dial tcp: refused")
			}
		}, []string{"could not ask Prometheus which blocking alerts fire fresh for the action (dial tcp: refused)"}},
		{"no reader of the volumes", func(f *FreshReaders) { f.Volumes = nil }, []string{"no fresh reader of Longhorn's volumes is wired"}},
		{"no reader of the locks", func(f *FreshReaders) { f.Locks = nil }, []string{"no fresh reader of the lock objects is wired"}},
		{"no reader of the alerts", func(f *FreshReaders) { f.Alerts = nil }, []string{"no fresh reader of Prometheus's alerts is wired"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := newFakeClientset(objs...)
			fr := asJudged(p)
			tc.fresh(&fr)
			r := (&Actor{Client: cs, Who: "alice", Fresh: fr}).Do(context.Background(), p, DoOptions{})
			if r.Outcome != model.OutcomeRefused || !strings.Contains(r.Message, "reap refused: fresh-data: ") || !strings.Contains(r.Message, "nothing written") {
				t.Fatalf("result %s: %s", r.Outcome, r.Message)
			}
			for _, w := range tc.wants {
				if !strings.Contains(r.Message, w) {
					t.Errorf("message %q lacks %q", r.Message, w)
				}
			}
			if strings.Contains(r.Message, "secret") {
				t.Errorf("message %q shows the Prometheus URL's password", r.Message)
			}
			if n := writesOf(cs); n != 0 {
				t.Fatalf("%d writes after a refusal: %v", n, cs.Actions())
			}
		})
	}
	// Unchanged, the same plan is carried out.
	cs := newFakeClientset(objs...)
	if r := (&Actor{Client: cs, Who: "alice", Fresh: asJudged(p)}).Do(context.Background(), p, DoOptions{}); r.Outcome != model.OutcomeDone {
		t.Fatalf("unchanged: %s: %s", r.Outcome, r.Message)
	}
}

// The reads run at once: each starts before any other ended.
func TestActorReadsGateInputsConcurrently(t *testing.T) {
	p, objs := freshWorld(t)
	fr := asJudged(p)
	var started sync.WaitGroup
	started.Add(4)
	gate := func() { started.Done(); started.Wait() }
	locks, vols, alerts := fr.Locks, fr.Volumes, fr.Alerts
	fr.Locks = func(ctx context.Context) ([]model.LockObject, error) { gate(); return locks(ctx) }
	fr.Volumes = func(ctx context.Context) ([]model.Volume, bool, error) { gate(); return vols(ctx) }
	fr.Alerts = func(ctx context.Context, k *kured.Config) ([]string, bool, error) { gate(); return alerts(ctx, k) }
	fr.Nodes = func(ctx context.Context, sel string) ([]model.Node, error) { gate(); return p.Nodes, nil }
	cs := newFakeClientset(objs...)
	if r := (&Actor{Client: cs, Who: "alice", Fresh: fr}).Do(context.Background(), p, DoOptions{}); r.Outcome != model.OutcomeDone {
		t.Fatalf("%s: %s", r.Outcome, r.Message)
	}
}

// An uncordon is a write too: its plan's inputs are read fresh first.
func TestUncordonReadsGateInputsFresh(t *testing.T) {
	e := New(Options{})
	c := stillCordonedWorld(e)
	c.Apply(model.VolumeUpserted{Volume: model.Volume{Namespace: "longhorn-system", Name: "pvc-db", Robustness: model.RobustnessHealthy}}, at(31*time.Minute))
	p, err := e.PlanUncordon(c, "n1", at(31*time.Minute))
	if err != nil || !p.Allowed {
		t.Fatalf("plan %+v %v", p, err)
	}
	fr := asJudged(p)
	fr.Volumes = func(context.Context) ([]model.Volume, bool, error) {
		return []model.Volume{{Namespace: "longhorn-system", Name: "pvc-db", Robustness: model.RobustnessDegraded}}, true, nil
	}
	cs := newFakeClientset(withNodes(p)...)
	r := (&Actor{Client: cs, Who: "alice", Fresh: fr}).Do(context.Background(), p, DoOptions{})
	if r.Outcome != model.OutcomeRefused || !strings.Contains(r.Message, "uncordon refused: fresh-data: Longhorn volume longhorn-system/pvc-db is degraded now (was healthy)") {
		t.Fatalf("%s: %s", r.Outcome, r.Message)
	}
	if n := writesOf(cs); n != 0 {
		t.Fatalf("%d writes after a refusal: %v", n, cs.Actions())
	}
}
