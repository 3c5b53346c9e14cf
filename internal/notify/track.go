package notify

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

// notified are the verdicts a lock turning into is worth a message.
var notified = []model.Verdict{model.VerdictGhost, model.VerdictOrphaned, model.VerdictExpired}

// tracker remembers the last judgement, to notify transitions once, and
// when the fleet last progressed.
type tracker struct {
	seen            map[string]model.Verdict // lock entry (ref + holder) -> last verdict
	progress        string                   // fingerprint of node phases and lock holders
	lastProgress    time.Time
	blockedSince    time.Time // zero while nothing stops the fleet
	blockedNotified bool
}

func newTracker() tracker { return tracker{seen: map[string]model.Verdict{}} }

func entryKey(s model.LockStatus) string { return s.LockRef.String() + "#" + s.Holder }

// Progress is the fingerprint of what counts as the fleet moving: any
// node's phase, or any lock's holder, changing.
func Progress(c *model.Cluster) string {
	var b strings.Builder
	for _, name := range c.NodeNames() {
		fmt.Fprintf(&b, "%s=%s;", name, c.Phase(name))
	}
	for _, s := range c.LockStatuses() {
		fmt.Fprintf(&b, "%s#%s;", s.LockRef, s.Holder)
	}
	return b.String()
}

// Stuck says whether the fleet's blocker (the blockers step's) means the
// fleet is stuck: something must be done, it will not clear by itself. A
// closed reboot window or kured's release delay (they clear at a known
// time) is not stuck, nor is "reboot-required unknown" (nothing to do as
// far as can be told).
func Stuck(b *model.FleetBlocker) bool {
	return b != nil && b.Until.IsZero() && b.Kind != model.BlockerUnknown
}

// Judged takes one judgement of the agent: statuses are the locks, blocker
// the fleet's blocker (model.Cluster.FleetBlocker), progress the fleet's
// fingerprint (Progress). It posts, when leader is true, one message for
// each lock entry that has just turned ghost, orphaned or expired, and one
// when the fleet has been blocked for the bound. Entries are tracked
// whether or not this agent leads, so a new leader does not repeat what the
// old one said. It returns how long the fleet has been blocked: stuck (see
// Stuck) with nothing progressing (0 when not blocked).
func (n *Notifier) Judged(now time.Time, statuses []model.LockStatus, blocker *model.FleetBlocker, progress string, leader bool) time.Duration {
	tr := &n.tracker
	seen := map[string]model.Verdict{}
	for _, s := range statuses {
		k := entryKey(s)
		seen[k] = s.Verdict
		if prev, ok := tr.seen[k]; (!ok || prev != s.Verdict) && slices.Contains(notified, s.Verdict) && leader {
			n.Post(lockMessage(s, now))
		}
	}
	tr.seen = seen

	if progress != tr.progress || tr.lastProgress.IsZero() {
		tr.progress, tr.lastProgress = progress, now
	}
	stuck := Stuck(blocker)
	switch {
	case !stuck:
		tr.blockedSince = time.Time{}
	case tr.blockedSince.IsZero():
		tr.blockedSince = now
	}
	var blocked time.Duration
	if stuck {
		since := tr.blockedSince
		if tr.lastProgress.After(since) {
			since = tr.lastProgress
		}
		blocked = now.Sub(since)
	}
	if blocked == 0 {
		tr.blockedNotified = false
	}
	if n.blocking > 0 && blocked >= n.blocking && !tr.blockedNotified && leader {
		tr.blockedNotified = true
		n.Post(blockedMessage(blocker, blocked))
	}
	return blocked
}

func lockMessage(s model.LockStatus, now time.Time) string {
	holder := s.Holder
	if node := s.HolderNode(); node != "" && node != s.Holder {
		holder += " (node " + node + ")"
	}
	msg := fmt.Sprintf("%s lock %s/%s turned %s, holder %s: %s.", s.Kind, s.Namespace, s.Name, s.Verdict, holder, s.Reason)
	if d, ok := s.HeldFor(now); ok {
		msg += " Held for " + model.HumanDuration(d) + "."
	}
	switch s.Verdict {
	case model.VerdictGhost, model.VerdictExpired:
		msg += fmt.Sprintf(" The agent reaps it when its policy and the gates allow; by hand: rebootwatch reap --kind %s --lock %s/%s", s.Kind, s.Namespace, s.Name)
	case model.VerdictOrphaned:
		msg += fmt.Sprintf(" By hand: rebootwatch release --kind %s --lock %s/%s", s.Kind, s.Namespace, s.Name)
	}
	return msg
}

func blockedMessage(b *model.FleetBlocker, d time.Duration) string {
	msg := fmt.Sprintf("no node has progressed for %s: %s", model.HumanDuration(d), b.Reason)
	if b.Others > 0 {
		msg += fmt.Sprintf(" (and %d other node(s) blocked)", b.Others)
	}
	if b.Clears != "" {
		msg += ". To clear it: " + b.Clears
	}
	return msg + ". See rebootwatch --snapshot."
}

// Acted posts the text of an action the agent performed (outcome done);
// other outcomes are in the heartbeat and the metrics, not in chat.
func (n *Notifier) Acted(s model.LockStatus, action model.Action, outcome model.Outcome, message string) {
	if outcome != model.OutcomeDone {
		return
	}
	n.Post(message)
}
