package lock

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
)

func gate(p Plan, name string) Gate {
	for _, g := range p.Gates {
		if g.Name == name {
			return g
		}
	}
	return Gate{Name: name, Reason: "missing"}
}

func mustPlan(t *testing.T, e *Engine, c *model.Cluster, ref model.LockRef, holder string, a model.Action) Plan {
	t.Helper()
	p, err := e.Plan(c, ref, holder, a, c.Now())
	if err != nil {
		t.Fatalf("Plan(%s, %q, %s): %v", ref, holder, a, err)
	}
	if len(p.Gates) != 6 {
		t.Fatalf("want 6 gates, got %+v", p.Gates)
	}
	for _, g := range p.Gates {
		if g.Reason == "" {
			t.Errorf("gate %s has no reason", g.Name)
		}
	}
	if p.Allowed != (len(p.FailedGates()) == 0) {
		t.Errorf("Allowed %v but failed gates %v", p.Allowed, p.FailedGates())
	}
	if !p.Allowed && p.Refusal == "" {
		t.Error("refused plan without a refusal")
	}
	return p
}

func TestPlanReapGhostKured(t *testing.T) {
	now := at(time.Hour)
	e := New(Options{})
	c := build(e, step{now, []model.Event{nodesOK(), up(node("n1")), lockEv(kuredLock(single(ent("n9", now.Add(-time.Hour), 0))))}})
	p := mustPlan(t, e, c, kuredRef, "", model.ActionReap)
	if !p.Allowed {
		t.Fatalf("reap of a ghost refused: %s", p.Refusal)
	}
	w := p.Write
	if w.Op != kured.OpRemoveAnnotation || w.UID != "uid-ds" || w.ResourceVersion != "100" || w.Holder != "n9" || w.Object != "DaemonSet kube-system/kured" {
		t.Fatalf("write %+v", w)
	}
	if s := w.String(); !strings.Contains(s, "resourceVersion 100") || !strings.Contains(s, "remove annotation") {
		t.Errorf("write string %q", s)
	}
	// The same ghost cannot be "released": the verdict gate says to reap.
	r := mustPlan(t, e, c, kuredRef, "n9", model.ActionRelease)
	if r.Allowed || gate(r, GateVerdict).Passed || !strings.Contains(gate(r, GateVerdict).Reason, "use reap") {
		t.Fatalf("release of a ghost: %+v", r.Gates)
	}
}

func TestPlanReleaseOrphanedAndHeld(t *testing.T) {
	now := at(time.Hour)
	e := New(Options{})
	orphan := build(e, step{now, []model.Event{nodesOK(), up(node("n1", readySince(now.Add(-30*time.Minute)), schedAt(now.Add(-30*time.Minute)))), up(node("n2")),
		lockEv(kuredLock(single(ent("n1", now.Add(-40*time.Minute), 0))))}})
	if p := mustPlan(t, e, orphan, kuredRef, "n1", model.ActionRelease); !p.Allowed {
		t.Fatalf("release of orphaned refused: %s", p.Refusal)
	}
	if p := mustPlan(t, e, orphan, kuredRef, "n1", model.ActionReap); p.Allowed || !strings.Contains(p.Refusal, "use release") {
		t.Fatalf("reap of orphaned: %+v", p)
	}

	// A held lock whose holder is Ready and schedulable: an operator may
	// release it; the agent (unattended) may not; it is never listed.
	e2 := New(Options{})
	held := build(e2, step{now, []model.Event{nodesOK(), up(node("n1", readySince(now.Add(-3*time.Minute)))), up(node("n2")),
		lockEv(kuredLock(single(ent("n1", now.Add(-40*time.Minute), 0))))}})
	if s := held.LockStatuses()[0]; s.Verdict != model.VerdictHeld || len(s.Actions) != 0 {
		t.Fatalf("status %+v", s)
	}
	if p := mustPlan(t, e2, held, kuredRef, "n1", model.ActionRelease); !p.Allowed {
		t.Fatalf("operator release of a held, Ready, schedulable holder refused: %s", p.Refusal)
	}
	agent := New(Options{Unattended: true})
	if p := mustPlan(t, agent, held, kuredRef, "n1", model.ActionRelease); p.Allowed || !p.Unattended || !strings.Contains(gate(p, GateVerdict).Reason, "agent") {
		t.Fatalf("unattended release of a held lock: %+v", p)
	}

	// Held by a draining (cordoned) node: refused by verdict and holder gates.
	e3 := New(Options{})
	draining := build(e3, step{now, []model.Event{nodesOK(), up(node("n1", cordoned())), lockEv(kuredLock(single(ent("n1", now.Add(-4*time.Minute), 0))))}})
	p := mustPlan(t, e3, draining, kuredRef, "n1", model.ActionRelease)
	if p.Allowed || gate(p, GateVerdict).Passed || gate(p, GateHolder).Passed {
		t.Fatalf("release of a draining holder: %+v", p.Gates)
	}
}

