package model

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)

// obs is one observation of a node in a phase table case.
type obs struct {
	at       time.Duration // since t0
	ready    string        // "True", "False", "Unknown", "" (no condition)
	cordon   bool
	boot     string
	holds    bool
	created  time.Duration // lock created, relative to t0 (only with holds)
	noCreate bool          // lock has no created time
	readyAt  time.Duration // Ready lastTransitionTime, relative to t0
	req      *bool
	want     Phase
	still    bool  // want StillCordoned
	mark     Phase // a mark its coordinator left on the node (PhaseInput.Marks): pending, or done (left cordoned)
}

func bp(b bool) *bool { return &b }

func nodeAt(o obs) *Node {
	n := &Node{Name: "n1", BootID: o.boot, Unschedulable: o.cordon}
	if o.ready != "" {
		n.Conditions = []Condition{{Type: "Ready", Status: o.ready, LastTransition: t0.Add(o.readyAt)}}
	}
	return n
}

func TestAdvancePhases(t *testing.T) {
	tests := []struct {
		name string
		seq  []obs
	}{
		{"idle ready node", []obs{{ready: "True", boot: "a", want: PhaseIdle}}},
		{"no Ready condition is unknown", []obs{{ready: "", boot: "a", want: PhaseUnknown}}},
		{"reboot required without lock is pending", []obs{{ready: "True", boot: "a", req: bp(true), want: PhasePending}}},
		{"reboot not required is idle", []obs{{ready: "True", boot: "a", req: bp(false), want: PhaseIdle}}},
		{"NotReady without a cycle is down", []obs{{ready: "False", boot: "a", want: PhaseDown}}},
		{"Ready Unknown without a cycle is down", []obs{{ready: "Unknown", boot: "a", want: PhaseDown}}},
		{"NotReady with reboot required and no lock is still down", []obs{{ready: "False", boot: "a", req: bp(true), want: PhaseDown}}},
		{"taking the lock drains", []obs{
			{ready: "True", boot: "a", req: bp(true), want: PhasePending},
			{at: time.Minute, ready: "True", boot: "a", holds: true, created: time.Minute, want: PhaseDraining},
		}},
		{"cordoned holder still drains", []obs{
			{ready: "True", boot: "a", holds: true, cordon: true, want: PhaseDraining},
		}},
		{"full cycle", []obs{
			{ready: "True", boot: "a", req: bp(true), want: PhasePending},
			{at: 1 * time.Minute, ready: "True", boot: "a", holds: true, want: PhaseDraining},
			{at: 2 * time.Minute, ready: "True", boot: "a", holds: true, cordon: true, want: PhaseDraining},
			{at: 3 * time.Minute, ready: "False", boot: "a", holds: true, cordon: true, want: PhaseRebooting},
			{at: 5 * time.Minute, ready: "True", boot: "b", holds: true, cordon: true, want: PhaseRecovering},
			{at: 6 * time.Minute, ready: "True", boot: "b", holds: true, want: PhaseRecovering},
			{at: 7 * time.Minute, ready: "True", boot: "b", req: bp(false), want: PhaseDone},
			{at: 9 * time.Minute, ready: "True", boot: "b", req: bp(false), want: PhaseDone},
		}},
		{"bootID unchanged but NotReady while holding is rebooting", []obs{
			{ready: "True", boot: "a", holds: true, want: PhaseDraining},
			{at: time.Minute, ready: "False", boot: "a", holds: true, want: PhaseRebooting},
		}},
		{"back Ready with the same bootID is draining again, not recovering", []obs{
			{ready: "True", boot: "a", holds: true, want: PhaseDraining},
			{at: time.Minute, ready: "False", boot: "a", holds: true, want: PhaseRebooting},
			{at: 2 * time.Minute, ready: "True", boot: "a", holds: true, want: PhaseDraining},
		}},
		{"new bootID before NotReady was seen goes straight to recovering", []obs{
			{ready: "True", boot: "a", holds: true, cordon: true, want: PhaseDraining},
			{at: time.Minute, ready: "True", boot: "b", holds: true, cordon: true, want: PhaseRecovering},
		}},
		{"a node that reboots twice in one cycle", []obs{
			{ready: "True", boot: "a", holds: true, want: PhaseDraining},
			{at: 1 * time.Minute, ready: "False", boot: "a", holds: true, want: PhaseRebooting},
			{at: 2 * time.Minute, ready: "True", boot: "b", holds: true, cordon: true, want: PhaseRecovering},
			{at: 3 * time.Minute, ready: "False", boot: "b", holds: true, cordon: true, want: PhaseRebooting},
			{at: 4 * time.Minute, ready: "True", boot: "c", holds: true, cordon: true, want: PhaseRecovering},
			{at: 5 * time.Minute, ready: "True", boot: "c", want: PhaseDone},
		}},
		{"a node that reboots in two cycles", []obs{
			{ready: "True", boot: "a", holds: true, want: PhaseDraining},
			{at: 1 * time.Minute, ready: "True", boot: "b", want: PhaseDone},
			{at: 2 * time.Minute, ready: "True", boot: "b", req: bp(true), want: PhasePending},
			{at: 3 * time.Minute, ready: "True", boot: "b", holds: true, want: PhaseDraining},
			{at: 4 * time.Minute, ready: "True", boot: "c", holds: true, want: PhaseRecovering},
			{at: 5 * time.Minute, ready: "True", boot: "c", want: PhaseDone},
		}},
		// Issue 10 §2: fleetlock uncordons only on its holder's own unlock;
		// once someone else freed the lock the node stays cordoned. It is
		// done (not mid-cycle, blocking nothing), flagged still cordoned.
		{"rebooted, Ready, still cordoned after release is done · still cordoned", []obs{
			{ready: "True", boot: "a", holds: true, cordon: true, want: PhaseDraining},
			{at: time.Minute, ready: "True", boot: "b", cordon: true, want: PhaseDone, still: true},
			{at: time.Hour, ready: "True", boot: "b", cordon: true, want: PhaseDone, still: true},
			{at: 2 * time.Hour, ready: "True", boot: "b", want: PhaseDone},
		}},
		{"rebooted and cordoned while holding is recovering", []obs{
			{ready: "True", boot: "a", holds: true, cordon: true, want: PhaseDraining},
			{at: time.Minute, ready: "True", boot: "b", holds: true, cordon: true, want: PhaseRecovering},
		}},
		{"left-cordoned mark: rebooted after its coordinator's mark, no lock, cordoned", []obs{
			{ready: "True", boot: "b", cordon: true, mark: PhaseDone, readyAt: -30 * time.Minute, want: PhaseDone, still: true},
		}},
		{"a pending mark is pending without the metric", []obs{
			{ready: "True", boot: "b", cordon: true, mark: PhasePending, readyAt: -30 * time.Minute, want: PhasePending},
		}},
		{"a pending mark is phase evidence when the metric is unknown", []obs{
			{ready: "True", boot: "a", mark: PhasePending, readyAt: -time.Hour, want: PhasePending},
		}},
		{"the metric wins over a pending mark", []obs{
			{ready: "True", boot: "a", mark: PhasePending, readyAt: -time.Hour, req: bp(false), want: PhaseIdle},
		}},
		{"a left-cordoned mark on a schedulable node is left over, not pending", []obs{
			{ready: "True", boot: "a", mark: PhaseDone, readyAt: -time.Hour, want: PhaseIdle},
		}},
		{"rebooted and schedulable but still holding is recovering (orphan candidate)", []obs{
			{ready: "True", boot: "a", holds: true, want: PhaseDraining},
			{at: time.Minute, ready: "True", boot: "b", holds: true, want: PhaseRecovering},
			{at: time.Hour, ready: "True", boot: "b", holds: true, want: PhaseRecovering},
		}},
		{"lock released without a reboot abandons the cycle", []obs{
			{ready: "True", boot: "a", req: bp(true), holds: true, want: PhaseDraining},
			{at: time.Minute, ready: "True", boot: "a", req: bp(true), want: PhasePending},
		}},
		{"lock released without reboot and no signal is idle", []obs{
			{ready: "True", boot: "a", holds: true, want: PhaseDraining},
			{at: time.Minute, ready: "True", boot: "a", want: PhaseIdle},
		}},
		{"cordoned by a human with no lock is not in a cycle", []obs{
			{ready: "True", boot: "a", cordon: true, want: PhaseIdle},
		}},
		{"cordoned by a human and rebooted without lock is idle", []obs{
			{ready: "True", boot: "a", cordon: true, want: PhaseIdle},
			{at: time.Minute, ready: "False", boot: "a", cordon: true, want: PhaseDown},
			{at: 2 * time.Minute, ready: "True", boot: "b", cordon: true, want: PhaseIdle},
		}},
		{"down node recovers to idle", []obs{
			{ready: "True", boot: "a", want: PhaseIdle},
			{at: time.Minute, ready: "False", boot: "a", want: PhaseDown},
			{at: 2 * time.Minute, ready: "True", boot: "a", want: PhaseIdle},
		}},
		{"done node that goes NotReady is down", []obs{
			{ready: "True", boot: "a", holds: true, want: PhaseDraining},
			{at: time.Minute, ready: "True", boot: "b", want: PhaseDone},
			{at: 2 * time.Minute, ready: "False", boot: "b", want: PhaseDown},
		}},
		{"first seen mid-cycle, Ready since after the lock was taken: rebooted", []obs{
			{at: 10 * time.Minute, ready: "True", boot: "b", holds: true, created: 0, readyAt: 5 * time.Minute, want: PhaseRecovering},
		}},
		{"first seen mid-cycle, Ready since before the lock: still draining", []obs{
			{at: 10 * time.Minute, ready: "True", boot: "a", holds: true, created: 5 * time.Minute, readyAt: -time.Hour, want: PhaseDraining},
		}},
		{"clock skew: lock created in the future proves nothing", []obs{
			{at: 10 * time.Minute, ready: "True", boot: "a", holds: true, created: time.Hour, readyAt: 5 * time.Minute, want: PhaseDraining},
		}},
		{"clock skew: Ready time just before lock time is not a reboot", []obs{
			{at: 10 * time.Minute, ready: "True", boot: "a", holds: true, created: 5 * time.Minute, readyAt: 5*time.Minute - time.Second, want: PhaseDraining},
		}},
		{"legacy lock without created: no inference from times", []obs{
			{at: 10 * time.Minute, ready: "True", boot: "a", holds: true, noCreate: true, readyAt: 5 * time.Minute, want: PhaseDraining},
		}},
		{"first seen NotReady while holding is rebooting", []obs{
			{ready: "False", boot: "a", holds: true, want: PhaseRebooting},
		}},
		{"Ready condition disappears mid-cycle is unknown, then resumes", []obs{
			{ready: "True", boot: "a", holds: true, want: PhaseDraining},
			{at: time.Minute, ready: "", boot: "a", holds: true, want: PhaseUnknown},
			{at: 2 * time.Minute, ready: "True", boot: "b", holds: true, want: PhaseRecovering},
		}},
		{"empty bootID never counts as a reboot", []obs{
			{ready: "True", boot: "a", holds: true, want: PhaseDraining},
			{at: time.Minute, ready: "True", boot: "", holds: true, want: PhaseDraining},
		}},
		{"done stays done when the signal turns unknown", []obs{
			{ready: "True", boot: "a", holds: true, want: PhaseDraining},
			{at: time.Minute, ready: "True", boot: "b", want: PhaseDone},
			{at: 2 * time.Minute, ready: "True", boot: "b", req: nil, want: PhaseDone},
		}},
	}
	if len(tests) < 25 {
		t.Fatalf("only %d cases", len(tests))
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := &Track{}
			for i, o := range tc.seq {
				in := PhaseInput{Holds: o.holds, RebootRequired: o.req, LockKind: "test"}
				if o.mark != "" {
					in.Marks = []NodeCycle{{Kind: "test", Node: "n1", Phase: o.mark, LeftCordoned: o.mark == PhaseDone}}
				}
				if o.holds && !o.noCreate {
					in.LockCreated = t0.Add(o.created)
				}
				Advance(tr, nodeAt(o), in, t0.Add(o.at))
				if tr.Phase != o.want {
					t.Fatalf("step %d: phase %s, want %s", i, tr.Phase, o.want)
				}
				if tr.StillCordoned != o.still {
					t.Fatalf("step %d: still cordoned %v, want %v", i, tr.StillCordoned, o.still)
				}
			}
		})
	}
}

