package live

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources/sim"
)

// Issue 10 §4: the default demo is the fleetlock ghost-Lease incident, played
// as fleetlock really behaves (no acquireTime; the holder cordoned until its
// own steady-state). At the demo's default speed (10×) a newcomer can, in the
// first minute, release the orphan (which also uncordons it) and then reap the
// ghost — 30 wall seconds after the release the reap is still allowed.
func TestFleetlockDemoFirstMinute(t *testing.T) {
	start := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	var wall atomic.Pointer[time.Time]
	set := func(d time.Duration) { w := start.Add(d); wall.Store(&w) }
	set(0)
	s, err := Open(context.Background(), Options{Demo: true, DemoScenario: sim.ScenarioFleetlock, DemoSeed: 1, DemoSpeed: 10,
		DemoStart: start, WallNow: func() time.Time { return *wall.Load() }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := s.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ghost := model.LockRef{Kind: model.LockFleetlock, Namespace: sim.FleetlockNamespace, Name: sim.FleetlockLease}
	workers := model.LockRef{Kind: model.LockFleetlock, Namespace: sim.FleetlockNamespace, Name: sim.FleetlockWorkersLease}
	verdict := func(ref model.LockRef) model.LockStatus {
		for _, st := range c.LockStatuses() {
			if st.LockRef == ref {
				return st
			}
		}
		t.Fatalf("no %s", ref)
		return model.LockStatus{}
	}
	if v := verdict(ghost); v.Verdict != model.VerdictGhost {
		t.Fatalf("ghost: %s %s", v.Verdict, v.Reason)
	}
	orphan := verdict(workers)
	if orphan.Verdict != model.VerdictOrphaned || orphan.HolderNode() != "worker-1" || !strings.Contains(evidence(orphan), "managedFields") {
		t.Fatalf("orphan: %s %s %+v", orphan.Verdict, orphan.Reason, orphan.Evidence)
	}
	// The ghost cannot be reaped while worker-1 holds the workers' lock.
	if p, _ := s.Engine().Plan(c, ghost, "", model.ActionReap, s.Clock()); p.Allowed {
		t.Fatal("ghost reapable while worker-1 holds a lock")
	}
	act := func(ref model.LockRef, a model.Action) lock.Result {
		t.Helper()
		p, err := s.Engine().Plan(c, ref, "", a, s.Clock())
		if err != nil || !p.Allowed {
			t.Fatalf("%s %s at %s: %s %v", a, ref, s.Clock().Sub(start), p.Refusal, err)
		}
		r := (&lock.Actor{Client: s.Client, Who: "newcomer", Fresh: s.FreshReaders()}).Do(ctx, p, lock.DoOptions{})
		if !r.Complete() {
			t.Fatalf("%s: %+v", a, r)
		}
		return r
	}
	settle := func(d time.Duration) {
		set(d)
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			s.Drain(c)
			c.Recompute(s.Clock())
			select {
			case ev := <-s.Events:
				c.Apply(ev, s.Clock())
			case <-time.After(200 * time.Millisecond):
				s.Drain(c)
				c.Recompute(s.Clock())
				return
			}
		}
	}
	settle(20 * time.Second)
	if r := act(workers, model.ActionRelease); r.Uncordon.Outcome != model.OutcomeDone {
		t.Fatalf("release did not uncordon worker-1: %+v", r)
	}
	n, _ := s.Client.CoreV1().Nodes().Get(ctx, "worker-1", metav1.GetOptions{})
	if n.Spec.Unschedulable {
		t.Fatal("worker-1 still cordoned")
	}
	settle(50 * time.Second)
	act(ghost, model.ActionReap)
	settle(55 * time.Second)
	if v := verdict(ghost); v.Verdict != model.VerdictFree {
		t.Fatalf("ghost after reap: %s", v.Verdict)
	}
}

func evidence(s model.LockStatus) string {
	var b strings.Builder
	for _, e := range s.Evidence {
		b.WriteString(e.Key + "=" + e.Value + "; ")
	}
	return b.String()
}
