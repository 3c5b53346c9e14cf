package lock

import (
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
)

// This file times kured's release sequence after a holder's reboot for
// the engine's verdicts: what kured does and how its own pod is seen are
// kured's package's (internal/coord/kured, cycle.go); what this engine saw
// of the holder (its uncordon, kured's mark removed) is the engine's.

// kuredMark is kured's --annotate-nodes mark that it removes right before
// its release delay.
const kuredMark = kured.MarkAnnotation

// releaseBy says until when kured, if it runs, may still release the lock
// of a rebooted holder on its own (its release delay counted from the
// latest of kured's own steps that can be seen), and which evidence that
// rests on.
func (e *Engine) releaseBy(j *judged, n *model.Node, pod kured.PodView, rebootedAt, now time.Time) (time.Time, string) {
	d := j.entry.ReleaseDelay
	at := rebootedAt.Add(kured.FirstTickLatest + d)
	from := "the reboot at " + rebootedAt.UTC().Format(time.RFC3339) + " + kured's first tick (at most 90 s) + the delay: no later step of kured's is seen"
	consider := func(t time.Time, why string) {
		if t.After(at) {
			at, from = t, why
		}
	}
	if s := pod.StartedAt(); s.After(rebootedAt) {
		consider(s.Add(kured.FirstTickLatest+d), "kured's pod "+pod.Pod.Key()+" started at "+s.UTC().Format(time.RFC3339)+
			": its first tick (30–90 s later) uncordons, then it waits the delay")
	}
	if !n.Unschedulable && !j.leftCordoned() {
		if u, ok := e.uncordoned[n.Name]; ok && u.After(rebootedAt) {
			consider(u.Add(d), "the uncordon, seen at "+u.UTC().Format(time.RFC3339)+": kured waits the delay right after it")
		}
		if m := n.UnschedulableSetAt; !m.IsZero() && m.After(rebootedAt) {
			consider(m.Add(d), "managedFields: spec.unschedulable written by "+n.UnschedulableSetBy+" at "+m.UTC().Format(time.RFC3339))
		}
	}
	if r, ok := e.unmarked[n.Name]; ok && r.After(rebootedAt) {
		consider(r.Add(d), "kured's "+kuredMark+" mark, seen removed at "+r.UTC().Format(time.RFC3339)+": kured removes it right before the delay")
	}
	if _, marked := n.Annotations[kuredMark]; marked && pod.Alive() && now.Before(pod.StartedAt().Add(kured.FirstTickLatest+d)) {
		consider(now.Add(d), "kured's "+kuredMark+" mark is still on "+n.Name+" and its pod runs: kured has not begun the delay")
	}
	return at, from
}

// schedulableSince says since when a holder has been schedulable, and from
// what: the uncordon this engine saw, or the managedFields entry that wrote
// spec.unschedulable false. ok is false when neither tells: first is then
// when this engine first saw it schedulable (a lower bound of how long it
// has been so), zero for a fresh engine.
func (e *Engine) schedulableSince(n *model.Node) (since time.Time, from string, ok bool, first time.Time) {
	if u, seen := e.uncordoned[n.Name]; seen {
		return u, "the uncordon, seen at " + u.UTC().Format(time.RFC3339), true, time.Time{}
	}
	if m := n.UnschedulableSetAt; !m.IsZero() {
		return m, "managedFields: spec.unschedulable written by " + n.UnschedulableSetBy + " at " + m.UTC().Format(time.RFC3339), true, time.Time{}
	}
	return time.Time{}, "", false, e.schedSeen[n.Name]
}
