package model

import (
	"strings"
	"testing"
	"time"
)

// A plan-like kind: its slots are an object's status, its nodes' places
// in its cycle are declared (as internal/coord/suc declares them). The
// kind name is made up: the model must not care which kind it is.
const planKind LockKind = "plan-kind"

func planRead(applying map[string]string, nodes map[string]Phase) CoordinatorRead {
	g := SlotGroup{Kind: planKind, Owner: "ns/agent-plan", Known: true, Capacity: 1}
	for n, step := range applying {
		g.Holders = append(g.Holders, SlotHolder{Holder: n, Node: n, Step: step})
	}
	r := CoordinatorRead{Kind: planKind, Known: true, Slots: []SlotGroup{g}}
	for _, n := range sortedKeys(nodes) {
		step := string(nodes[n])
		if s, ok := applying[n]; ok {
			step = s
		}
		r.Nodes = append(r.Nodes, NodeCycle{Kind: planKind, Owner: "ns/agent-plan", Node: n, Phase: nodes[n], Step: step})
	}
	return r
}

func slotCluster(nodes ...Node) *Cluster {
	c := newTestCluster(VerdictHeld)
	for _, n := range nodes {
		c.Apply(NodeUpserted{Node: n}, t0)
	}
	return c
}

// The SUC picture: a job drains n1 and the other two wait, all on
// the newest OS image. Before, every node was idle and the fleet "3/3
// upgraded (100%)" with no lock anywhere.
func TestDeclaredPhasesAndHonestProgress(t *testing.T) {
	c := slotCluster(readyNode("n1", "b1", "Ubuntu 24.04", "6.8", true), readyNode("n2", "b2", "Ubuntu 24.04", "6.8", true),
		readyNode("n3", "b3", "Ubuntu 24.04", "6.8", true))
	c.Apply(planRead(map[string]string{"n1": "job running"}, map[string]Phase{"n1": PhaseDraining, "n2": PhasePending, "n3": PhaseDone}), t0)
	c.Recompute(t0)
	for n, want := range map[string]Phase{"n1": PhaseDraining, "n2": PhasePending, "n3": PhaseDone} {
		if got := c.Phase(n); got != want {
			t.Errorf("%s: phase %s, want %s", n, got, want)
		}
	}
	if f := c.Fleet(t0); f.Upgraded != 1 {
		t.Errorf("upgraded %d/3 while the plan applies, want 1 (only n3 is at the plan's latest hash)", f.Upgraded)
	}
	s := c.Snapshot(t0)
	if len(s.Slots) != 1 || s.Slots[0].Kind != planKind || s.Slots[0].Owner != "ns/agent-plan" || *s.Slots[0].Capacity != 1 ||
		len(s.Slots[0].Holders) != 1 || *s.Slots[0].Holders[0].Node != "n1" || s.Slots[0].Holders[0].Step != "job running" {
		t.Fatalf("snapshot slots %+v", s.Slots)
	}
	n1 := s.Nodes[0]
	if n1.HoldsLock == nil || *n1.HoldsLock != planKind || n1.Slot == nil || *n1.Slot != "plan-kind ns/agent-plan" || n1.Step == nil || *n1.Step != "job running" {
		t.Errorf("n1 in the snapshot: holdsLock %v slot %v step %v", n1.HoldsLock, n1.Slot, n1.Step)
	}
	if s.Nodes[1].HoldsLock != nil || s.Nodes[1].Slot != nil {
		t.Errorf("n2 waits, holds nothing: %+v", s.Nodes[1])
	}

	// The job fails: the step moves, the phase stays (the wedge is the
	// kind's blocker); then the plan moves on and n1 is done.
	c.Apply(planRead(map[string]string{"n1": "job failed"}, map[string]Phase{"n1": PhaseDraining, "n2": PhasePending, "n3": PhaseDone}), t0.Add(time.Minute))
	c.Recompute(t0.Add(time.Minute))
	c.Apply(planRead(map[string]string{"n2": "job running"}, map[string]Phase{"n1": PhaseDone, "n2": PhaseDraining, "n3": PhaseDone}), t0.Add(3*time.Minute))
	c.Recompute(t0.Add(3 * time.Minute))
	if c.Phase("n1") != PhaseDone || c.Phase("n2") != PhaseDraining {
		t.Errorf("after the plan moved on: n1 %s, n2 %s", c.Phase("n1"), c.Phase("n2"))
	}
	if got := c.CycleDurations(); len(got) != 1 || got[0] != 3*time.Minute {
		t.Errorf("finished cycles %v, want n1's 3m (a cycle needs no reboot when its coordinator says done)", got)
	}
	var log []string
	for _, e := range c.Timeline() {
		log = append(log, string(e.Kind)+" "+e.Change+": "+e.Message)
	}
	all := strings.Join(log, "\n")
	for _, want := range []string{
		"slot held: plan-kind ns/agent-plan slot held by n1 (job running)",
		"slot step: plan-kind ns/agent-plan n1: job running → job failed",
		"slot taken: plan-kind ns/agent-plan slot taken by n2 (job running)",
		"slot released: plan-kind ns/agent-plan slot released by n1",
		"phase : n1 draining → done",
		"phase : n2 pending → draining",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("timeline lacks %q:\n%s", want, all)
		}
	}
}

