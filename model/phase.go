package model

import "time"

// PhaseInput is what a node's next phase depends on besides the node itself.
type PhaseInput struct {
	// Holds is true when the node holds a reboot lock.
	Holds    bool
	LockKind LockKind
	// LockCreated is when that lock was taken, when known.
	LockCreated time.Time
	// RebootRequired is kured_reboot_required for the node, nil when unknown.
	RebootRequired *bool
	// Upgraded is true when the node runs the target OS while other nodes
	// do not yet: first seen like that, it is taken as done in this rollout.
	Upgraded bool
	// LockID identifies the lock held (its lock, holder and time): the same
	// lock seen again after the node's cycle ended does not start another.
	LockID string
	// RebootStale is true when RebootRequired is the last value of a
	// source that is not ok now: the phases it alone decides (pending,
	// idle, done) are held rather than derived from it.
	RebootStale bool
	// Declared is the node's phase as its coordinator's package declares
	// it (NodeCycle): an in-cycle phase means the node holds that
	// coordinator's slot and is where it says; done ends the cycle (a SUC
	// node whose plan label is the plan's latest hash, rebooted or not);
	// pending means it waits for a slot. "" declares nothing.
	Declared Phase
	// LeftCordoned: the declaring coordinator finished with the node and
	// left it cordoned (NodeCycle.LeftCordoned).
	LeftCordoned bool
	// Marks are what the lock-object kinds read from the node's own
	// annotations (Cluster.Marks): a pending mark says the coordinator
	// wants to reboot the node (taken when RebootRequired is unknown); a
	// done mark with LeftCordoned says the node rebooted after the
	// coordinator marked it and was left cordoned (taken at first sight,
	// holding no slot, still cordoned: done · still cordoned by that kind).
	Marks []NodeCycle
}

// Advance moves a node's track to its phase at now (DESIGN §4) and returns
// the duration of the cycle it finished, if this step finished one.
//
// A cycle starts when the node is seen holding a lock and ends at done. The
// node "rebooted" in a cycle when its boot id changed; a node first seen
// mid-cycle is taken as rebooted when it turned Ready after the lock was
// taken (a lock time in the future — clock skew — proves nothing).
//
// A cycle that ended once the reboot was seen is not started over by the
// same lock on the same boot: seeing that lock held again (it was only
// unseen for a while) resumes the cycle, rebooted. Only a new lock or a new
// boot id starts a new one.
func Advance(t *Track, n *Node, in PhaseInput, now time.Time) (finished time.Duration) {
	first := t.Phase == ""
	if first {
		defer inferSince(t, n, in, now)
	}
	ready, known, readySince := n.Ready()
	if !known {
		t.set(PhaseUnknown, now, false)
		return 0
	}
	if in.Declared.InCycle() {
		// The coordinator has the node in its cycle: it holds its slot.
		in.Holds = true
	}
	if in.Holds && !t.InCycle && in.LockID != "" && in.LockID == t.doneLock && in.LockCreated.Equal(t.doneLockCreated) &&
		n.BootID != "" && n.BootID == t.doneBoot {
		t.InCycle = true
	}
	if in.Holds && !t.InCycle {
		t.InCycle = true
		t.StillCordoned = false
		t.CycleBoot = n.BootID
		t.CycleStart = now
		t.LockKind = in.LockKind
		t.Rebooted = false
		if first && !in.LockCreated.IsZero() && !in.LockCreated.After(now) && ready && readySince.After(in.LockCreated) {
			t.Rebooted = true
			t.CycleStart = in.LockCreated
		}
		if len(t.Spans) == 0 || t.Phase != PhasePending {
			t.Spans = nil
		}
	}
	if t.InCycle && in.Holds {
		t.cycleLock, t.cycleLockCreated = in.LockID, in.LockCreated
	}
	if t.InCycle {
		if n.BootID != "" && t.CycleBoot != "" && n.BootID != t.CycleBoot {
			t.Rebooted = true
		}
		switch {
		case in.Declared == PhaseDone:
			// Its coordinator says the node's cycle is over.
			return t.finish(n, now, in.LeftCordoned && n.Unschedulable)
		case !ready:
			t.set(PhaseRebooting, now, true)
			return 0
		case in.Declared.InCycle():
			t.set(in.Declared, now, true)
			return 0
		case !t.Rebooted && in.Holds:
			t.set(PhaseDraining, now, true)
			return 0
		case t.Rebooted && in.Holds:
			t.set(PhaseRecovering, now, true)
			return 0
		case t.Rebooted:
			// Rebooted and holding no lock: the cycle is over. Both
			// coordinators uncordon before they release, so a node still
			// cordoned now stays so: fleetlock's holder whose lock someone
			// else freed (fleetlock uncordons only on the holder's own
			// unlock), or kured's stuck cordon. It is done, not mid-cycle.
			return t.finish(n, now, n.Unschedulable)
		default:
			// The lock went away before any reboot: the cycle was abandoned.
			t.InCycle = false
		}
	}
	req := in.RebootRequired != nil && *in.RebootRequired
	marked, leftBy := false, LockKind("")
	for _, m := range in.Marks {
		switch {
		case m.Phase == PhasePending:
			marked = true
		case m.Phase == PhaseDone && m.LeftCordoned && leftBy == "":
			leftBy = m.Kind
		}
	}
	if in.RebootRequired == nil && marked {
		// No reboot-required signal for this node, but its coordinator
		// marked it for a reboot it has not gone through yet.
		req = true
	}
	switch {
	case !ready:
		t.set(PhaseDown, now, false)
	case in.Declared == PhasePending:
		t.set(PhasePending, now, t.Phase == PhasePending)
	case in.Declared == PhaseDone:
		t.StillCordoned = in.LeftCordoned && n.Unschedulable
		t.set(PhaseDone, now, false)
	case in.RebootStale && (t.Phase == PhasePending || t.Phase == PhaseIdle || t.Phase == PhaseDone):
		// Only the reboot signal would move it, and that is out of date.
		t.StillCordoned = t.StillCordoned && n.Unschedulable
	case req:
		t.set(PhasePending, now, t.Phase == PhasePending)
	case t.Phase == PhaseDone:
		// Stays done until it needs another reboot or takes a lock again.
		t.StillCordoned = t.StillCordoned && n.Unschedulable
	case first && !in.Holds && n.Unschedulable && leftBy != "":
		// Its coordinator's mark says it rebooted in that coordinator's
		// cycle; holding no slot and still cordoned: left cordoned.
		t.StillCordoned = true
		t.LockKind = leftBy
		t.set(PhaseDone, now, false)
	case first && in.Upgraded && in.RebootRequired != nil:
		// First seen already on the target OS, needing no reboot, while
		// others still run the old one: it went through this rollout.
		t.set(PhaseDone, now, false)
	default:
		t.set(PhaseIdle, now, false)
	}
	return 0
}

