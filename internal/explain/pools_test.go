package explain

import (
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/testenv/lockfixture"
	"github.com/rebootwatch/rebootwatch/model"
)

// pooled is kured lock object name in kube-system (its own pool), with
// annotation value ("" free) and args.
func pooled(name, value string, args ...string) model.LockObject {
	l := kuredWith(value, args...)
	l.Name, l.UID = name, "uid-"+name
	return l
}

// Issue 33 §2: two kured DaemonSets, one per node pool. A pending node
// waits for its own pool's lock, window and blocking pods, never the other
// pool's; a node neither pool's kured runs on is said so; a node whose pool
// cannot be told is unknown, never put in one.
func TestBlockersPerKuredPool(t *testing.T) {
	now := lockfixture.T0 // Sunday 2026-11-29 12:00 UTC
	a := pooled("kured-a", lockfixture.Single(lockfixture.Ent("a1", now.Add(-10*time.Minute), 0)), "--ds-name=kured-a", "--lock-annotation=a/lock")
	b := pooled("kured-b", "", "--ds-name=kured-b", "--lock-annotation=b/lock", "--reboot-days=mo", "--blocking-pod-selector=app=b")
	refA, refB := a.LockRef, b.LockRef
	c := explained(Options{}, lockfixture.Step{At: now, Ev: []model.Event{lockfixture.NodesOK(),
		lockfixture.Source(model.SourcePrometheus, model.StatusOK), lockfixture.Source(model.SourceKured, model.StatusOK),
		needReboot("a2", "b1", "x1", "u1"),
		lockfixture.Up(lockfixture.Node("a1", lockfixture.Cordoned())), lockfixture.Up(lockfixture.Node("a2")),
		lockfixture.Up(lockfixture.Node("b1")), lockfixture.Up(lockfixture.Node("x1")), lockfixture.Up(lockfixture.Node("u1")),
		lockfixture.LockEv(a), lockfixture.LockEv(b),
		model.LockScopeSet{Ref: refA, Nodes: []string{"a1", "a2"}}, model.LockScopeSet{Ref: refB, Nodes: []string{"b1"}},
		model.BlockingSelectorsSet{Selectors: []string{"app=b"}},
		model.BlockingPodsSet{Selector: "app=b", Pods: []model.Pod{{Namespace: "db", Name: "backup", Node: "a2", Phase: "Running", Labels: map[string]string{"app": "b"}}}},
	}})
	bs := c.Blockers()
	if got := kinds(bs.Nodes["a2"]); len(got) != 1 || got[0] != model.BlockerLock || bs.Nodes["a2"][0].Lock == nil || *bs.Nodes["a2"][0].Lock != refA {
		t.Errorf("a2 (pool a, its lock held by a1, pool b's selector matches a pod on it): %v %+v", got, bs.Nodes["a2"])
	}
	if got := kinds(bs.Nodes["b1"]); len(got) != 1 || got[0] != model.BlockerWindow {
		t.Errorf("b1 (pool b: its window is Monday's, its lock free; pool a's lock is full): %v %+v", got, bs.Nodes["b1"])
	}
	x := bs.Nodes["x1"]
	if len(x) != 1 || !strings.Contains(x[0].Reason, "no kured runs on x1") || !strings.Contains(x[0].Reason, "kube-system/kured-a, kube-system/kured-b") {
		t.Errorf("x1 (no pool's kured runs on it): %+v", x)
	}
	// A scope that cannot be read: which pool u1 answers to is unknown
	// (a1, in pool a's scope, is pool a's).
	c2 := explained(Options{}, lockfixture.Step{At: now, Ev: []model.Event{lockfixture.NodesOK(),
		lockfixture.Source(model.SourcePrometheus, model.StatusOK), lockfixture.Source(model.SourceKured, model.StatusOK),
		needReboot("u1", "a2"), lockfixture.Up(lockfixture.Node("u1")), lockfixture.Up(lockfixture.Node("a2")), lockfixture.LockEv(a), lockfixture.LockEv(b),
		model.LockScopeSet{Ref: refA, Nodes: []string{"a1", "a2"}}, model.LockScopeSet{Ref: refB, Err: "forbidden: cannot list pods in kube-system"},
	}})
	u := c2.Blockers().Nodes["u1"]
	if len(u) != 1 || u[0].Kind != model.BlockerUnknown || !strings.Contains(u[0].Reason, "forbidden") {
		t.Errorf("u1 (pool b's pods unread): %+v", u)
	}
	for _, bl := range c2.Blockers().Nodes["a2"] {
		if bl.Kind == model.BlockerUnknown {
			t.Errorf("a2 is in pool a's scope, yet its pool is unknown: %+v", bl)
		}
	}
}

// With the alert filter kured's own, a firing alert holds the nodes of the
// pool whose kured checks alerts (it sets --prometheus-url) only.
func TestAlertsOnlyForThePoolThatChecksThem(t *testing.T) {
	now := lockfixture.T0
	a := pooled("kured-a", "", "--ds-name=kured-a")
	b := pooled("kured-b", "", "--ds-name=kured-b", "--prometheus-url=http://prometheus:9090")
	c := explained(Options{}, lockfixture.Step{At: now, Ev: []model.Event{lockfixture.NodesOK(),
		lockfixture.Source(model.SourcePrometheus, model.StatusOK), lockfixture.Source(model.SourceKured, model.StatusOK),
		needReboot("a1", "b1"), lockfixture.Up(lockfixture.Node("a1")), lockfixture.Up(lockfixture.Node("b1")),
		lockfixture.LockEv(a), lockfixture.LockEv(b),
		model.LockScopeSet{Ref: a.LockRef, Nodes: []string{"a1"}}, model.LockScopeSet{Ref: b.LockRef, Nodes: []string{"b1"}},
		model.AlertsFiring{Names: []string{"DiskFull"}, From: "kured's own (--prometheus-url and --alert-filter-regexp of DaemonSet kube-system/kured-b)"},
	}})
	bs := c.Blockers()
	if got := kinds(bs.Nodes["b1"]); len(got) != 1 || got[0] != model.BlockerAlert {
		t.Errorf("b1 (its kured checks alerts): %v", got)
	}
	if got := kinds(bs.Nodes["a1"]); len(got) != 0 {
		t.Errorf("a1 (its kured checks no alert): %v", got)
	}
}