func TestCycleSpansAndDuration(t *testing.T) {
	tr := &Track{}
	seq := []obs{
		{ready: "True", boot: "a", req: bp(true)},
		{at: 1 * time.Minute, ready: "True", boot: "a", holds: true},
		{at: 3 * time.Minute, ready: "False", boot: "a", holds: true},
		{at: 6 * time.Minute, ready: "True", boot: "b", holds: true, cordon: true},
		{at: 7 * time.Minute, ready: "True", boot: "b"},
	}
	var finished time.Duration
	for _, o := range seq {
		finished = Advance(tr, nodeAt(o), PhaseInput{Holds: o.holds, RebootRequired: o.req}, t0.Add(o.at))
	}
	if finished != 6*time.Minute {
		t.Fatalf("cycle took %v, want 6m (lock taken at 1m, done at 7m)", finished)
	}
	d := tr.PhaseDurations(t0.Add(10 * time.Minute))
	want := map[Phase]time.Duration{PhasePending: time.Minute, PhaseDraining: 2 * time.Minute,
		PhaseRebooting: 3 * time.Minute, PhaseRecovering: time.Minute, PhaseDone: 3 * time.Minute}
	for p, w := range want {
		if d[p] != w {
			t.Errorf("%s: %v, want %v", p, d[p], w)
		}
	}
}

