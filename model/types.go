package model

import (
	"math"
	"sort"
	"strings"
	"time"
)

// Phase is where a node stands in a reboot cycle (DESIGN §4).
type Phase string

// The node phases. Their string values are a public interface (snapshot JSON).
const (
	PhaseIdle       Phase = "idle"
	PhasePending    Phase = "pending"
	PhaseDraining   Phase = "draining"
	PhaseRebooting  Phase = "rebooting"
	PhaseRecovering Phase = "recovering"
	PhaseDone       Phase = "done"
	PhaseDown       Phase = "down"
	PhaseUnknown    Phase = "unknown"
)

// AllPhases lists every phase in display order.
var AllPhases = []Phase{PhaseIdle, PhasePending, PhaseDraining, PhaseRebooting, PhaseRecovering, PhaseDone, PhaseDown, PhaseUnknown}

// CycleSteps is the per-node progress of a reboot cycle, in order.
var CycleSteps = []Phase{PhasePending, PhaseDraining, PhaseRebooting, PhaseRecovering, PhaseDone}

// InCycle reports whether a node in this phase holds or is working through the lock.
func (p Phase) InCycle() bool {
	return p == PhaseDraining || p == PhaseRebooting || p == PhaseRecovering
}

// Step returns the index of p in CycleSteps, or -1.
func (p Phase) Step() int {
	for i, s := range CycleSteps {
		if s == p {
			return i
		}
	}
	return -1
}

// Verdict is the lock engine's judgement of one lock (DESIGN §5).
type Verdict string

// The lock verdicts. Their string values are a public interface.
const (
	VerdictFree      Verdict = "free"
	VerdictHeld      Verdict = "held"
	VerdictGhost     Verdict = "ghost"
	VerdictOrphaned  Verdict = "orphaned"
	VerdictExpired   Verdict = "expired"
	VerdictAmbiguous Verdict = "ambiguous"
	VerdictUnknown   Verdict = "unknown"
)

// NeedsAttention reports whether a lock with this verdict stalls the fleet
// and makes --snapshot and watch exit 2.
func (v Verdict) NeedsAttention() bool {
	return v == VerdictGhost || v == VerdictOrphaned || v == VerdictExpired || v == VerdictAmbiguous
}

// LockKind names the reboot coordinator that owns a lock.
type LockKind string

// The lock kinds.
const (
	LockKured     LockKind = "kured"
	LockFleetlock LockKind = "fleetlock"
)

// Action is something an operator or the agent may do to a lock.
type Action string

// The lock actions.
const (
	ActionRelease Action = "release"
	ActionReap    Action = "reap"
	// ActionUncordon acts on a node, not a lock: it uncordons a node that
	// is done · still cordoned (its coordinator did not uncordon it).
	ActionUncordon Action = "uncordon"
)

// Outcome is how an action ended. Its values are a public interface: the
// agent's heartbeat and rebootwatch_actions_total{result}, `release`/`reap
// -o json`, the timeline.
type Outcome string

// Action outcomes.
const (
	OutcomeDone      Outcome = "done"
	OutcomeDryRun    Outcome = "dry-run" // the write was shown, not made
	OutcomeRefused   Outcome = "refused" // a gate or the operator said no; nothing written
	OutcomeConflict  Outcome = "conflict"
	OutcomeForbidden Outcome = "forbidden"
	OutcomeError     Outcome = "error"
	// OutcomeSkipped: the agent chose not to act this iteration (not the
	// leader, data not ready, policy).
	OutcomeSkipped Outcome = "skipped"
)

// Succeeded reports whether the write was made or, in a dry run, would be.
func (o Outcome) Succeeded() bool { return o == OutcomeDone || o == OutcomeDryRun }

// SourceName identifies one input of the model.
type SourceName string

// The sources, in display order.
const (
	SourceNodes      SourceName = "nodes"
	SourceKured      SourceName = "kured"
	SourceFleetlock  SourceName = "fleetlock"
	SourceLonghorn   SourceName = "longhorn"
	SourcePrometheus SourceName = "prometheus"
	// SourcePDBs is the PodDisruptionBudgets, watched cluster-wide.
	SourcePDBs SourceName = "pdbs"
	// SourcePods is the pods of cordoned nodes and the pods matching
	// kured's --blocking-pod-selector (never a cluster-wide pod watch).
	SourcePods SourceName = "pods"
)

// AllSources lists the sources in display order.
var AllSources = []SourceName{SourceNodes, SourceKured, SourceFleetlock, SourceLonghorn, SourcePrometheus, SourcePDBs, SourcePods}

