package model

import (
	"strings"
	"testing"
	"time"
)

// staleAwareJudge judges like the lock engine does when its inputs are not
// fresh: every lock of a source that is not usable, and every lock while the
// node list is not fresh, is unknown and maps to no node. Otherwise the lock
// is orphaned and held by the node its Holder names.
func staleAwareJudge(c *Cluster, now time.Time) []LockStatus {
	var out []LockStatus
	for _, l := range c.Locks() {
		sp, _ := l.Spec.(*testSpec)
		s := LockStatus{LockRef: l.LockRef, Holder: sp.Holder, Created: sp.AcquireTime}
		h, ok := c.Source(SourceKured)
		switch {
		case ok && !h.Usable():
			s.Verdict, s.Reason = VerdictUnknown, "kured source is "+string(h.Status)
		case !c.NodesFresh():
			s.Verdict, s.Reason = VerdictUnknown, "node list is not fresh"
		default:
			s.Verdict, s.HolderNodes = VerdictOrphaned, []string{sp.Holder}
		}
		out = append(out, s)
	}
	return out
}

// orphanedHolder is a cluster where w1 holds kured's lock, taken 40m before
// t0, and rebooted (Ready since 20m before t0): first seen recovering.
func orphanedHolder(t *testing.T) *Cluster {
	t.Helper()
	c := NewCluster("test", Options{})
	c.Judge = staleAwareJudge
	c.AwaitSync = true
	for _, s := range []SourceName{SourceNodes, SourceKured, SourcePrometheus} {
		c.Apply(SourceChanged{Health: SourceHealth{Name: s, Status: StatusOK}}, t0)
	}
	for _, n := range []struct {
		name  string
		ready time.Duration
	}{{"w1", 20 * time.Minute}, {"w2", 3 * time.Hour}} {
		c.Apply(NodeUpserted{Node{Name: n.name, BootID: n.name + "-boot2", OSImage: "os", KernelVersion: "1",
			Conditions: []Condition{{Type: "Ready", Status: "True", LastTransition: t0.Add(-n.ready)}}}}, t0)
	}
	c.Apply(RebootRequiredSet{Values: map[string]bool{"w1": false, "w2": false}}, t0)
	ref := LockRef{Kind: LockKured, Namespace: "kube-system", Name: "kured"}
	c.Apply(LockUpserted{LockObject{LockRef: ref, Spec: &testSpec{Holder: "w1", AcquireTime: t0.Add(-40 * time.Minute)}}}, t0)
	c.Apply(Synced{}, t0)
	c.Recompute(t0)
	if p := c.Phase("w1"); p != PhaseRecovering {
		t.Fatalf("w1 first seen %s, want recovering", p)
	}
	return c
}

func phaseEntries(c *Cluster, after uint64) []string {
	var out []string
	for _, e := range c.TimelineSince(after) {
		if e.Kind == KindPhase || e.Kind == KindLock {
			out = append(out, e.Message)
		}
	}
	return out
}