func TestPlanMultiLockEntry(t *testing.T) {
	now := at(time.Hour)
	e := New(Options{})
	ann := multi(2, ent("n1", now.Add(-5*time.Minute), 0), ent("gone", now.Add(-3*time.Hour), 0))
	c := build(e, step{now, []model.Event{nodesOK(), up(node("n1", cordoned())), up(node("n2")), lockEv(kuredLock(ann))}})
	if _, err := e.Plan(c, kuredRef, "", model.ActionReap, now); err == nil || !strings.Contains(err.Error(), "--holder") || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("multi-lock without holder: %v", err)
	}
	if _, err := e.Plan(c, kuredRef, "nope", model.ActionReap, now); err == nil || !strings.Contains(err.Error(), "n1") {
		t.Fatalf("unknown holder: %v", err)
	}
	p := mustPlan(t, e, c, kuredRef, "gone", model.ActionReap)
	// n1 is draining under the other entry: the other-nodes gate refuses.
	if p.Allowed || gate(p, GateOtherNodes).Passed || !strings.Contains(gate(p, GateOtherNodes).Reason, "n1") {
		t.Fatalf("reap with another node mid-cycle: %+v", p.Gates)
	}
	if p.Write.Op != kured.OpSetAnnotation {
		t.Fatalf("write %+v", p.Write)
	}
	var got struct {
		MaxOwners int `json:"maxOwners"`
		Locks     []struct {
			NodeID string `json:"nodeID"`
		} `json:"locks"`
	}
	if err := json.Unmarshal([]byte(p.Write.NewValue), &got); err != nil {
		t.Fatal(err)
	}
	if got.MaxOwners != 2 || len(got.Locks) != 1 || got.Locks[0].NodeID != "n1" {
		t.Fatalf("new value %s", p.Write.NewValue)
	}
}

func TestPlanGates(t *testing.T) {
	now := at(time.Hour)
	ghost := lockEv(kuredLock(single(ent("n9", now.Add(-time.Hour), 0))))
	vol := func(r model.Robustness) model.Event {
		return model.VolumeUpserted{Volume: model.Volume{Namespace: "longhorn-system", Name: "pvc-" + string(r), Robustness: r}}
	}
	cases := []struct {
		name   string
		ev     []model.Event
		failed string // the gate that must fail ("" = allowed)
		reason string
	}{
		{"all clear", []model.Event{nodesOK(), up(node("n1")), ghost}, "", ""},
		{"healthy and detached (unknown) volumes pass", []model.Event{nodesOK(), up(node("n1")), vol(model.RobustnessHealthy), vol(model.RobustnessUnknown), ghost}, "", ""},
		{"degraded volume", []model.Event{nodesOK(), up(node("n1")), vol(model.RobustnessDegraded), ghost}, GateVolumes, "pvc-degraded"},
		{"faulted volume", []model.Event{nodesOK(), up(node("n1")), vol(model.RobustnessFaulted), ghost}, GateVolumes, "faulted"},
		{"longhorn source errored", []model.Event{nodesOK(), source(model.SourceLonghorn, model.StatusError), up(node("n1")), ghost}, GateFreshData, "longhorn error"},
		{"longhorn not installed", []model.Event{nodesOK(), source(model.SourceLonghorn, model.StatusNotInstalled), up(node("n1")), ghost}, "", ""},
		{"other node NotReady", []model.Event{nodesOK(), up(node("n1", notReady(now.Add(-time.Minute)))), ghost}, GateOtherNodes, "n1 (NotReady"},
		{"other node readiness unknown", []model.Event{nodesOK(), up(node("n1", noReady())), ghost}, GateOtherNodes, "readiness unknown"},
		{"nodes stale", []model.Event{source(model.SourceNodes, model.StatusStale), up(node("n1")), ghost}, GateFreshData, "nodes stale"},
		{"blocking alert firing", []model.Event{nodesOK(), up(node("n1")), model.AlertsFiring{Names: []string{"EtcdDown"}}, ghost}, GateAlerts, "EtcdDown"},
		{"no blocking alert", []model.Event{nodesOK(), up(node("n1")), model.AlertsFiring{}, ghost}, "", ""},
		{"alerts unknown: prometheus errored", []model.Event{nodesOK(), up(node("n1")), model.AlertsFiring{}, source(model.SourcePrometheus, model.StatusError), ghost}, GateAlerts, "prometheus is error"},
		{"alert filter set, prometheus not answered yet", []model.Event{nodesOK(), up(node("n1")), model.AlertsFiring{Unknown: true}, ghost}, GateAlerts, "has not answered"},
		{"longhorn never reported", []model.Event{model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusOK}}, up(node("n1")), ghost}, GateFreshData, "longhorn not reported"},
		{"the other lock kind is turned off", []model.Event{nodesOK(), source(model.SourceFleetlock, model.StatusDisabled), up(node("n1")), ghost}, "", ""},
		{"the other lock kind's source is forbidden", []model.Event{nodesOK(), source(model.SourceFleetlock, model.StatusForbidden), up(node("n1")), ghost}, GateFreshData, "fleetlock forbidden"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Options{})
			c := build(e, step{now, tc.ev})
			p := mustPlan(t, e, c, kuredRef, "n9", model.ActionReap)
			if tc.failed == "" {
				if !p.Allowed {
					t.Fatalf("refused: %s", p.Refusal)
				}
				return
			}
			g := gate(p, tc.failed)
			if p.Allowed || g.Passed || !strings.Contains(g.Reason, tc.reason) || !strings.Contains(p.Refusal, tc.failed) {
				t.Fatalf("gate %s: %+v; refusal %q", tc.failed, g, p.Refusal)
			}
		})
	}
}

