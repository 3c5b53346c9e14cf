package model

import (
	"encoding/json"
	"strings"
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

// TestSnapshotBlockers: nodes[].blockers and fleet.blockers are additive
// arrays, always present; the fleet's blocker comes first with others,
// then the fleet-wide ones; action, lock and until are null when absent.
func TestSnapshotBlockers(t *testing.T) {
	c := newTestCluster(VerdictHeld)
	c.Apply(NodeUpserted{Node: readyNode("n1", "b1", "os", "k", true)}, t0)
	c.Apply(NodeUpserted{Node: readyNode("n2", "b1", "os", "k", true)}, t0)
	ref := LockRef{Kind: LockKured, Namespace: "kube-system", Name: "kured"}
	lockB := Blocker{Kind: BlockerLock, Node: "n1", Reason: "n1 waits for the kured lock", Action: ActionRelease, Lock: &ref, Clears: "release it",
		Stalls: true, Evidence: []Evidence{{"verdict", "orphaned"}}}
	winB := Blocker{Kind: BlockerWindow, Node: "n1", Reason: "window", Until: t0.Add(time.Hour), Stalls: true}
	unknown := Blocker{Kind: BlockerUnknown, Reason: "whether 1 node needs a reboot is unknown", Stalls: true}
	c.Explain = func(*Cluster, time.Time) Blockers {
		return Blockers{Nodes: map[string][]Blocker{"n1": {winB, lockB}}, Fleet: &FleetBlocker{Blocker: winB, Others: 3}, General: []Blocker{unknown}}
	}
	c.Recompute(t0)
	b, err := json.Marshal(c.Snapshot(t0))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Fleet struct {
			Blockers []map[string]any `json:"blockers"`
		} `json:"fleet"`
		Nodes []map[string]any `json:"nodes"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	fb := doc.Fleet.Blockers
	if len(fb) != 2 || fb[0]["kind"] != "reboot-window" || fb[0]["others"] != 3.0 || fb[0]["node"] != "n1" ||
		fb[0]["until"] != t0.Add(time.Hour).UTC().Format(time.RFC3339) || fb[0]["action"] != nil {
		t.Fatalf("fleet.blockers %v", fb)
	}
	if fb[1]["kind"] != "reboot-required-unknown" || fb[1]["node"] != nil || fb[1]["others"] != nil {
		t.Fatalf("fleet-wide blocker %v", fb[1])
	}
	n1, n2 := doc.Nodes[0]["blockers"].([]any), doc.Nodes[1]["blockers"]
	if l, ok := n2.([]any); !ok || len(l) != 0 {
		t.Fatalf("a node with no blocker has blockers %v, want []", n2)
	}
	if len(n1) != 2 {
		t.Fatalf("n1 blockers %v", n1)
	}
	lb := n1[1].(map[string]any)
	if lb["kind"] != "lock-held" || lb["action"] != "release" || lb["lock"] != "kured:kube-system/kured" || lb["stalls"] != true ||
		lb["clears"] != "release it" || lb["until"] != nil {
		t.Fatalf("lock blocker %v", lb)
	}
	c.Explain = nil
	c.Recompute(t0)
	if b, _ := json.Marshal(c.Snapshot(t0)); !strings.Contains(string(b), `"blockers":[]`) {
		t.Fatal("fleet.blockers must be [] when nothing is in the way")
	}
}
