package lock

import (
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
)

// Issue 27 §2: kured starts its --lock-release-delay only after its pod
// restarted, passed its first tick and uncordoned. Counted from the reboot,
// the delay would pass while kured still waits to release, the lock would
// be called orphaned and an agent could race kured; counted from kured's
// own evidence (its pod's start, the uncordon), it is not.
func TestKuredReleaseDelayCountsFromKuredsOwnSteps(t *testing.T) {
	reboot := at(0)
	cfg := kured.ParseConfig([]string{"--lock-release-delay=1m"}, nil, nil)
	l := kuredLock(single(ent("n1", reboot.Add(-10*time.Minute), 0)))
	kspec(&l).Config = &cfg
	started := reboot.Add(3 * time.Minute)      // kured's pod came back late
	uncordoned := started.Add(80 * time.Second) // its first tick
	e := New(Options{OrphanGrace: 10 * time.Second})
	steps := []step{
		{reboot, []model.Event{nodesOK(), up(node("n1", readySince(reboot), cordoned())), up(node("n2")), lockEv(l), kuredPods("n1")}},
		{started, []model.Event{kuredPods("n1", runningSince(started))}},
		{uncordoned, []model.Event{up(node("n1", readySince(reboot)))}},
	}
	// 30 s after the uncordon kured is in its delay ("Waiting 1m0s before
	// releasing lock"): the reboot was 5 minutes ago, the uncordon is
	// steady past the 10 s grace, and still the lock is kured's to release.
	now := uncordoned.Add(30 * time.Second)
	c := build(e, append(steps, step{now, nil})...)
	s, _ := statusFor(c.LockStatuses(), kuredRef, "n1")
	if s.Verdict != model.VerdictHeld || !strings.Contains(s.Reason, "kured may still release it on its own") ||
		!strings.Contains(s.Reason, "kured's pod kube-system/kured-x1 started at") || s.ReleaseAt.IsZero() {
		t.Fatalf("inside kured's delay: %s (%s) releaseAt %v", s.Verdict, s.Reason, s.ReleaseAt)
	}
	if len(s.Actions) != 0 {
		t.Fatalf("actions inside kured's delay: %v", s.Actions)
	}
	for _, e2 := range []*Engine{e, New(Options{OrphanGrace: 10 * time.Second, Unattended: true})} {
		if e2 != e {
			c = build(e2, append(steps, step{now, nil})...)
		}
		p, _ := e2.Plan(c, kuredRef, "n1", model.ActionRelease, now)
		if p.Allowed || !strings.Contains(p.Refusal, "release delay") {
			t.Fatalf("release inside kured's delay (unattended %v): %+v", e2.opts.Unattended, p.Gates)
		}
	}
	// Past kured's own bound (its start + 90 s + the delay) it is orphaned.
	later := started.Add(kured.FirstTickLatest + time.Minute + time.Second)
	c = build(New(Options{OrphanGrace: 10 * time.Second}), append(steps, step{later, nil})...)
	if s, _ := statusFor(c.LockStatuses(), kuredRef, "n1"); s.Verdict != model.VerdictOrphaned {
		t.Fatalf("past kured's bound: %s (%s)", s.Verdict, s.Reason)
	}
	// The uncordon alone, without kured's pod (not watched): the delay
	// counts from the uncordon.
	e3 := New(Options{OrphanGrace: 10 * time.Second})
	c = build(e3, step{reboot, []model.Event{nodesOK(), up(node("n1", readySince(reboot), cordoned())), up(node("n2")), lockEv(l)}},
		step{uncordoned, []model.Event{up(node("n1", readySince(reboot)))}}, step{now, nil})
	if s, _ := statusFor(c.LockStatuses(), kuredRef, "n1"); s.Verdict != model.VerdictHeld || !strings.Contains(s.Reason, "counted from the uncordon, seen at") {
		t.Fatalf("from the uncordon: %s (%s)", s.Verdict, s.Reason)
	}
}

// Issue 27 §1: the stalled holder's release uncordons it (kured cordoned
// it); the agent may do it; uncordon --node is refused while the lock is
// held and allowed once it is gone.
func TestKuredStalledHolderReleaseUncordons(t *testing.T) {
	now := at(time.Hour)
	lockAt, rebootAt := now.Add(-40*time.Minute), now.Add(-30*time.Minute)
	held := kuredLock(single(ent("n1", lockAt, 0)))
	steps := []step{
		{lockAt, []model.Event{nodesOK(), up(node("n1", cordoned())), up(node("n2")), lockEv(held), kuredPods("n1", runningSince(lockAt.Add(-time.Hour)))}},
		{rebootAt.Add(-time.Minute), []model.Event{up(node("n1", cordoned(), notReady(rebootAt.Add(-time.Minute))))}},
		{rebootAt, []model.Event{up(node("n1", cordoned(), boot("n1-b2"), readySince(rebootAt))), kuredPods("n1", crashLooping(rebootAt.Add(time.Minute)))}},
		{now, nil},
	}
	for _, unattended := range []bool{false, true} {
		e := New(Options{Unattended: unattended})
		c := build(e, steps...)
		s, _ := statusFor(c.LockStatuses(), kuredRef, "n1")
		if s.Verdict != model.VerdictOrphaned || !s.Stalled || !strings.Contains(s.Reason, "kured on n1 has not finished its cycle 30m after the reboot") {
			t.Fatalf("stalled holder: %s (%s)", s.Verdict, s.Reason)
		}
		p := mustPlan(t, e, c, kuredRef, "n1", model.ActionRelease)
		if !p.Allowed || p.Uncordon.Op != OpUncordon || p.Uncordon.Node != "n1" || p.Uncordon.BootID != "n1-b2" {
			t.Fatalf("release of the stalled holder (unattended %v): %s uncordon %+v", unattended, p.Refusal, p.Uncordon)
		}
		if !strings.Contains(gate(p, GateHolder).Reason, "the release uncordons it") {
			t.Fatalf("holder gate %+v", gate(p, GateHolder))
		}
		if c.ExitCode(now) != 2 {
			t.Fatalf("exit code %d, want 2", c.ExitCode(now))
		}
		if u, _ := e.PlanUncordon(c, "n1", now); u.Allowed {
			t.Fatalf("uncordon while the lock is held: %+v", u.Gates)
		}
	}
	// Cordoned before kured took the lock (metadata.unschedulable true):
	// kured never uncordons it, and neither does the release.
	e := New(Options{})
	pre := kuredLock(`{"nodeID":"n1","metadata":{"unschedulable":true},"created":"` + lockAt.Format(time.RFC3339) + `","TTL":0}`)
	c := build(e, step{now, []model.Event{nodesOK(), up(node("n1", cordoned(), readySince(rebootAt))), up(node("n2")), lockEv(pre), kuredPods("n1", crashLooping(now))}})
	if p := mustPlan(t, e, c, kuredRef, "n1", model.ActionRelease); !p.Allowed || p.Uncordon.Op != "" {
		t.Fatalf("release of a holder kured did not cordon: %s uncordon %+v", p.Refusal, p.Uncordon)
	}
	// Once the lock is gone, the holder is done · still cordoned: uncordon.
	e = New(Options{})
	c = build(e, append(steps, step{now.Add(time.Minute), []model.Event{lockEv(kuredAbsent())}})...)
	u, err := e.PlanUncordon(c, "n1", now.Add(time.Minute))
	if err != nil || !u.Allowed {
		t.Fatalf("uncordon once the lock is gone: %v %+v (phase %s)", err, u.Gates, c.Phase("n1"))
	}
}