// The FLUO picture: the slot holder reboots (NotReady). Before, it
// was "NotReady outside a reboot cycle" (critical, exit 2, holdsLock null).
func TestDeclaredRebootIsNotDown(t *testing.T) {
	const k LockKind = "annotations-kind"
	read := func(phase Phase, step string, held bool) CoordinatorRead {
		g := SlotGroup{Kind: k, Known: true, Capacity: 1}
		if held {
			g.Holders = []SlotHolder{{Holder: "w1", Node: "w1", Step: step}}
		}
		return CoordinatorRead{Kind: k, Known: true, Slots: []SlotGroup{g}, Nodes: []NodeCycle{{Kind: k, Node: "w1", Phase: phase, Step: step}}}
	}
	c := slotCluster(readyNode("w1", "b1", "Flatcar 1", "6.6", false))
	c.Apply(read(PhaseRebooting, "rebooting", true), t0)
	c.Recompute(t0)
	if c.Phase("w1") != PhaseRebooting {
		t.Fatalf("w1 %s, want rebooting", c.Phase("w1"))
	}
	s := c.Snapshot(t0)
	if s.ExitCode != 0 || len(s.Attention) != 0 {
		t.Errorf("a reboot in the coordinator's cycle needs no one: exit %d, attention %v", s.ExitCode, s.Attention)
	}
	if s.Nodes[0].HoldsLock == nil || *s.Nodes[0].HoldsLock != k {
		t.Errorf("holdsLock %v, want %s", s.Nodes[0].HoldsLock, k)
	}
	at := t0.Add(2 * time.Minute)
	c.Apply(NodeUpserted{Node: readyNode("w1", "b2", "Flatcar 2", "6.6", true)}, at)
	c.Apply(read(PhaseRecovering, "after-reboot check", true), at)
	c.Recompute(at)
	if c.Phase("w1") != PhaseRecovering {
		t.Errorf("after-reboot: w1 %s, want recovering", c.Phase("w1"))
	}
	at = at.Add(time.Minute)
	c.Apply(read(PhaseIdle, "idle", false), at)
	c.Recompute(at)
	if c.Phase("w1") != PhaseDone {
		t.Errorf("slot released after the reboot: w1 %s, want done", c.Phase("w1"))
	}
}

