package explain

import (
	"strings"
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/testenv/lockfixture"
	"github.com/rebootwatch/rebootwatch/model"
)

// Issue 33 §2 follow-up: a kured DaemonSet named (--kured-daemonset), even
// alone, answers only for the nodes its pods run on: a pending node none of
// the named DaemonSets runs on may be an unnamed pool's, so it is unknown
// (not a stall, never "no kured runs on it") and gets no named pool's
// window; a node in its scope waits for its window. A single kured
// discovered answers for every node, as before.
func TestNamedKuredScopesItsNodes(t *testing.T) {
	now := lockfixture.T0 // Sunday 12:00 UTC
	a := pooled("kured-a", "", "--reboot-days=mo")
	a.Spec.(*kured.Spec).Named = true
	c := explained(Options{}, lockfixture.Step{At: now, Ev: []model.Event{lockfixture.NodesOK(),
		lockfixture.Source(model.SourcePrometheus, model.StatusOK), lockfixture.Source(model.SourceKured, model.StatusOK),
		needReboot("a1", "b1"), lockfixture.Up(lockfixture.Node("a1")), lockfixture.Up(lockfixture.Node("b1")),
		lockfixture.LockEv(a), model.LockScopeSet{Ref: a.LockRef, Nodes: []string{"a1"}},
	}})
	bs := c.Blockers()
	if got := kinds(bs.Nodes["a1"]); len(got) != 1 || got[0] != model.BlockerWindow {
		t.Errorf("a1 (kured-a's pool): %v %+v", got, bs.Nodes["a1"])
	}
	b1 := bs.Nodes["b1"]
	if len(b1) != 1 || b1[0].Kind != model.BlockerUnknown || b1[0].Stalls ||
		!strings.Contains(b1[0].Reason, "none of the kured DaemonSets read (kube-system/kured-a) runs on it") ||
		strings.Contains(b1[0].Reason, "no kured runs on") {
		t.Errorf("b1 (no named kured runs on it): %+v", b1)
	}

	// Its pods not read yet: b1's pool is unknown, not kured-a's window.
	c = explained(Options{}, lockfixture.Step{At: now, Ev: []model.Event{lockfixture.NodesOK(),
		lockfixture.Source(model.SourcePrometheus, model.StatusOK), lockfixture.Source(model.SourceKured, model.StatusOK),
		needReboot("b1"), lockfixture.Up(lockfixture.Node("b1")), lockfixture.LockEv(a),
	}})
	if b1 := c.Blockers().Nodes["b1"]; len(b1) != 1 || b1[0].Kind != model.BlockerUnknown || !strings.Contains(b1[0].Reason, "not read yet") {
		t.Errorf("b1, kured-a's pods unread: %+v", b1)
	}

	// Discovered (not named), alone: it answers for every node.
	d := pooled("kured-a", "", "--reboot-days=mo")
	c = explained(Options{}, lockfixture.Step{At: now, Ev: []model.Event{lockfixture.NodesOK(),
		lockfixture.Source(model.SourcePrometheus, model.StatusOK), lockfixture.Source(model.SourceKured, model.StatusOK),
		needReboot("b1"), lockfixture.Up(lockfixture.Node("b1")), lockfixture.LockEv(d),
	}})
	if got := kinds(c.Blockers().Nodes["b1"]); len(got) != 1 || got[0] != model.BlockerWindow {
		t.Errorf("b1, the one kured discovered: %v", got)
	}
}
