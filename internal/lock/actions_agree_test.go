package lock

import (
	"slices"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

// checkActionsAgree: every status's Actions are exactly the actions whose
// gates pass in an unattended plan made on the same cluster at the same
// time (issue 23 §4: the ghost's actions were [] while reap passed every
// gate). An attended operator may also release a held lock whose holder
// has rebooted; Actions never recommends that, so the comparison is with
// the strict (unattended) plan, the one Actions is defined by.
func checkActionsAgree(t *testing.T, c *model.Cluster, now time.Time, opts Options) {
	t.Helper()
	opts.Unattended = true
	e := New(opts)
	for _, s := range c.LockStatuses() {
		if s.Holder == "" {
			continue
		}
		for _, a := range []model.Action{model.ActionRelease, model.ActionReap} {
			p, err := e.PlanEntry(c, s.LockRef, s.Holder, s.Entry, a, now)
			if err != nil {
				t.Fatalf("%s %s: %v", s.LockRef, a, err)
			}
			if listed := slices.Contains(s.Actions, a); listed != p.Allowed {
				t.Errorf("%s held by %s (%s): actions %v, but %s's gates: %+v", s.LockRef, s.Holder, s.Verdict, s.Actions, a, p.Gates)
			}
		}
	}
}

// A node cordoned outside any cycle (done, holding nothing) does not stop
// the ghost's reap, and the first judgement — before any phase was
// derived — must say so too: a one-shot snapshot judges once.
func TestActionsAgreeWithGatesCordonedOutsideACycle(t *testing.T) {
	e := New(Options{})
	ghost := zid(t, mid3)
	c := build(e, step{at(0), []model.Event{nodesOK(), source(model.SourceFleetlock, model.StatusOK), source(model.SourceKured, model.StatusNotInstalled),
		up(node("n1", machine(mid1), cordoned())), up(node("n2", machine(mid2))), lockEv(fleet(ghost))}})
	s, err := statusFor(c.LockStatuses(), fleetRef, ghost)
	if err != nil {
		t.Fatal(err)
	}
	if s.Verdict != model.VerdictGhost {
		t.Fatalf("verdict %s: %s", s.Verdict, s.Reason)
	}
	p, err := e.Plan(c, fleetRef, ghost, model.ActionReap, at(0))
	if err != nil || !p.Allowed {
		t.Fatalf("reap: %v %+v", err, p.Gates)
	}
	checkActionsAgree(t, c, at(0), Options{})
}
