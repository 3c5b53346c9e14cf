package lock

import (
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

// Issue 33 §3: a kured holder uncordoned by hand (kubectl removes the
// field: no managedFields entry dates it), its kured pod missing or dead,
// the lock still held 30 minutes after the reboot. A fresh read cannot tell
// since when it is schedulable, but it needs not: nothing on the node will
// release the lock, and kured could have released it long ago had it run
// (the reboot + its first tick + --lock-release-delay). It is orphaned —
// where kured's pod runs it stays held, and where kured's pods cannot be
// read it is not judged from their absence.
func TestKuredUncordonedHolderWithoutKuredIsOrphaned(t *testing.T) {
	now := at(time.Hour)
	h := func(d time.Duration) time.Time { return now.Add(d) }
	lock := lockEv(kuredLock(single(ent("n1", h(-40*time.Minute), 0))))
	holder := up(node("n1", readySince(h(-30*time.Minute)))) // rebooted 30m ago, schedulable, no managedFields
	podsForbidden := model.SourceChanged{Health: model.SourceHealth{Name: model.SourcePods, Status: model.StatusForbidden, Message: "pods is forbidden"}}
	for _, tc := range []struct {
		name    string
		ev      []model.Event
		verdict model.Verdict
		reason  string
		evid    string
	}{
		{name: "kured's pod missing", ev: []model.Event{kuredPods("n1")}, verdict: model.VerdictOrphaned,
			reason: "kured's pod on n1 is missing", evid: "missing: no kured pod on n1"},
		{name: "kured's pod in CrashLoopBackOff", ev: []model.Event{kuredPods("n1", crashLooping(h(-time.Minute)))}, verdict: model.VerdictOrphaned,
			reason: "CrashLoopBackOff", evid: "CrashLoopBackOff"},
		{name: "kured's pod runs", ev: []model.Event{kuredPods("n1", runningSince(h(-29*time.Minute)))}, verdict: model.VerdictHeld,
			reason: "since when is unknown"},
		{name: "kured's pods cannot be read", ev: []model.Event{podsForbidden}, verdict: model.VerdictHeld,
			reason: "since when is unknown", evid: "unknown: pods forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Options{})
			c := build(e, step{now, append([]model.Event{nodesOK(), holder, up(node("n2")), lock}, tc.ev...)})
			s, _ := statusFor(c.LockStatuses(), kuredRef, "n1")
			var evid []string
			for _, x := range s.Evidence {
				evid = append(evid, x.Key+": "+x.Value)
			}
			if s.Verdict != tc.verdict || !strings.Contains(s.Reason, tc.reason) || !strings.Contains(strings.Join(evid, "\n"), tc.evid) {
				t.Fatalf("%s (%s), want %s with %q; evidence %q", s.Verdict, s.Reason, tc.verdict, tc.reason, evid)
			}
			if tc.verdict != model.VerdictOrphaned {
				if c.ExitCode(now) == 2 && tc.name == "kured's pod runs" {
					t.Fatalf("exit 2 with kured running: %+v", c.Attention(now))
				}
				return
			}
			if !s.Stalled || c.ExitCode(now) != 2 {
				t.Fatalf("stalled %v, exit %d", s.Stalled, c.ExitCode(now))
			}
			p := mustPlan(t, e, c, kuredRef, "n1", model.ActionRelease)
			if !p.Allowed || p.Uncordon.Op != "" {
				t.Fatalf("release: %s, uncordon %+v", p.Refusal, p.Uncordon)
			}
		})
	}
	// Within kured's bound (the reboot 5 minutes ago: its first tick + the
	// delay + the orphan grace not yet passed) a missing pod is not enough.
	e := New(Options{})
	c := build(e, step{now, []model.Event{nodesOK(), up(node("n1", readySince(h(-5*time.Minute)))), up(node("n2")), lock, kuredPods("n1")}})
	if s, _ := statusFor(c.LockStatuses(), kuredRef, "n1"); s.Verdict != model.VerdictHeld {
		t.Fatalf("within kured's bound: %s (%s)", s.Verdict, s.Reason)
	}
}