func TestPlanFleetlockByNodeNameAndFree(t *testing.T) {
	now := at(time.Hour)
	e := New(Options{})
	c := build(e,
		step{at(0), []model.Event{nodesOK(), up(node("n1", machine(mid1))), up(node("n2", machine(mid2))), lockEv(fleet(zid1))}},
		step{at(3 * time.Minute), []model.Event{up(node("n1", machine(mid1), boot("b2"), readySince(at(4*time.Minute))))}},
		step{now, nil})
	p := mustPlan(t, e, c, fleetRef, "n1", model.ActionRelease)
	if !p.Allowed || p.Write.Op != fleetlock.OpClearHolder || p.Write.Holder != zid1 || !strings.Contains(p.Write.Summary, "leaseTransitions kept at 3") || p.Write.ResourceVersion != "200" {
		t.Fatalf("plan %+v", p)
	}
	if _, err := e.Plan(c, model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "nope"}, "", model.ActionReap, now); err == nil {
		t.Fatal("plan on a missing lock gave no error")
	}
	if _, err := e.Plan(c, fleetRef, "", "explode", now); err == nil {
		t.Fatal("unknown action gave no error")
	}
	e2 := New(Options{})
	free := build(e2, step{now, []model.Event{nodesOK(), up(node("n1", machine(mid1))), lockEv(fleet(""))}})
	fp := mustPlan(t, e2, free, fleetRef, "", model.ActionReap)
	if fp.Allowed || fp.Write.Op != "" {
		t.Fatalf("reap of a free lock: %+v", fp)
	}
}

// An operator may release a held lock early only when its holder finished
// its reboot; a holder that has not rebooted yet may still go down, so
// freeing its lock could put two nodes down at once.
func TestOperatorReleaseOfHeldNeedsAReboot(t *testing.T) {
	taken := at(-30 * time.Minute)
	lock := lockEv(kuredLock(single(ent("n1", taken, 0))))
	cases := []struct {
		name    string
		steps   []step
		allowed bool
		reason  string
	}{
		{"not rebooted, Ready and schedulable (kured not cordoned yet)",
			[]step{{at(0), []model.Event{nodesOK(), up(node("n1")), up(node("n2")), lock}}}, false, "has not rebooted"},
		{"rebooted within the orphan grace",
			[]step{{at(-40 * time.Minute), []model.Event{nodesOK(), up(node("n1")), up(node("n2"))}},
				{at(-29 * time.Minute), []model.Event{lock}},
				{at(-5 * time.Minute), []model.Event{up(node("n1", boot("n1-b2"), readySince(at(-5*time.Minute))))}},
				{at(0), nil}}, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Options{})
			c := build(e, tc.steps...)
			if s := c.LockStatuses(); len(s) != 1 || s[0].Verdict != model.VerdictHeld {
				t.Fatalf("verdict %+v, want held", s)
			}
			p := mustPlan(t, e, c, kuredRef, "n1", model.ActionRelease)
			g := gate(p, GateVerdict)
			if p.Allowed != tc.allowed || (!tc.allowed && !strings.Contains(g.Reason, tc.reason)) {
				t.Fatalf("allowed %v (%s), want %v", p.Allowed, g.Reason, tc.allowed)
			}
		})
	}
}