// SourceStatus is the health of one source.
type SourceStatus string

// The source statuses. Their string values are a public interface.
const (
	StatusOK           SourceStatus = "ok"
	StatusStale        SourceStatus = "stale"
	StatusError        SourceStatus = "error"
	StatusForbidden    SourceStatus = "forbidden"
	StatusNotInstalled SourceStatus = "not-installed"
	StatusDisabled     SourceStatus = "disabled"
)

// SourceHealth is what a source last said about itself.
type SourceHealth struct {
	Name    SourceName
	Status  SourceStatus
	Message string
	// LastSync is when the source last synced successfully (zero: never).
	LastSync time.Time
	// Interval is how often the source expects to sync; 0 for watches.
	Interval time.Duration
}

// Usable reports whether the data of this source may be trusted.
func (h SourceHealth) Usable() bool { return h.Status == StatusOK }

// Condition is one node condition.
type Condition struct {
	Type           string
	Status         string // "True", "False", "Unknown"
	Reason         string
	Message        string
	LastTransition time.Time
}

// Node is the part of a Kubernetes Node that rebootwatch needs.
type Node struct {
	Name          string
	UID           string
	Roles         []string
	Unschedulable bool
	Conditions    []Condition
	BootID        string
	MachineID     string
	OSImage       string
	KernelVersion string
	// Annotations holds only the node annotations the coordinator kinds declare (coord.Capabilities.NodeAnnotations).
	Annotations map[string]string
	Created     time.Time
	// UnschedulableSetAt and UnschedulableSetBy are the time and manager of
	// the newest managedFields entry that owns spec.unschedulable: when it
	// was last written (a cordon; or an uncordon that wrote false
	// explicitly, as a server-side apply does). An uncordon that removes
	// the field, as kubectl and kured do, leaves no entry: zero then.
	UnschedulableSetAt time.Time
	UnschedulableSetBy string
}

// Condition returns the condition of that type, if the node has it.
func (n *Node) Condition(t string) (Condition, bool) {
	for _, c := range n.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return Condition{}, false
}

// Ready returns whether the node is Ready, whether that is known, and since when.
func (n *Node) Ready() (ready, known bool, since time.Time) {
	c, ok := n.Condition("Ready")
	if !ok || c.Status == "" {
		return false, false, time.Time{}
	}
	return c.Status == "True", c.Status == "True" || c.Status == "False" || c.Status == "Unknown", c.LastTransition
}

// Role returns a short role for display: "control-plane" or the first role, else "worker".
func (n *Node) Role() string {
	for _, r := range n.Roles {
		if r == "control-plane" || r == "master" {
			return "control-plane"
		}
	}
	if len(n.Roles) > 0 {
		return n.Roles[0]
	}
	return "worker"
}

// OS is an OS image and kernel pair.
type OS struct {
	Image  string `json:"image"`
	Kernel string `json:"kernel"`
}

// String renders the pair for humans.
func (o OS) String() string {
	switch {
	case o.Image == "" && o.Kernel == "":
		return ""
	case o.Kernel == "":
		return o.Image
	case o.Image == "":
		return o.Kernel
	}
	return o.Image + " (" + o.Kernel + ")"
}

// LockRef names one lock object.
type LockRef struct {
	Kind      LockKind
	Namespace string
	Name      string
}

// String renders kind:namespace/name.
func (r LockRef) String() string { return string(r.Kind) + ":" + r.Namespace + "/" + r.Name }

// LockObject is a lock as read from the API. What a lock looks like depends
// on its kind (kured's DaemonSet annotation, a fleetlock Lease, ...): that
// shape is Spec, made by the kind's source and read only by the kind's driver
// in internal/lock. The model itself never looks inside it.
type LockObject struct {
	LockRef
	UID             string
	ResourceVersion string
	// Spec is the kind's own shape (a pointer to the driver's type). nil
	// means the source could not say anything about the lock's content.
	Spec LockSpec
}

// LockSpec is one lock kind's shape of a lock object.
type LockSpec interface {
	// LockKind names the kind this shape belongs to.
	LockKind() LockKind
}

