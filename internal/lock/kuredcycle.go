package lock

import (
	"fmt"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
)

// This file times kured's release sequence after a holder's reboot, as
// kured runs it (kubereboot/kured cmd/kured/main.go, rebootAsRequired, and
// pkg/daemonsetlock's Release):
//
//  1. kured's pod starts again on the node (its DaemonSet restarts it);
//  2. the release loop's first tick comes 30–90 s later: a 1-minute
//     delaytick, whose first tick is uniformly between d/2 and 3d/2. kured's
//     --period paces only the reboot-check loop that follows, never the
//     release;
//  3. holding the lock, kured uncordons the node unless the lock's
//     metadata.unschedulable is true (the node was cordoned before kured
//     took it); a failed uncordon is fatal: the pod restarts;
//  4. with --annotate-nodes and no reboot required any more, it removes the
//     node's weave.works/kured-reboot-in-progress mark;
//  5. Release sleeps --lock-release-delay, then removes the lock.
//
// A failure in 4 or 5 is retried at the next tick, a minute later.
//
// So kured can release on its own until its pod's start + 90 s + the delay
// (or the uncordon's time + the delay, when that is seen), and a holder whose
// kured pod never came back (crash-looping, missing) stays cordoned and
// keeps the lock: the commonest kured wedge.

// kured's release loop's first tick after its pod starts (delaytick.New
// with one minute).
const (
	kuredFirstTickEarliest = 30 * time.Second
	kuredFirstTickLatest   = 90 * time.Second
)

// kuredPodView is what the pods source shows of kured's own pod on a node.
type kuredPodView struct {
	known bool       // the node's pods are read
	why   string     // why they are not, when !known
	pod   *model.Pod // kured's pod on the node; nil: there is none
}

// alive reports whether kured's process runs on the node now.
func (v kuredPodView) alive() bool {
	p := v.pod
	return p != nil && p.Phase == model.PodRunning && p.Containers.Running && p.Deleting.IsZero()
}

// dead reports whether kured's pod is known not to run: missing, waiting
// (CrashLoopBackOff, image pull) or finished.
func (v kuredPodView) dead() bool { return v.known && !v.alive() }

// startedAt is when kured's current process started, zero when unknown.
func (v kuredPodView) startedAt() time.Time {
	if !v.alive() {
		return time.Time{}
	}
	return v.pod.Containers.StartedAt
}

// describe says what is seen of kured's pod on node, for the evidence.
func (v kuredPodView) describe(node string) string {
	switch {
	case !v.known:
		return "unknown: " + v.why
	case v.pod == nil:
		return "missing: no kured pod on " + node
	}
	return v.pod.Key() + ": " + v.pod.Describe()
}

// short is describe in a few words, for a reason.
func (v kuredPodView) short(node string) string {
	switch {
	case !v.known:
		return "kured's pod on " + node + " cannot be seen (" + v.why + ")"
	case v.pod == nil:
		return "kured's pod on " + node + " is missing"
	}
	c := v.pod.Containers
	var what string
	switch {
	case c.Waiting != "":
		what = c.Waiting
	case v.alive() && v.pod.Ready:
		what = "Running and Ready"
	case v.alive():
		what = "Running, not Ready"
	default:
		what = v.pod.Phase + ", not running"
	}
	if c.Restarts > 0 {
		what += fmt.Sprintf(", %d restart(s)", c.Restarts)
	}
	if !c.LastExit.IsZero() {
		what += ", last exit " + c.LastExit.UTC().Format(time.RFC3339)
	}
	return "kured's pod " + v.pod.Key() + " is " + what
}

// kuredPodOn finds kured's own pod on node: the pod of kured's DaemonSet
// (the lock object ref) bound to it.
func kuredPodOn(c *model.Cluster, ref model.LockRef, node string) kuredPodView {
	pods, known := c.NodePods(node)
	if !known {
		why := "the pods of " + node + " are not watched"
		if h, ok := c.Source(model.SourcePods); !ok {
			why = "pods not read yet"
		} else if !h.Usable() {
			why = "pods " + string(h.Status) + model.Aside(h.Message)
		}
		return kuredPodView{why: why}
	}
	var found *model.Pod
	for i := range pods {
		p := &pods[i]
		if p.Namespace != ref.Namespace || p.OwnerKind != "DaemonSet" || p.OwnerName != ref.Name {
			continue
		}
		// Of several (one terminating, its replacement), the one that runs.
		if found == nil || (!kuredPodView{known: true, pod: found}.alive() && (kuredPodView{known: true, pod: p}).alive()) {
			found = p
		}
	}
	if h, ok := c.Source(model.SourcePods); ok && !h.Usable() {
		return kuredPodView{why: "pods " + string(h.Status) + model.Aside(h.Message)}
	}
	return kuredPodView{known: true, pod: found}
}

// kuredMark is kured's --annotate-nodes mark that it removes right before
// its release delay.
const kuredMark = kured.MarkAnnotation

// releaseBy says until when kured, if it runs, may still release the lock
// of a rebooted holder on its own (its release delay counted from the
// latest of kured's own steps that can be seen), and which evidence that
// rests on.
func (e *Engine) releaseBy(j *judged, n *model.Node, pod kuredPodView, rebootedAt, now time.Time) (time.Time, string) {
	d := j.entry.ReleaseDelay
	at := rebootedAt.Add(kuredFirstTickLatest + d)
	from := "the reboot at " + rebootedAt.UTC().Format(time.RFC3339) + " + kured's first tick (at most 90 s) + the delay: no later step of kured's is seen"
	consider := func(t time.Time, why string) {
		if t.After(at) {
			at, from = t, why
		}
	}
	if s := pod.startedAt(); s.After(rebootedAt) {
		consider(s.Add(kuredFirstTickLatest+d), "kured's pod "+pod.pod.Key()+" started at "+s.UTC().Format(time.RFC3339)+
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
	if _, marked := n.Annotations[kuredMark]; marked && pod.alive() && now.Before(pod.startedAt().Add(kuredFirstTickLatest+d)) {
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