// TestStaleInputsHoldPhases is issue 22 item 7: after the API server
// freezes, the orphaned holder's lock is judged unknown, so it seems to hold
// none; its phase must not go recovering → done while the sources are
// stale, nor done → draining once they recover (a new cycle, ETA days). A
// stale source's data holds the last phases, and nothing is logged from it.
func TestStaleInputsHoldPhases(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stale  []SourceName
		status SourceStatus
	}{
		{"kured stale", []SourceName{SourceKured}, StatusStale},
		{"nodes stale", []SourceName{SourceNodes}, StatusStale},
		{"both stale (a frozen API server)", []SourceName{SourceNodes, SourceKured}, StatusStale},
		{"both in error (a restarting API server)", []SourceName{SourceNodes, SourceKured}, StatusError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := orphanedHolder(t)
			seq := c.Timeline()[len(c.Timeline())-1].Seq
			now := t0
			for _, s := range tc.stale {
				now = now.Add(5 * time.Second)
				c.Apply(SourceChanged{Health: SourceHealth{Name: s, Status: tc.status, Message: "no word"}}, now)
				c.Recompute(now)
			}
			for i := 0; i < 4; i++ {
				now = now.Add(5 * time.Second)
				c.Recompute(now)
				if p := c.Phase("w1"); p != PhaseRecovering {
					t.Fatalf("while %s: w1 %s, want recovering (held)", tc.name, p)
				}
			}
			if why := c.StaleInputs(); len(why) != len(tc.stale) {
				t.Fatalf("StaleInputs() = %q, want one per stale source %v", why, tc.stale)
			}
			if got := phaseEntries(c, seq); len(got) > 0 {
				t.Fatalf("entries logged from stale data: %q", got)
			}
			for _, s := range tc.stale {
				now = now.Add(5 * time.Second)
				c.Apply(SourceChanged{Health: SourceHealth{Name: s, Status: StatusOK}}, now)
				c.Recompute(now)
			}
			now = now.Add(5 * time.Second)
			c.Recompute(now)
			if p := c.Phase("w1"); p != PhaseRecovering {
				t.Fatalf("after recovery: w1 %s, want recovering (the same cycle)", p)
			}
			if got := phaseEntries(c, seq); len(got) > 0 {
				t.Fatalf("entries logged after recovery though nothing changed: %q", got)
			}
			if cy := c.CycleDurations(); len(cy) > 0 {
				t.Fatalf("a cycle finished on stale data: %v", cy)
			}
			if f := c.Fleet(now); f.ETA != nil {
				t.Fatalf("ETA %v from a cycle that never finished", *f.ETA)
			}
			if len(c.StaleInputs()) > 0 {
				t.Fatalf("StaleInputs() after recovery: %q", c.StaleInputs())
			}
		})
	}
}

