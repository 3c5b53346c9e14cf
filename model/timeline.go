package model

import (
	"fmt"
	"time"
)

// TimelineKind says what a timeline entry is about.
type TimelineKind string

// Timeline entry kinds.
const (
	KindPhase  TimelineKind = "phase"
	KindLock   TimelineKind = "lock"
	KindAction TimelineKind = "action"
	KindSource TimelineKind = "source"
	KindVolume TimelineKind = "volume"
	KindNode   TimelineKind = "node"
	// KindSlot is a coordinator's slot or its own step for a node (a SUC
	// plan's job started, failed or completed; FLUO's reboot states).
	KindSlot TimelineKind = "slot"
)

// What a timeline entry says happened, beside its kind (Change).
const (
	ChangeHeld     = "held"     // lock: first seen held
	ChangeTaken    = "taken"    // lock: taken while watched
	ChangeJudged   = "judged"   // lock: its verdict changed
	ChangeReleased = "released" // lock: freed
	ChangeBooted   = "booted"   // node: a new boot id
	ChangeDeleted  = "deleted"  // node: gone from the API
	ChangeStep     = "step"     // slot: the coordinator's step for a node changed
)

// TimelineEntry is one change that matters, as rebootwatch observed it.
// Message is for people; the other fields are for programs (watch, the
// dashboard) so that none of them has to parse the message.
type TimelineEntry struct {
	// Seq increases by one per entry; readers remember the last they saw.
	Seq     uint64
	Time    time.Time
	Kind    TimelineKind
	Node    string
	Message string
	// Change is what happened: a Change* word for lock and node entries,
	// the outcome (done, dry-run, refused, conflict, forbidden, error) for actions.
	Change string
	// To is the new state: the phase (KindPhase), robustness (KindVolume)
	// or source status (KindSource).
	To string
	// Verdict is the lock's verdict (KindLock).
	Verdict Verdict
}

// add appends an entry, numbering it.
func (c *Cluster) add(e TimelineEntry) {
	c.seq++
	e.Seq = c.seq
	c.timeline = append(c.timeline, e)
	if len(c.timeline) > maxTimeline {
		c.timeline = append(c.timeline[:0:0], c.timeline[len(c.timeline)-maxTimeline:]...)
	}
}

// Timeline returns the entries, oldest first.
func (c *Cluster) Timeline() []TimelineEntry { return c.timeline }

// TimelineSince returns the entries with Seq greater than seq, oldest first.
func (c *Cluster) TimelineSince(seq uint64) []TimelineEntry {
	for i, e := range c.timeline {
		if e.Seq > seq {
			return c.timeline[i:]
		}
	}
	return nil
}

// lockKey identifies one judged lock (one entry of a multi-lock).
func lockKey(s LockStatus) string { return s.LockRef.String() + "#" + s.Holder }

// logLocks records locks taken, released and verdict changes.
func (c *Cluster) logLocks(now time.Time, prev, next []LockStatus) {
	old := make(map[string]LockStatus, len(prev))
	for _, s := range prev {
		old[lockKey(s)] = s
	}
	seen := make(map[string]bool, len(next))
	for _, s := range next {
		k := lockKey(s)
		seen[k] = true
		o, had := old[k]
		switch {
		case !had && s.Holder != "" && !c.judged:
			c.lockEntry(now, s, ChangeHeld, fmt.Sprintf("%s held by %s (%s)", s.LockRef, holderLabel(s), s.Verdict))
		case !had && s.Holder != "":
			c.lockEntry(now, s, ChangeTaken, fmt.Sprintf("%s taken by %s (%s)", s.LockRef, holderLabel(s), s.Verdict))
		case had && o.Verdict != s.Verdict && s.Holder != "":
			c.lockEntry(now, s, ChangeJudged, fmt.Sprintf("%s held by %s judged %s: %s", s.LockRef, holderLabel(s), s.Verdict, s.Reason))
		}
	}
	for _, o := range prev {
		if !seen[lockKey(o)] && o.Holder != "" {
			c.released(now, o)
		}
	}
	c.judged = true
}

func holderLabel(s LockStatus) string {
	if n := s.HolderNode(); n != "" && n != s.Holder {
		return n + " (" + s.Holder + ")"
	}
	return s.Holder
}

func (c *Cluster) lockEntry(now time.Time, s LockStatus, change, msg string) {
	c.add(TimelineEntry{Time: now, Kind: KindLock, Node: s.HolderNode(), Change: change, Verdict: s.Verdict, Message: msg})
}
