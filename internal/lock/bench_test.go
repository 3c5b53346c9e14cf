package lock

import (
	"fmt"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

// benchCluster is a 5,000-node cluster with a fleetlock Lease held by one
// node (by Zincati id) and a kured multi-lock with a live and a ghost entry.
func benchCluster(b *testing.B, n int) (*model.Cluster, *Engine, time.Time) {
	now := at(time.Hour)
	e := New(Options{})
	c := model.NewCluster("bench", model.Options{})
	c.Judge = e.Judge
	c.Apply(nodesOK(), now)
	var holderMID string
	for i := 0; i < n; i++ {
		mid := fmt.Sprintf("%032x", uint64(i)*2654435761+1)
		if i == n/2 {
			holderMID = mid
		}
		c.Apply(up(node(fmt.Sprintf("node-%05d", i), machine(mid))), now)
	}
	c.Apply(lockEv(fleet(zid(b, holderMID))), now)
	c.Apply(lockEv(kuredLock(multi(2, ent("node-00007", now.Add(-time.Minute), 0), ent("gone", now.Add(-time.Hour), 0)))), now)
	c.Recompute(now)
	return c, e, now
}

// BenchmarkJudge5000 judges a 5,000-node cluster with a warm Zincati id
// cache (the steady state of the TUI and the agent).
func BenchmarkJudge5000(b *testing.B) {
	c, e, now := benchCluster(b, 5000)
	if s := c.LockStatuses(); len(s) != 3 {
		b.Fatalf("statuses %+v", s)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if len(e.Judge(c, now)) != 3 {
			b.Fatal("wrong number of statuses")
		}
	}
}

// BenchmarkJudge5000Cold judges with a fresh engine each time: every
// machine id is hashed (the first judgement of a one-shot CLI run).
func BenchmarkJudge5000Cold(b *testing.B) {
	c, _, now := benchCluster(b, 5000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		e := New(Options{})
		if len(e.Judge(c, now)) != 3 {
			b.Fatal("wrong number of statuses")
		}
	}
}