// TestStaleThenRealChangeIsLoggedOnce: what really changed while the
// sources were stale (the lock was released) is derived and logged once
// they are fresh again, as one step from the last fresh picture.
func TestStaleThenRealChangeIsLoggedOnce(t *testing.T) {
	c := orphanedHolder(t)
	seq := c.Timeline()[len(c.Timeline())-1].Seq
	now := t0.Add(5 * time.Second)
	c.Apply(SourceChanged{Health: SourceHealth{Name: SourceKured, Status: StatusStale}}, now)
	c.Recompute(now)
	c.Apply(LockDeleted{Ref: LockRef{Kind: LockKured, Namespace: "kube-system", Name: "kured"}}, now)
	c.Recompute(now)
	if p := c.Phase("w1"); p != PhaseRecovering {
		t.Fatalf("while stale: w1 %s, want recovering", p)
	}
	now = now.Add(5 * time.Second)
	c.Apply(SourceChanged{Health: SourceHealth{Name: SourceKured, Status: StatusOK}}, now)
	c.Recompute(now)
	got := phaseEntries(c, seq)
	want := []string{"kured:kube-system/kured released by w1", "w1 recovering → done"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("entries after recovery:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestStaleRebootSignalHoldsPhases: a node done after its cycle does not go
// back to pending on a reboot-required value Prometheus reported before the
// reboot and could not update since.
func TestStaleRebootSignalHoldsPhases(t *testing.T) {
	c := orphanedHolder(t)
	now := t0.Add(5 * time.Second)
	c.Apply(RebootRequiredSet{Values: map[string]bool{"w1": true, "w2": false}}, now)
	c.Apply(SourceChanged{Health: SourceHealth{Name: SourcePrometheus, Status: StatusError, Message: "connection refused"}}, now)
	c.Apply(LockDeleted{Ref: LockRef{Kind: LockKured, Namespace: "kube-system", Name: "kured"}}, now)
	c.Recompute(now)
	if p := c.Phase("w1"); p != PhaseDone {
		t.Fatalf("lock released after the reboot: w1 %s, want done (nodes and locks are fresh)", p)
	}
	c.Apply(RebootRequiredSet{Values: map[string]bool{"w1": true, "w2": true}}, now)
	now = now.Add(5 * time.Second)
	c.Recompute(now)
	if p := c.Phase("w1"); p != PhaseDone {
		t.Fatalf("stale reboot-required: w1 %s, want done (held)", p)
	}
	if p := c.Phase("w2"); p != PhaseIdle {
		t.Fatalf("stale reboot-required: w2 %s, want idle (held)", p)
	}
	now = now.Add(5 * time.Second)
	c.Apply(SourceChanged{Health: SourceHealth{Name: SourcePrometheus, Status: StatusOK}}, now)
	c.Recompute(now)
	if p := c.Phase("w2"); p != PhasePending {
		t.Fatalf("fresh reboot-required: w2 %s, want pending", p)
	}
}

// TestCycleDoesNotRestartWithoutNewLockOrBoot: once a node's reboot is
// seen, its cycle does not start over (draining) on the same lock and the
// same boot id, whatever made the lock look free for a while.
func TestCycleDoesNotRestartWithoutNewLockOrBoot(t *testing.T) {
	node := func(boot string) *Node {
		return &Node{Name: "w1", BootID: boot, Conditions: []Condition{{Type: "Ready", Status: "True", LastTransition: t0.Add(-20 * time.Minute)}}}
	}
	lockA := PhaseInput{Holds: true, LockKind: LockKured, LockCreated: t0.Add(-40 * time.Minute), LockID: "kured:kube-system/kured#w1"}
	lockB := lockA
	lockB.LockCreated = t0.Add(time.Minute)
	for _, tc := range []struct {
		name  string
		again PhaseInput
		boot  string
		want  Phase
	}{
		{"same lock, same boot: the cycle goes on", lockA, "boot2", PhaseRecovering},
		{"a new lock: a new cycle", lockB, "boot2", PhaseDraining},
		{"a new boot id: a new cycle", lockA, "boot3", PhaseDraining},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &Track{}
			Advance(tr, node("boot2"), lockA, t0)
			if tr.Phase != PhaseRecovering {
				t.Fatalf("first seen %s, want recovering", tr.Phase)
			}
			Advance(tr, node("boot2"), PhaseInput{}, t0.Add(time.Minute))
			if tr.Phase != PhaseDone {
				t.Fatalf("lock gone: %s, want done", tr.Phase)
			}
			Advance(tr, node(tc.boot), tc.again, t0.Add(2*time.Minute))
			if tr.Phase != tc.want {
				t.Fatalf("lock seen again: %s, want %s", tr.Phase, tc.want)
			}
		})
	}
}

// TestPhasesAwaitSync: with PhasesAwaitSync the locks are judged before the
// first picture is complete, but no phase is derived from half of it: the
// holder seen before its lock is not idle, and once the picture is whole
// it is first seen draining since the lock was taken, not since now.
func TestPhasesAwaitSync(t *testing.T) {
	c := NewCluster("test", Options{})
	c.Judge = staleAwareJudge
	c.PhasesAwaitSync = true
	c.Apply(SourceChanged{Health: SourceHealth{Name: SourceNodes, Status: StatusOK}}, t0)
	c.Apply(NodeUpserted{Node{Name: "w1", BootID: "b1", Unschedulable: true,
		Conditions: []Condition{{Type: "Ready", Status: "True", LastTransition: t0.Add(-48 * time.Hour)}}}}, t0)
	c.Recompute(t0)
	if p := c.Phase("w1"); p != PhaseUnknown || c.Track("w1").Phase != "" {
		t.Fatalf("phase derived from half a picture: %s", p)
	}
	ref := LockRef{Kind: LockKured, Namespace: "kube-system", Name: "kured"}
	c.Apply(SourceChanged{Health: SourceHealth{Name: SourceKured, Status: StatusOK}}, t0)
	c.Apply(LockUpserted{LockObject{LockRef: ref, Spec: &testSpec{Holder: "w1", AcquireTime: t0.Add(-2 * time.Hour)}}}, t0)
	c.Recompute(t0.Add(time.Second))
	if len(c.LockStatuses()) != 1 {
		t.Fatalf("locks are judged before the sync: %v", c.LockStatuses())
	}
	c.Apply(Synced{}, t0.Add(2*time.Second))
	c.Recompute(t0.Add(2 * time.Second))
	tr := c.Track("w1")
	if tr.Phase != PhaseDraining || !tr.Since.Equal(t0.Add(-2*time.Hour)) {
		t.Fatalf("w1 %s since %v, want draining since the lock was taken", tr.Phase, tr.Since)
	}
}