// More holders than capacity (three nodes in FLUO's single slot) needs an
// operator: critical attention, exit 2.
func TestSlotsOverCapacityIsAttention(t *testing.T) {
	const k LockKind = "annotations-kind"
	c := slotCluster(readyNode("a", "1", "x", "1", true), readyNode("b", "2", "x", "1", true), readyNode("d", "3", "x", "1", true))
	g := SlotGroup{Kind: k, Known: true, Capacity: 1}
	for _, n := range []string{"a", "b", "d"} {
		g.Holders = append(g.Holders, SlotHolder{Holder: n, Node: n})
	}
	c.Apply(CoordinatorRead{Kind: k, Known: true, Slots: []SlotGroup{g}}, t0)
	c.Recompute(t0)
	s := c.Snapshot(t0)
	if s.ExitCode != 2 || len(s.Attention) == 0 || !strings.Contains(s.Attention[0].Message, "3 nodes hold its slots, more than its capacity of 1 (a, b, d)") {
		t.Errorf("exit %d, attention %v", s.ExitCode, s.Attention)
	}
	if !s.Slots[0].Over {
		t.Errorf("slots %+v: over not set", s.Slots)
	}
}

// A kind that could not be read keeps its last picture (its phases are not
// taken for "none") and says its slots are unknown.
func TestCoordinatorUnreadKeepsItsPicture(t *testing.T) {
	c := slotCluster(readyNode("n1", "b1", "x", "1", true))
	c.Apply(planRead(map[string]string{"n1": "job running"}, map[string]Phase{"n1": PhaseDraining}), t0)
	c.Recompute(t0)
	c.Apply(CoordinatorRead{Kind: planKind, Unknown: "forbidden"}, t0.Add(time.Minute))
	c.Recompute(t0.Add(time.Minute))
	if c.Phase("n1") != PhaseDraining {
		t.Errorf("n1 %s after an unread, want draining held", c.Phase("n1"))
	}
	s := c.Snapshot(t0.Add(time.Minute))
	if len(s.Slots) != 1 || s.Slots[0].Known || s.Slots[0].Unknown != "forbidden" {
		t.Errorf("slots %+v, want unknown (forbidden)", s.Slots)
	}
}

// A lock object is a slot group too: its judged entries are the holders
// (step: the verdict), its capacity the driver's reading; a lock whose
// own warning says it is over (kured's maxOwners) is not reported twice.
func TestLockObjectsAreSlotGroups(t *testing.T) {
	c := slotCluster(readyNode("a", "1", "x", "1", true), readyNode("b", "2", "x", "1", true))
	ref := LockRef{Kind: "lockkind", Namespace: "ns", Name: "l"}
	free := LockRef{Kind: "lockkind", Namespace: "ns", Name: "free"}
	c.Judge = func(*Cluster, time.Time) []LockStatus {
		return []LockStatus{
			{LockRef: ref, Holder: "a", HolderNodes: []string{"a"}, Verdict: VerdictHeld, Capacity: 1, Warning: "over its maxOwners"},
			{LockRef: ref, Holder: "b", HolderNodes: []string{"b"}, Verdict: VerdictOrphaned, Capacity: 1, Warning: "over its maxOwners"},
			{LockRef: free, Verdict: VerdictFree, Capacity: 1},
		}
	}
	c.Recompute(t0)
	gs := c.Slots()
	if len(gs) != 2 || !gs[0].Lock || gs[0].Owner != "ns/free" || len(gs[0].Holders) != 0 || gs[0].Used() != "0/1" ||
		gs[1].Owner != "ns/l" || gs[1].Used() != "2/1" || gs[1].Holders[1].Step != "orphaned" || !gs[1].Over() {
		t.Fatalf("slot groups %+v", gs)
	}
	for _, a := range c.Attention(t0) {
		if strings.Contains(a.Message, "more than its capacity") {
			t.Errorf("over capacity reported beside the lock's own warning: %v", a)
		}
	}
	if n := c.Snapshot(t0).Nodes[0]; n.HoldsLock == nil || *n.HoldsLock != "lockkind" || n.Slot == nil || *n.Slot != "lockkind ns/l" {
		t.Errorf("a's holdsLock %v slot %v", n.HoldsLock, n.Slot)
	}
}