// A Ready flap under an unchanged boot id, on a node cordoned before the
// lock was taken, is not a reboot: never orphaned, never released.
func TestReadyFlapIsNotAReboot(t *testing.T) {
	pre := ent("n1", at(-30*time.Minute), 0)
	pre.Metadata = map[string]any{"unschedulable": true}
	e := New(Options{})
	c := build(e,
		step{at(-40 * time.Minute), []model.Event{nodesOK(), up(node("n1", cordoned())), up(node("n2"))}},
		step{at(-30 * time.Minute), []model.Event{lockEv(kuredLock(single(pre)))}},
		step{at(-15 * time.Minute), []model.Event{up(node("n1", cordoned(), readySince(at(-15*time.Minute))))}},
		step{at(0), nil})
	s := c.LockStatuses()
	if len(s) != 1 || s[0].Verdict != model.VerdictHeld {
		t.Fatalf("verdict %+v, want held (same boot id as before the lock)", s)
	}
	if p := mustPlan(t, e, c, kuredRef, "n1", model.ActionRelease); p.Allowed {
		t.Fatal("release allowed for a node that never rebooted")
	}
}

// poseidon/fleetlock drains (cordons) the holder when it takes the lock and
// uncordons it only when the holder unlocks. A holder that rebooted and
// never unlocked is therefore still cordoned: orphaned after the grace,
// and releasable; one that has not rebooted stays held.
func TestFleetlockHolderStaysCordoned(t *testing.T) {
	e := New(Options{})
	c := build(e,
		step{at(-60 * time.Minute), []model.Event{nodesOK(), up(node("n1", machine(mid1))), up(node("n2", machine(mid2))), lockEv(fleet(zid1))}},
		step{at(-59 * time.Minute), []model.Event{up(node("n1", machine(mid1), cordoned()))}},
		step{at(-50 * time.Minute), []model.Event{up(node("n1", machine(mid1), cordoned(), notReady(at(-50*time.Minute))))}},
		step{at(-45 * time.Minute), []model.Event{up(node("n1", machine(mid1), cordoned(), boot("n1-b2"), readySince(at(-45*time.Minute))))}},
		step{at(0), nil})
	s := c.LockStatuses()
	if len(s) != 1 || s[0].Verdict != model.VerdictOrphaned {
		t.Fatalf("verdict %+v, want orphaned", s)
	}
	p := mustPlan(t, e, c, fleetRef, zid1, model.ActionRelease)
	if !p.Allowed {
		t.Fatalf("release refused: %s", p.Refusal)
	}
	found := false
	for _, ev := range s[0].Evidence {
		if strings.Contains(ev.Value, "a release from here also uncordons it") {
			found = true
		}
	}
	if !found {
		t.Fatalf("evidence does not tell the operator to uncordon: %+v", s[0].Evidence)
	}

	e2 := New(Options{})
	c2 := build(e2,
		step{at(-60 * time.Minute), []model.Event{nodesOK(), up(node("n1", machine(mid1))), up(node("n2", machine(mid2))), lockEv(fleet(zid1))}},
		step{at(-59 * time.Minute), []model.Event{up(node("n1", machine(mid1), cordoned()))}},
		step{at(0), nil})
	if s := c2.LockStatuses(); len(s) != 1 || s[0].Verdict != model.VerdictHeld {
		t.Fatalf("draining fleetlock holder: %+v, want held", s)
	}
	if p := mustPlan(t, e2, c2, fleetRef, zid1, model.ActionRelease); p.Allowed {
		t.Fatal("release allowed for a fleetlock holder that has not rebooted")
	}
}

func TestSameDecision(t *testing.T) {
	base := Plan{Allowed: true, Status: model.LockStatus{Verdict: model.VerdictGhost},
		Gates: []Gate{{Name: GateVerdict, Passed: true, Reason: "a"}, {Name: GateOtherNodes, Passed: true, Reason: "b"}},
		Write: Write{Object: "Lease default/fleetlock-default", ResourceVersion: "7", Op: fleetlock.OpClearHolder}}
	same := base
	same.Gates = []Gate{{Name: GateVerdict, Passed: true, Reason: "a, reworded"}, {Name: GateOtherNodes, Passed: true, Reason: "b"}}
	if !base.SameDecision(same) {
		t.Fatal("a reworded reason is the same decision")
	}
	gate := base
	gate.Gates = []Gate{{Name: GateVerdict, Passed: true}, {Name: GateOtherNodes, Passed: false}}
	gate.Allowed = false
	rv := base
	rv.Write.ResourceVersion = "8"
	verdict := base
	verdict.Status.Verdict = model.VerdictHeld
	for name, p := range map[string]Plan{"a gate failed": gate, "the lock changed": rv, "the verdict changed": verdict} {
		if base.SameDecision(p) {
			t.Errorf("%s: reported as the same decision", name)
		}
	}
}
