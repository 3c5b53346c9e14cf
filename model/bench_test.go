package model

import (
	"fmt"
	"testing"
	"time"
)

// bigCluster builds a cluster of n nodes and v volumes, with one lock held.
func bigCluster(n, v int) (*Cluster, []Event) {
	c := NewCluster("bench", Options{})
	c.Judge = fixedJudge(VerdictHeld)
	evs := []Event{SourceChanged{Health: SourceHealth{Name: SourceNodes, Status: StatusOK}},
		SourceChanged{Health: SourceHealth{Name: SourceLonghorn, Status: StatusOK}}}
	req := map[string]bool{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("node-%05d", i)
		nd := readyNode(name, fmt.Sprintf("boot-%d", i), "Ubuntu 24.04.2 LTS", "6.8.0-57-generic", true)
		nd.MachineID = fmt.Sprintf("%032x", i)
		nd.Roles = []string{"worker"}
		evs = append(evs, NodeUpserted{Node: nd})
		req[name] = i%2 == 0
	}
	evs = append(evs, RebootRequiredSet{Values: req})
	for i := 0; i < v; i++ {
		rob := RobustnessHealthy
		if i%50 == 0 {
			rob = RobustnessDegraded
		}
		evs = append(evs, VolumeUpserted{Volume: Volume{Namespace: "longhorn-system", Name: fmt.Sprintf("pvc-%06d", i),
			Robustness: rob, Replicas: 3, Node: fmt.Sprintf("node-%05d", i%n)}})
	}
	evs = append(evs, LockUpserted{Lock: LockObject{LockRef: LockRef{Kind: LockKured, Namespace: "kube-system", Name: "kured"}, Spec: &testSpec{Holder: "node-00001", AcquireTime: t0}}})
	return c, evs
}

// BenchmarkApplyInitialSync applies the first full picture of 5,000 nodes
// and 10,000 volumes and derives it once.
func BenchmarkApplyInitialSync(b *testing.B) {
	_, evs := bigCluster(5000, 10000)
	b.ReportAllocs()
	for b.Loop() {
		c, _ := bigCluster(0, 0)
		for _, e := range evs {
			c.Apply(e, t0)
		}
		c.Recompute(t0)
	}
}

// BenchmarkNodeUpdateAndRecompute is the steady state: one node changes,
// the whole cluster is re-derived (what happens on every event batch).
func BenchmarkNodeUpdateAndRecompute(b *testing.B) {
	c, evs := bigCluster(5000, 10000)
	for _, e := range evs {
		c.Apply(e, t0)
	}
	c.Recompute(t0)
	nd := readyNode("node-00001", "boot-1", "Ubuntu 24.04.2 LTS", "6.8.0-57-generic", true)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		now := t0.Add(time.Duration(i) * time.Second)
		nd.Unschedulable = i%2 == 0
		c.Apply(NodeUpserted{Node: nd}, now)
		c.Recompute(now)
	}
}

// BenchmarkSnapshot derives the snapshot document of the big cluster.
func BenchmarkSnapshot(b *testing.B) {
	c, evs := bigCluster(5000, 10000)
	for _, e := range evs {
		c.Apply(e, t0)
	}
	c.Recompute(t0)
	b.ReportAllocs()
	for b.Loop() {
		_ = c.Snapshot(t0)
	}
}

// planCluster is bigCluster with a plan-like coordinator kind that selects
// every node: one slot held, every other node declared waiting.
func planCluster() *Cluster {
	c, evs := bigCluster(5000, 10000)
	for _, e := range evs {
		c.Apply(e, t0)
	}
	r := CoordinatorRead{Kind: "plan-kind", Known: true, Slots: []SlotGroup{{Kind: "plan-kind", Owner: "ns/p", Known: true, Capacity: 1,
		Holders: []SlotHolder{{Holder: "node-00002", Node: "node-00002", Step: "job running"}}}}}
	for _, name := range c.NodeNames() {
		nc := NodeCycle{Kind: "plan-kind", Owner: "ns/p", Node: name, Phase: PhasePending, Step: "waiting for a slot"}
		if name == "node-00002" {
			nc.Phase, nc.Step = PhaseDraining, "job running"
		}
		r.Nodes = append(r.Nodes, nc)
	}
	c.Apply(r, t0)
	c.Recompute(t0)
	return c
}

// BenchmarkSnapshotWithSlots is BenchmarkSnapshot with a coordinator kind
// declaring every node's place in its cycle (issue 32 §1).
func BenchmarkSnapshotWithSlots(b *testing.B) {
	c := planCluster()
	b.ReportAllocs()
	for b.Loop() {
		_ = c.Snapshot(t0)
	}
}

// BenchmarkRecomputeWithSlots is one node update and Recompute of that
// cluster.
func BenchmarkRecomputeWithSlots(b *testing.B) {
	c := planCluster()
	nd := readyNode("node-00001", "boot-1", "Ubuntu 24.04.2 LTS", "6.8.0-57-generic", true)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		now := t0.Add(time.Duration(i) * time.Second)
		nd.Unschedulable = i%2 == 0
		c.Apply(NodeUpserted{Node: nd}, now)
		c.Recompute(now)
	}
}
