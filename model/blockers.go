package model

import (
	"sort"
	"time"
)

// BlockerKind names why a node (or the fleet) waits: the answer to "why is
// it stuck?". The string values are a public interface (snapshot JSON
// `blockers[].kind`, the agent's rebootwatch_fleet_blocked{kind} label).
type BlockerKind string

// The blocker kinds, in precedence order (AllBlockerKinds): for one node,
// the first kind listed is what it waits for first.
const (
	// BlockerCordon: the node finished its cycle but is still cordoned
	// (done · still cordoned): nobody will uncordon it.
	BlockerCordon BlockerKind = "stuck-cordon"
	// BlockerSlowReboot: NotReady in a cycle for longer than a bound
	// relative to this fleet's median reboot.
	BlockerSlowReboot BlockerKind = "slow-reboot"
	// BlockerDrain: draining for longer than a bound with pods whose
	// PodDisruptionBudget allows 0 disruptions (or why that cannot be told).
	BlockerDrain BlockerKind = "drain"
	// BlockerReleaseDelay: rebooted, waiting for kured's --lock-release-delay.
	BlockerReleaseDelay BlockerKind = "release-delay"
	// BlockerWindow: outside kured's reboot window.
	BlockerWindow BlockerKind = "reboot-window"
	// BlockerAlert: firing Prometheus alerts match the blocking-alert filter.
	BlockerAlert BlockerKind = "blocking-alert"
	// BlockerPod: kured's --blocking-pod-selector matches pods on the node.
	BlockerPod BlockerKind = "blocking-pod"
	// BlockerLock: the reboot lock is held by another node (or a ghost).
	BlockerLock BlockerKind = "lock-held"
	// BlockerLonghorn: Longhorn volumes are degraded or rebuilding, so the
	// next node must not drain yet.
	BlockerLonghorn BlockerKind = "longhorn"
	// BlockerUnknown: whether nodes need a reboot is unknown (Prometheus not
	// configured, kured's metric absent): nothing to do, as far as can be told.
	BlockerUnknown BlockerKind = "reboot-required-unknown"
)

// AllBlockerKinds lists every blocker kind in precedence order.
var AllBlockerKinds = []BlockerKind{BlockerCordon, BlockerSlowReboot, BlockerDrain, BlockerReleaseDelay,
	BlockerWindow, BlockerAlert, BlockerPod, BlockerLock, BlockerLonghorn, BlockerUnknown}

// Rank is the kind's place in AllBlockerKinds (lower goes first), or
// len(AllBlockerKinds) for an unknown kind.
func (k BlockerKind) Rank() int {
	for i, x := range AllBlockerKinds {
		if x == k {
			return i
		}
	}
	return len(AllBlockerKinds)
}

// Blocker is one reason a node, or the fleet, does not progress.
type Blocker struct {
	Kind BlockerKind `json:"kind"`
	// Node is the waiting node; "" for a blocker of the fleet as a whole
	// (reboot-required unknown).
	Node string `json:"node,omitempty"`
	// Reason is one sentence for humans.
	Reason string `json:"reason"`
	// Short is the few words a table cell shows ("lock: worker-1
	// (orphaned)", "window: opens in 3h12m", "PDB shop/web").
	Short string `json:"-"`
	// Evidence is what the reason rests on.
	Evidence []Evidence `json:"evidence"`
	// Action is the rebootwatch action that clears it, if there is one
	// (release/reap of Lock, uncordon of Node).
	Action Action `json:"action,omitempty"`
	// Lock is the lock Action applies to (release, reap).
	Lock *LockRef `json:"-"`
	// Clears says, for humans, what clears it ("release it", "wait: opens
	// Sun 22:00 Europe/Berlin, in 3h12m", "delete or move the pod").
	Clears string `json:"clears,omitempty"`
	// Until is when it clears by itself, when known (window opening,
	// release delay over).
	Until time.Time `json:"-"`
	// Stalls is false for a blocker that is plain queueing behind progress
	// under way (the lock held by a node in a normal cycle): it does not
	// stop the fleet and never becomes the fleet's blocker.
	Stalls bool `json:"-"`
	// Attention, when set, lists the blocker under attention with this
	// severity: a coordinator kind's wedge (internal/coord), which has no
	// lock verdict of the model's to raise it.
	Attention Severity `json:"-"`
}

// FleetBlocker is what stops the fleet now: the first waiting node's first
// stalling blocker (in-cycle nodes first, then pending), with how many other
// nodes are blocked.
type FleetBlocker struct {
	Blocker
	// Others is how many other nodes have a stalling blocker.
	Others int
}

// Blockers is the blockers step's result for one cluster at one time.
type Blockers struct {
	// Nodes maps each waiting node to its blockers, in precedence order.
	// Nodes with none are absent.
	Nodes map[string][]Blocker
	// Fleet is the fleet's blocker, nil when nothing stops progress.
	Fleet *FleetBlocker
	// General are blockers of the fleet as a whole (not of one node).
	General []Blocker
}

// Explain computes the blockers of a cluster at now. The lock engine
// provides it (internal/lock: it reads kured's configuration); the model
// calls it in Recompute after phases and verdicts and only stores what it
// returns. It must not change the cluster.
type Explain func(c *Cluster, now time.Time) Blockers

// Blockers returns the blockers of the last Recompute (empty when no
// Explain is wired).
func (c *Cluster) Blockers() Blockers { return c.blockers }

// NodeBlockers returns a node's blockers, in precedence order.
func (c *Cluster) NodeBlockers(name string) []Blocker { return c.blockers.Nodes[name] }

// FleetBlocker returns what stops the fleet now, nil when nothing does.
func (c *Cluster) FleetBlocker() *FleetBlocker { return c.blockers.Fleet }

// all returns the general blockers, then each node's in node-name order.
func (b Blockers) all() []Blocker {
	out := append([]Blocker{}, b.General...)
	names := make([]string, 0, len(b.Nodes))
	for n := range b.Nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out = append(out, b.Nodes[n]...)
	}
	return out
}