func TestFirstSeenInference(t *testing.T) {
	now := t0.Add(time.Hour)
	cases := []struct {
		name      string
		n         *Node
		in        PhaseInput
		want      Phase
		wantSince time.Time
	}{
		{"upgraded, no reboot needed, others not: done", nodeAt(obs{ready: "True", boot: "a", readyAt: -time.Hour}),
			PhaseInput{Upgraded: true, RebootRequired: bp(false)}, PhaseDone, now},
		{"upgraded but signal unknown: idle", nodeAt(obs{ready: "True", boot: "a"}),
			PhaseInput{Upgraded: true}, PhaseIdle, now},
		{"down since the Ready transition", nodeAt(obs{ready: "False", boot: "a", readyAt: 10 * time.Minute}),
			PhaseInput{}, PhaseDown, t0.Add(10 * time.Minute)},
		{"draining since the lock was taken", nodeAt(obs{ready: "True", boot: "a", readyAt: -time.Hour}),
			PhaseInput{Holds: true, LockCreated: t0.Add(50 * time.Minute)}, PhaseDraining, t0.Add(50 * time.Minute)},
		{"draining with a lock time in the future: now", nodeAt(obs{ready: "True", boot: "a", readyAt: -time.Hour}),
			PhaseInput{Holds: true, LockCreated: t0.Add(2 * time.Hour)}, PhaseDraining, now},
		{"recovering since Ready", nodeAt(obs{ready: "True", boot: "a", readyAt: 40 * time.Minute}),
			PhaseInput{Holds: true, LockCreated: t0.Add(30 * time.Minute)}, PhaseRecovering, t0.Add(40 * time.Minute)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := &Track{}
			Advance(tr, tc.n, tc.in, now)
			if tr.Phase != tc.want || !tr.Since.Equal(tc.wantSince) {
				t.Fatalf("phase %s since %v, want %s since %v", tr.Phase, tr.Since, tc.want, tc.wantSince)
			}
		})
	}
}
