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

// needsAttention are the verdicts during which the fleet counts as blocked
// when nothing progresses: no node can take a lock somebody must clear.
var needsAttention = []model.Verdict{model.VerdictGhost, model.VerdictOrphaned, model.VerdictExpired, model.VerdictAmbiguous}

// tracker remembers the last judgement, to notify transitions once, and
// when the fleet last progressed.
type tracker struct {
	seen            map[string]model.Verdict // lock entry (ref + holder) -> last verdict
	progress        string                   // fingerprint of node phases and lock holders
	lastProgress    time.Time
	attentionSince  time.Time // zero while no lock needs attention
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

// Judged takes one judgement of the agent: statuses are the locks, progress
// the fleet's fingerprint (Progress). It posts, when leader is true, one
// message for each lock entry that has just turned ghost, orphaned or
// expired, and one when the fleet has been blocked for the bound. Entries
// are tracked whether or not this agent leads, so a new leader does not
// repeat what the old one said. It returns how long the fleet has been
// blocked: a lock needed attention and nothing progressed (0 when not
// blocked).
func (n *Notifier) Judged(now time.Time, statuses []model.LockStatus, progress string, leader bool) time.Duration {
	tr := &n.tracker
	seen := map[string]model.Verdict{}
	attention := false
	for _, s := range statuses {
		k := entryKey(s)
		seen[k] = s.Verdict
		if slices.Contains(needsAttention, s.Verdict) {
			attention = true
		}
		if prev, ok := tr.seen[k]; (!ok || prev != s.Verdict) && slices.Contains(notified, s.Verdict) && leader {
			n.Post(lockMessage(s, now))
		}
	}
	tr.seen = seen

	if progress != tr.progress || tr.lastProgress.IsZero() {
		tr.progress, tr.lastProgress = progress, now
	}
	switch {
	case !attention:
		tr.attentionSince = time.Time{}
	case tr.attentionSince.IsZero():
		tr.attentionSince = now
	}
	var blocked time.Duration
	if attention {
		since := tr.attentionSince
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
		n.Post(blockedMessage(statuses, blocked))
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

func blockedMessage(statuses []model.LockStatus, d time.Duration) string {
	var locks []string
	for _, s := range statuses {
		if slices.Contains(needsAttention, s.Verdict) {
			locks = append(locks, fmt.Sprintf("%s %s/%s (%s)", s.Kind, s.Namespace, s.Name, s.Verdict))
		}
	}
	return fmt.Sprintf("no node has progressed for %s while %s needed attention. See rebootwatch --snapshot.",
		model.HumanDuration(d), strings.Join(locks, ", "))
}

// Acted posts the text of an action the agent performed (outcome done);
// other outcomes are in the heartbeat and the metrics, not in chat.
func (n *Notifier) Acted(s model.LockStatus, action model.Action, outcome model.Outcome, message string) {
	if outcome != model.OutcomeDone {
		return
	}
	n.Post(message)
}
