package kured

import (
	"fmt"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/model"
)

// This file answers the lock engine's questions about a rebooted kured
// holder (coord.AfterReboot), from kured's release sequence (cycle.go) and
// what the engine saw of the node.

var _ coord.AfterReboot = Driver{}

// Marks is kured's --annotate-nodes mark, which it removes right before
// its release delay.
func (Driver) Marks() []string { return []string{MarkAnnotation} }

// StillCordoned judges a kured holder that rebooted, is Ready and is still
// cordoned by kured (the lock's metadata.unschedulable is false). kured
// uncordons it at its first tick after its pod starts again, then waits
// its --lock-release-delay and releases. Within that bound plus the orphan
// grace it is recovering; past it, kured on the node has not finished its
// cycle (its pod crash-loops, or is missing): the lock is orphaned, and its
// release also uncordons the node, as kured would.
func (Driver) StillCordoned(h coord.Holder) coord.Judgement {
	name := h.Node.Name
	pod := PodOn(h.Cluster, h.Ref, name)
	j := coord.Judgement{Evidence: []model.Evidence{coord.Ev("kured's pod", pod.Describe(name))}}
	base, from := h.RebootedAt, "the reboot at "+h.RebootedAt.UTC().Format(time.RFC3339)
	if st := pod.StartedAt(); st.After(base) {
		base, from = st, "kured's pod start at "+st.UTC().Format(time.RFC3339)
	}
	d := h.Entry.ReleaseDelay
	deadline := base.Add(FirstTickLatest + d + h.OrphanGrace)
	if r := h.ReadySince.Add(h.OrphanGrace); r.After(deadline) {
		deadline = r
	}
	j.Evidence = append(j.Evidence, coord.Ev("kured's cycle", fmt.Sprintf("kured uncordons %s at its first tick (30–90 s after its pod starts), then waits --lock-release-delay %s and releases: not finished by %s (%s + 90 s + %s + the orphan grace %s) is a stall",
		name, d, deadline.UTC().Format(time.RFC3339), from, d, model.HumanDuration(h.OrphanGrace))))
	if h.Now.Before(deadline) {
		j.Verdict = model.VerdictHeld
		j.Reason = fmt.Sprintf("held by %s, rebooted (%s) and still cordoned (recovering): kured uncordons it and releases the lock after its pod's first tick; %s", name, h.RebootWhy, pod.Short(name))
		return j
	}
	j.Stalled, j.Verdict = true, model.VerdictOrphaned
	j.Reason = fmt.Sprintf("kured on %s has not finished its cycle %s after the reboot: %s is Ready but still cordoned and holds the lock; %s",
		name, model.HumanDuration(h.Now.Sub(h.RebootedAt)), name, pod.Short(name))
	return j
}

// ReleasesBy says until when kured, if it runs, may still release the lock
// of a rebooted holder on its own (its release delay counted from the
// latest of kured's own steps that can be seen), and which evidence that
// rests on. While it may (and its pod is not known dead), the lock is held.
func (Driver) ReleasesBy(h coord.Holder) coord.Release {
	n, name := h.Node, h.Node.Name
	pod := PodOn(h.Cluster, h.Ref, name)
	r := coord.Release{Evidence: []model.Evidence{coord.Ev("kured's pod", pod.Describe(name))}}
	d := h.Entry.ReleaseDelay
	at := h.RebootedAt.Add(FirstTickLatest + d)
	from := "the reboot at " + h.RebootedAt.UTC().Format(time.RFC3339) + " + kured's first tick (at most 90 s) + the delay: no later step of kured's is seen"
	consider := func(t time.Time, why string) {
		if t.After(at) {
			at, from = t, why
		}
	}
	if s := pod.StartedAt(); s.After(h.RebootedAt) {
		consider(s.Add(FirstTickLatest+d), "kured's pod "+pod.Pod.Key()+" started at "+s.UTC().Format(time.RFC3339)+
			": its first tick (30–90 s later) uncordons, then it waits the delay")
	}
	if !n.Unschedulable && !h.Entry.LeftCordoned {
		if u := h.Uncordoned; !u.IsZero() && u.After(h.RebootedAt) {
			consider(u.Add(d), "the uncordon, seen at "+u.UTC().Format(time.RFC3339)+": kured waits the delay right after it")
		}
		if m := n.UnschedulableSetAt; !m.IsZero() && m.After(h.RebootedAt) {
			consider(m.Add(d), "managedFields: spec.unschedulable written by "+n.UnschedulableSetBy+" at "+m.UTC().Format(time.RFC3339))
		}
	}
	if rm, ok := h.MarksRemoved[MarkAnnotation]; ok && rm.After(h.RebootedAt) {
		consider(rm.Add(d), "kured's "+MarkAnnotation+" mark, seen removed at "+rm.UTC().Format(time.RFC3339)+": kured removes it right before the delay")
	}
	if _, marked := n.Annotations[MarkAnnotation]; marked && pod.Alive() && h.Now.Before(pod.StartedAt().Add(FirstTickLatest+d)) {
		consider(h.Now.Add(d), "kured's "+MarkAnnotation+" mark is still on "+name+" and its pod runs: kured has not begun the delay")
	}
	if !h.Now.Before(at) || pod.Dead() {
		if why, cycle, gone := Gone(pod, name, h.RebootWhy, h.RebootedAt, h.ReadySince, h.Now, d, h.OrphanGrace); gone {
			r.Stalled, r.StallReason = true, why
			r.StallEvidence = []model.Evidence{coord.Ev("kured's cycle", cycle)}
		}
		return r
	}
	r.Pending, r.By = true, at
	r.Evidence = append(r.Evidence, coord.Ev("kured releases by", at.UTC().Format(time.RFC3339)+", from "+from))
	r.Reason = fmt.Sprintf("held by %s, which rebooted %s ago; kured may still release it on its own until %s (its first tick after its pod starts, then --lock-release-delay %s), counted from %s",
		name, model.HumanDuration(h.Now.Sub(h.RebootedAt)), at.UTC().Format(time.RFC3339), d, from)
	return r
}