// Evidence is one fact a verdict rests on.
type Evidence struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// LockStatus is the lock engine's judgement of one lock (one per kured
// multi-lock entry). It is filled by the Judge the wiring injects.
type LockStatus struct {
	LockRef
	UID             string
	ResourceVersion string
	// Holder is the raw holder id ("" when free).
	Holder string
	// Entry is the position of this holder's entry in the lock (kured
	// multi-locks can list the same node twice: each entry is judged and
	// acted on by its own position). 0 for single locks.
	Entry int
	// Duplicate is true when another entry of the same lock names the same
	// holder.
	Duplicate bool
	// HolderNodes are the nodes the holder maps to: none (ghost or free),
	// one, or several (ambiguous).
	HolderNodes []string
	Verdict     Verdict
	Reason      string
	Evidence    []Evidence
	// Created is when the lock was taken, when known.
	Created time.Time
	// TTL is kured's lock TTL (0 = never expires).
	TTL time.Duration
	// Capacity is how many holders the lock lets through at once, as its
	// driver read it (coord.Parsed.Capacity); 0 when not known.
	Capacity int
	// Actions are the actions the engine would allow now (verdict and gates).
	Actions []Action
	// Pending is the action the verdict calls for (reap for a ghost or an
	// expired holder, release for an orphan) while its gates do not all
	// pass, with the gates that fail: from the same judgement as Actions,
	// so what is offered and what waits never disagree. Nil otherwise.
	Pending *PendingAction
	// Settings are the coordinator's own settings as its objects give them
	// (kured's flags from its DaemonSet), for the lock's detail.
	Settings []Evidence
	// ReleaseAt is set while the holder has rebooted and its coordinator
	// waits out its own release delay (kured's --lock-release-delay): when
	// it should release the lock by itself.
	ReleaseAt time.Time
	// Stalled is set when the holder rebooted and is Ready, but its
	// coordinator never finished its cycle on it (kured's pod did not come
	// back to uncordon it and release): the lock is orphaned, and the
	// holder itself is what stops the fleet.
	Stalled bool
	// Warning is a problem of the lock object itself, whatever the
	// entries' verdicts (a kured multi-lock listing more holders than its
	// maxOwners): Attention reports it once per lock.
	Warning string
}

// PendingAction is an action a lock's verdict calls for that its gates
// refuse now.
type PendingAction struct {
	Action Action
	// Failed are the gates that fail: Key is the gate's name, Value why.
	Failed []Evidence
}

// String says what the action waits for: "reap waits for other-nodes
// (other nodes are not steady: …)".
func (p PendingAction) String() string {
	var parts []string
	for _, g := range p.Failed {
		parts = append(parts, g.Key+" ("+g.Value+")")
	}
	return string(p.Action) + " waits for " + strings.Join(parts, ", ")
}

// Gates names the failing gates: "other-nodes, volumes".
func (p PendingAction) Gates() string {
	var names []string
	for _, g := range p.Failed {
		names = append(names, g.Key)
	}
	return strings.Join(names, ", ")
}

// HolderNode returns the one node the holder maps to, or "".
func (s LockStatus) HolderNode() string {
	if len(s.HolderNodes) == 1 && s.Verdict != VerdictAmbiguous {
		return s.HolderNodes[0]
	}
	return ""
}

// HeldFor is how long the lock has been held, when known.
func (s LockStatus) HeldFor(now time.Time) (time.Duration, bool) {
	if s.Holder == "" || s.Created.IsZero() {
		return 0, false
	}
	d := now.Sub(s.Created)
	if d < 0 {
		d = 0
	}
	if d == math.MaxInt64 {
		// Longer ago than a Duration holds (a created in year 0001): no
		// figure of it is true.
		return 0, false
	}
	return d, true
}

// Robustness is a Longhorn volume's status.robustness.
type Robustness string

// Longhorn robustness values.
const (
	RobustnessHealthy  Robustness = "healthy"
	RobustnessDegraded Robustness = "degraded"
	RobustnessFaulted  Robustness = "faulted"
	RobustnessUnknown  Robustness = "unknown"
)

// Volume is the part of a Longhorn Volume rebootwatch needs.
type Volume struct {
	Namespace  string
	Name       string
	Robustness Robustness
	State      string
	Replicas   int
	// Node is the node the volume is attached to ("" when detached).
	Node string
}

// Key returns namespace/name.
func (v *Volume) Key() string { return v.Namespace + "/" + v.Name }

// NormalRobustness maps any string to one of the four known values.
func NormalRobustness(s string) Robustness {
	switch Robustness(strings.ToLower(s)) {
	case RobustnessHealthy:
		return RobustnessHealthy
	case RobustnessDegraded:
		return RobustnessDegraded
	case RobustnessFaulted:
		return RobustnessFaulted
	}
	return RobustnessUnknown
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
