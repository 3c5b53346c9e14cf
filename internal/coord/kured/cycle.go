package kured

import (
	"fmt"
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

// This file is kured's release sequence after a holder's reboot, as
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
	FirstTickEarliest = 30 * time.Second
	FirstTickLatest   = 90 * time.Second
)

// PodView is what the pods source shows of kured's own pod on a node.
type PodView struct {
	Known bool       // the node's pods are read
	Why   string     // why they are not, when !Known
	Pod   *model.Pod // kured's pod on the node; nil: there is none
}

// Alive reports whether kured's process runs on the node now.
func (v PodView) Alive() bool {
	p := v.Pod
	return p != nil && p.Phase == model.PodRunning && p.Containers.Running && p.Deleting.IsZero()
}

// Dead reports whether kured's pod is known not to run: missing, waiting
// (CrashLoopBackOff, image pull) or finished.
func (v PodView) Dead() bool { return v.Known && !v.Alive() }

// StartedAt is when kured's current process started, zero when unknown.
func (v PodView) StartedAt() time.Time {
	if !v.Alive() {
		return time.Time{}
	}
	return v.Pod.Containers.StartedAt
}

// Describe says what is seen of kured's pod on node, for the evidence.
func (v PodView) Describe(node string) string {
	switch {
	case !v.Known:
		return "unknown: " + v.Why
	case v.Pod == nil:
		return "missing: no kured pod on " + node
	}
	return v.Pod.Key() + ": " + v.Pod.Describe()
}

// Short is Describe in a few words, for a reason.
func (v PodView) Short(node string) string {
	switch {
	case !v.Known:
		return "kured's pod on " + node + " cannot be seen (" + v.Why + ")"
	case v.Pod == nil:
		return "kured's pod on " + node + " is missing"
	}
	c := v.Pod.Containers
	var what string
	switch {
	case c.Waiting != "":
		what = c.Waiting
	case v.Alive() && v.Pod.Ready:
		what = "Running and Ready"
	case v.Alive():
		what = "Running, not Ready"
	default:
		what = v.Pod.Phase + ", not running"
	}
	if c.Restarts > 0 {
		what += fmt.Sprintf(", %d restart(s)", c.Restarts)
	}
	if !c.LastExit.IsZero() {
		what += ", last exit " + c.LastExit.UTC().Format(time.RFC3339)
	}
	return "kured's pod " + v.Pod.Key() + " is " + what
}

// PodOn finds kured's own pod on node: the pod of kured's DaemonSet
// (the lock object ref) bound to it.
func PodOn(c *model.Cluster, ref model.LockRef, node string) PodView {
	pods, known := c.NodePods(node)
	if !known {
		why := "the pods of " + node + " are not watched"
		if h, ok := c.Source(model.SourcePods); !ok {
			why = "pods not read yet"
		} else if !h.Usable() {
			why = "pods " + string(h.Status) + model.Aside(h.Message)
		}
		return PodView{Why: why}
	}
	var found *model.Pod
	for i := range pods {
		p := &pods[i]
		if p.Namespace != ref.Namespace || p.OwnerKind != "DaemonSet" || p.OwnerName != ref.Name {
			continue
		}
		// Of several (one terminating, its replacement), the one that runs.
		if found == nil || (!PodView{Known: true, Pod: found}.Alive() && (PodView{Known: true, Pod: p}).Alive()) {
			found = p
		}
	}
	if h, ok := c.Source(model.SourcePods); ok && !h.Usable() {
		return PodView{Why: "pods " + string(h.Status) + model.Aside(h.Message)}
	}
	return PodView{Known: true, Pod: found}
}

// Gone judges a rebooted, Ready holder whose lock kured still holds, from
// kured's own pod on it (issue 33 §3): when that pod is read and is known
// not to run (missing, waiting, finished — never a pod that could not be
// seen), nothing on the node releases the lock, and kured, had it run,
// would have released it by the reboot + its first tick (90 s) +
// --lock-release-delay. Past that bound plus the orphan grace (and Ready
// for the grace), the lock is orphaned: ok is true, with the reason and the
// cycle's evidence. An uncordon by hand leaves no trace of when it was
// done, and needs none: this rests on the reboot, the lock and the pod.
func Gone(pod PodView, node, rebootWhy string, rebootedAt, readySince, now time.Time, delay, grace time.Duration) (reason, cycle string, ok bool) {
	if !pod.Dead() {
		return "", "", false
	}
	deadline := rebootedAt.Add(FirstTickLatest + delay + grace)
	if r := readySince.Add(grace); r.After(deadline) {
		deadline = r
	}
	cycle = fmt.Sprintf("kured releases at its first tick (30–90 s after its pod starts) after --lock-release-delay %s; its pod does not run, and had it run since the reboot at %s the lock would be free by %s (+ the orphan grace %s)",
		delay, rebootedAt.UTC().Format(time.RFC3339), rebootedAt.Add(FirstTickLatest+delay).UTC().Format(time.RFC3339), model.HumanDuration(grace))
	if now.Before(deadline) {
		return "", cycle, false
	}
	return fmt.Sprintf("kured on %s is not running %s after the reboot (%s) and the lock is still held: nothing on %s will release it; %s",
		node, model.HumanDuration(now.Sub(rebootedAt)), rebootWhy, node, pod.Short(node)), cycle, true
}
