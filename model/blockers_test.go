package model

import (
	"testing"
	"time"
)

// TestRecomputeStoresExplained: the injected Explain runs after phases and
// verdicts (it sees the node's phase of this Recompute) and its result is
// what the accessors return.
func TestRecomputeStoresExplained(t *testing.T) {
	c := newTestCluster(VerdictHeld)
	c.Apply(NodeUpserted{Node: readyNode("n1", "b1", "os", "k", false)}, t0)
	var sawPhase Phase
	c.Explain = func(c *Cluster, now time.Time) Blockers {
		sawPhase = c.Phase("n1")
		b := Blocker{Kind: BlockerSlowReboot, Node: "n1", Reason: "slow", Stalls: true}
		return Blockers{Nodes: map[string][]Blocker{"n1": {b}}, Fleet: &FleetBlocker{Blocker: b}}
	}
	c.Recompute(t0)
	if sawPhase != PhaseDown {
		t.Fatalf("Explain saw phase %q, want down (derived before it)", sawPhase)
	}
	if got := c.NodeBlockers("n1"); len(got) != 1 || got[0].Kind != BlockerSlowReboot {
		t.Fatalf("node blockers %+v", got)
	}
	if f := c.FleetBlocker(); f == nil || f.Reason != "slow" {
		t.Fatalf("fleet blocker %+v", f)
	}
	c.Explain = nil
	c.Recompute(t0.Add(time.Second))
	if c.FleetBlocker() != nil || c.NodeBlockers("n1") != nil {
		t.Fatal("without Explain the last result must not linger")
	}
}

// TestRebootDurationsRecorded: a reboot within a cycle is remembered with
// how long the node was NotReady, for the fleet's median reboot.
func TestRebootDurationsRecorded(t *testing.T) {
	c := newTestCluster(VerdictHeld)
	c.Apply(NodeUpserted{Node: readyNode("n1", "b1", "os", "k", true)}, t0)
	c.Recompute(t0)
	c.Apply(LockUpserted{Lock: LockObject{LockRef: LockRef{Kind: "test", Namespace: "ns", Name: "l"}, Spec: &testSpec{Holder: "n1", AcquireTime: t0}}}, t0)
	c.Recompute(t0.Add(time.Minute)) // draining
	down := readyNode("n1", "b1", "os", "k", false)
	c.Apply(NodeUpserted{Node: down}, t0.Add(2*time.Minute))
	c.Recompute(t0.Add(2 * time.Minute)) // rebooting
	if c.Phase("n1") != PhaseRebooting {
		t.Fatalf("phase %s", c.Phase("n1"))
	}
	if len(c.RebootDurations()) != 0 {
		t.Fatal("a reboot under way is not finished")
	}
	up := readyNode("n1", "b2", "os", "k", true)
	up.Conditions[0].LastTransition = t0.Add(6 * time.Minute)
	c.Apply(NodeUpserted{Node: up}, t0.Add(6*time.Minute))
	c.Recompute(t0.Add(6 * time.Minute))
	if got := c.RebootDurations(); len(got) != 1 || got[0] != 4*time.Minute {
		t.Fatalf("reboot durations %v, want [4m]", got)
	}
}

func TestBlockerKindRank(t *testing.T) {
	seen := map[BlockerKind]bool{}
	for i, k := range AllBlockerKinds {
		if k.Rank() != i || seen[k] || k == "" {
			t.Fatalf("kind %q rank %d at %d", k, k.Rank(), i)
		}
		seen[k] = true
	}
	if len(AllBlockerKinds) != 10 {
		t.Fatalf("the issue names 10 kinds, have %d", len(AllBlockerKinds))
	}
	if BlockerKind("nope").Rank() != len(AllBlockerKinds) {
		t.Fatal("unknown kinds rank last")
	}
}