// finish ends the track's cycle at done; stillCordoned says whether the
// node needs an uncordon now. It returns the cycle's duration.
func (t *Track) finish(n *Node, now time.Time, stillCordoned bool) time.Duration {
	t.InCycle = false
	t.StillCordoned = stillCordoned
	t.doneLock, t.doneLockCreated, t.doneBoot = t.cycleLock, t.cycleLockCreated, n.BootID
	t.set(PhaseDone, now, true)
	if d := now.Sub(t.CycleStart); d > 0 {
		return d
	}
	return 0
}

// set moves the track to p. keep says whether p continues the current
// progress run (its spans); otherwise the run starts afresh.
func (t *Track) set(p Phase, now time.Time, keep bool) {
	if t.Phase == p {
		return
	}
	if len(t.Spans) > 0 && t.Spans[len(t.Spans)-1].End.IsZero() {
		t.Spans[len(t.Spans)-1].End = now
	}
	// idle, down and unknown are not part of a run: the last run's spans
	// stay for the detail view until a new run starts.
	if p.Step() >= 0 {
		if !keep && p == PhasePending {
			t.Spans = nil
		}
		t.Spans = append(t.Spans, Span{Phase: p, Start: now})
	}
	t.Phase = p
	t.Since = now
	t.SinceUnknown = false
}

// PhaseDurations returns the time spent in each step of the current run.
func (t *Track) PhaseDurations(now time.Time) map[Phase]time.Duration {
	out := map[Phase]time.Duration{}
	for _, s := range t.Spans {
		out[s.Phase] += s.Duration(now)
	}
	return out
}

// inferSince dates the phase a node is first seen in from the evidence the
// API holds (otherwise it would read "0s" until the next change): NotReady
// since the Ready transition; draining since the lock was taken; recovering
// since it turned Ready. Evidence in the future (clock skew) is ignored.
func inferSince(t *Track, n *Node, in PhaseInput, now time.Time) {
	_, _, readySince := n.Ready()
	var since time.Time
	switch t.Phase {
	case PhaseDown, PhaseRebooting, PhaseRecovering:
		since = readySince
	case PhaseDraining:
		since = in.LockCreated
	}
	if since.IsZero() || since.After(now) {
		t.SinceUnknown = true
		return
	}
	t.Since = since
	if len(t.Spans) > 0 {
		t.Spans[len(t.Spans)-1].Start = since
	}
	if t.InCycle && !in.LockCreated.IsZero() && !in.LockCreated.After(now) {
		t.CycleStart = in.LockCreated
	}
}
