// Package coord is what every reboot coordinator package declares about its
// kind, and the shapes they share: a kind's capabilities (how many nodes it
// lets through at once and where that is read, whether nodes waiting for it
// are visible, the node annotations and labels it needs, the RBAC rules it
// reads with, the blockers it can name and the actions it allows), its slots
// (the nodes it lets through now, with or without one lock object), each
// node's place in its cycle, and its blockers. For kinds whose slots are
// one lock object it also declares the lock-object driver contract the lock
// engine judges and writes through (lockobject.go: LockDriver, Parsed,
// Entry, Write, Applied and their errors; holder.go: Index, Mapping).
//
// Each coordinator lives in its own package under internal/coord (suc:
// Rancher's system-upgrade-controller; flatcar: the Flatcar Linux Update
// Operator), holding its declared types, its parse, its judging as pure
// functions, its one-shot read, and a …test subpackage of fixtures that write
// objects as the coordinator writes them. What differs between kinds is a
// Capabilities value, never a kind check elsewhere.
//
// Each kind also has a demo scenario hook (Demoer, demo.go): the story
// `rebootwatch --demo=<kind>` plays in the embedded demo cluster.
//
// It must not do I/O (it names the clients a kind reads with; the reads are
// in each kind's source.go), import the lock engine, a source or the TUI (the engine
// and the sources import the coordinator packages, never the other way), or
// start goroutines.
package coord

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/model"
)

// SlotModel says where a kind's slots (the nodes it lets through at once)
// are read from.
type SlotModel string

// The slot models.
const (
	// SlotsLockObject: one lock object names its holders (kured's DaemonSet
	// annotation, fleetlock's Lease).
	SlotsLockObject SlotModel = "lock-object"
	// SlotsObjectStatus: an object of the coordinator lists the nodes it
	// applies to now (system-upgrade-controller's Plan status.applying[],
	// bounded by spec.concurrency), one such object per plan.
	SlotsObjectStatus SlotModel = "object-status"
	// SlotsNodeAnnotations: no lock object; the slots are computed from
	// every node's annotations and labels (the Flatcar update operator).
	SlotsNodeAnnotations SlotModel = "node-annotations"
)

// Capabilities is what a coordinator kind declares about itself: every
// difference between kinds that the engine, the sources, the RBAC render
// and the front ends need, so that none of them checks a kind by name.
type Capabilities struct {
	Kind   model.LockKind
	Source model.SourceName
	// Slots is where the kind's slots are read from.
	Slots SlotModel
	// DefaultCapacity is how many nodes the coordinator lets through at
	// once when nothing says otherwise (0: read per object, as a Plan's
	// spec.concurrency).
	DefaultCapacity int
	// CapacityFrom says, for humans, where the capacity is read.
	CapacityFrom string
	// WaitersVisible: nodes waiting for a slot can be told from the API
	// (a node whose plan label is not the latest hash; a node annotated
	// reboot-needed), not only the holders.
	WaitersVisible bool
	// NodeAnnotations and NodeLabels are the node keys the kind reads (an
	// entry ending in "/" is a prefix: every key under it). The node
	// decoders keep these.
	NodeAnnotations []string
	NodeLabels      []string
	// RBAC is the least the agent needs to read this kind's objects (the
	// nodes and the actions' own writes are the engine's, not the kind's).
	RBAC []rbacv1.PolicyRule
	// Blockers are the blocker kinds this kind can name.
	Blockers []model.BlockerKind
	// Actions are the actions the engine may offer for this kind (always
	// behind the same gates and dialog as every action).
	Actions []model.Action
	// Writes names what of the coordinator's own the engine ever writes
	// ("" for nothing: the kind's objects are read only).
	Writes string
	// Uncordons says, in the coordinator's words, when the coordinator
	// itself uncordons a node it cordoned: the engine's uncordon write
	// says it does what the coordinator would have done ("as <Uncordons>").
	Uncordons string
}

// Driver is one coordinator kind as the coordinator packages provide it.
type Driver interface {
	Capabilities() Capabilities
}

// Slot is one node the coordinator lets through now.
type Slot struct {
	// Holder is the id as the coordinator writes it (a Plan's applying[]
	// entry is a hostname; Flatcar's is the Node name itself).
	Holder string
	// Node is the node Holder maps to; "" when it maps to none (a ghost).
	Node string
	// Owner names the object the slot belongs to ("plan ns/name"; "" for a
	// kind without one).
	Owner string
	// Since is when the node took the slot, when known.
	Since time.Time
	// Evidence is what the slot was read from.
	Evidence []model.Evidence
}

// Slots is a kind's slots (for SUC, one Plan's).
type Slots struct {
	// Known is false when the slots cannot be told (the objects they are
	// read from are unread, stale or malformed): Unknown says why. Unknown
	// is never "free".
	Known   bool
	Unknown string
	// Capacity is how many nodes may hold a slot at once.
	Capacity int
	Held     []Slot
}

// Free is how many slots are free; ok is false when that is not known.
func (s Slots) Free() (n int, ok bool) {
	if !s.Known {
		return 0, false
	}
	n = s.Capacity - len(s.Held)
	if n < 0 {
		n = 0
	}
	return n, true
}

// NodeState is one node's place in a coordinator's cycle.
type NodeState struct {
	Node string
	// Phase is the node's phase in DESIGN §4's terms.
	Phase model.Phase
	// Step is the coordinator's own word for where the node is ("waiting
	// for a slot", "job running", "job failed", "after-reboot check").
	Step string
	// Cordoned: the coordinator (or its job) left the node unschedulable.
	Cordoned bool
	// Evidence is what the step was read from.
	Evidence []model.Evidence
}

// Ev is one piece of evidence.
func Ev(k, v string) model.Evidence { return model.Evidence{Key: k, Value: v} }

// Ready is a node's Ready condition as the coordinator packages read it.
type Ready struct {
	// Status is "True", "False", "Unknown", or "" when absent.
	Status string
	Since  time.Time
	Reason string
}

// Known reports whether Ready was read.
func (r Ready) Known() bool { return r.Status != "" }

// True reports whether the node is Ready.
func (r Ready) True() bool { return r.Status == "True" }

// Node is the part of a Node the coordinator packages read: more than
// model.Node keeps (every label and annotation of the kind's keys, and who
// last wrote them).
type Node struct {
	Name, UID     string
	Labels        map[string]string
	Annotations   map[string]string
	Unschedulable bool
	// UnschedulableSetAt/By are the time and manager of the managedFields
	// entry owning spec.unschedulable (zero when none owns it), and
	// UnschedulableSetOp its operation ("Update" or "Apply").
	UnschedulableSetAt time.Time
	UnschedulableSetBy string
	UnschedulableSetOp string
	Ready              Ready
	BootID             string
	// Writes maps each annotation or label key the kind asked for
	// ("annotation:<key>", "label:<key>") to the managedFields entry that
	// owns it: who last wrote it and when that manager last wrote the node.
	Writes map[string]FieldWrite

	// UnschedulableOthers are the other managedFields entries that own
	// spec.unschedulable too ("manager (operation)"): an Apply of the same
	// value is recorded beside the writer it agrees with, so the cordon
	// is theirs as well.
	UnschedulableOthers []string
}

// FieldWrite is one managedFields entry, as far as it is read.
type FieldWrite struct {
	Manager string
	At      time.Time
}

// NodeFrom reads a Node; keys are the annotation and label keys whose
// writers are kept in Writes (prefix "annotation:" or "label:").
func NodeFrom(n *corev1.Node, keys []string) Node {
	out := Node{Name: n.Name, UID: string(n.UID), Labels: n.Labels, Annotations: n.Annotations,
		Unschedulable: n.Spec.Unschedulable, BootID: n.Status.NodeInfo.BootID}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Ready = Ready{Status: string(c.Status), Since: c.LastTransitionTime.Time, Reason: c.Reason}
		}
	}
	for _, e := range n.ManagedFields {
		if e.FieldsV1 == nil || e.Time == nil {
			continue
		}
		var f map[string]any
		if json.Unmarshal(e.FieldsV1.GetRawBytes(), &f) != nil {
			continue
		}
		w := FieldWrite{Manager: e.Manager, At: e.Time.Time}
		if owns(f, "f:spec", "f:unschedulable") {
			if w.At.After(out.UnschedulableSetAt) {
				if out.UnschedulableSetBy != "" {
					out.UnschedulableOthers = append(out.UnschedulableOthers, out.UnschedulableSetBy+" ("+out.UnschedulableSetOp+")")
				}
				out.UnschedulableSetAt, out.UnschedulableSetBy, out.UnschedulableSetOp = w.At, w.Manager, string(e.Operation)
			} else {
				out.UnschedulableOthers = append(out.UnschedulableOthers, e.Manager+" ("+string(e.Operation)+")")
			}
		}
		for _, k := range keys {
			var ok bool
			switch {
			case strings.HasPrefix(k, "annotation:"):
				ok = owns(f, "f:metadata", "f:annotations", "f:"+strings.TrimPrefix(k, "annotation:"))
			case strings.HasPrefix(k, "label:"):
				ok = owns(f, "f:metadata", "f:labels", "f:"+strings.TrimPrefix(k, "label:"))
			}
			if ok && w.At.After(out.Writes[k].At) {
				if out.Writes == nil {
					out.Writes = map[string]FieldWrite{}
				}
				out.Writes[k] = w
			}
		}
	}
	return out
}

func owns(f map[string]any, path ...string) bool {
	cur := f
	for _, p := range path {
		next, ok := cur[p].(map[string]any)
		if !ok {
			return false
		}
		cur = next
	}
	return true
}

// Merge adds a coordinator's blockers to those the lock engine explained:
// a node's go after its own in precedence order, the fleet-wide ones to
// General; when nothing stopped the fleet, the first stalling one added
// (a node's before the fleet-wide) becomes the fleet's blocker, with how
// many other nodes have a stalling one. A coordinator's blocker of a node
// replaces the engine's of the same kind for that node (the engine's
// generic reading of a draining node, say, beside the kind's own that
// knows when its job started): one node, one drain blocker.
func Merge(b model.Blockers, extra []model.Blocker) model.Blockers {
	if len(extra) == 0 {
		return b
	}
	own := map[string]bool{}
	for _, x := range extra {
		if x.Node != "" {
			own[x.Node+"\x00"+string(x.Kind)] = true
		}
	}
	out := model.Blockers{Fleet: b.Fleet, General: append([]model.Blocker{}, b.General...), Nodes: map[string][]model.Blocker{}}
	for n, bs := range b.Nodes {
		for _, x := range bs {
			if !own[n+"\x00"+string(x.Kind)] {
				out.Nodes[n] = append(out.Nodes[n], x)
			}
		}
	}
	if out.Fleet != nil && out.Fleet.Node != "" && own[out.Fleet.Node+"\x00"+string(out.Fleet.Kind)] {
		out.Fleet = nil
	}
	var first *model.Blocker
	stalled := map[string]bool{}
	for n, bs := range b.Nodes {
		for _, x := range bs {
			if x.Stalls {
				stalled[n] = true
			}
		}
	}
	for i := range extra {
		x := extra[i]
		if x.Node == "" {
			out.General = append(out.General, x)
		} else {
			out.Nodes[x.Node] = append(out.Nodes[x.Node], x)
			if x.Stalls {
				stalled[x.Node] = true
			}
		}
		if x.Stalls && (first == nil || (first.Node == "" && x.Node != "")) {
			first = &extra[i]
		}
	}
	if out.Fleet == nil && first != nil {
		others := len(stalled)
		if first.Node != "" {
			others--
		}
		out.Fleet = &model.FleetBlocker{Blocker: *first, Others: others}
	}
	return out
}

// Clients are what a kind reads its objects with, and the names the user
// gave (a kind's own settings: "suc-namespace", "flatcar-operator").
type Clients struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	Names   map[string]string
	// Drain, when set, reads the pods on these nodes and every
	// PodDisruptionBudget as the engine's sources read them, for a kind's
	// drain blocker; unread says why they could not be read (a node absent
	// from pods has unread pods). nil: pods are not read.
	Drain func(ctx context.Context, nodes []string) (pods map[string][]model.Pod, pdbs []model.PDB, unread string)
}

// Observation is one kind read once and judged.
type Observation struct {
	// Installed is false when the coordinator is not found in the cluster:
	// it then adds nothing.
	Installed bool
	// Unknown says why the kind could not be judged ("" when it was).
	Unknown  string
	Blockers []model.Blocker
	// Uncordon lists the nodes the kind allows the uncordon action for:
	// the newest cordon is provably the coordinator's own, for the cycle
	// that left it.
	Uncordon []string
	// NotOwned maps a cordoned node in the kind's cycle whose cordon is not
	// provably the coordinator's to why (whose it is: manager and time, or
	// which read is missing): the uncordon is refused, saying so.
	NotOwned map[string]string
	// Judged is true when the kind's state was read and judged: Slots and
	// Nodes are then its whole picture (empty: no slot held, no node in
	// its cycle); false leaves the model's last picture of it in place.
	Judged bool
	// Slots are the kind's slot groups and Nodes its nodes' places in its
	// cycle, in the model's terms: what the model derives every node's
	// phase, progress and timeline from (model.CoordinatorRead).
	Slots []model.SlotGroup
	Nodes []model.NodeCycle
}

// Group is a kind's slots as one model.SlotGroup of owner (the object
// whose slots they are: "system-upgrade/agent-plan"; "" for none); step
// names each holder's place in the cycle ("job failed"), may be nil.
func (s Slots) Group(kind model.LockKind, owner string, step func(node string) string) model.SlotGroup {
	g := model.SlotGroup{Kind: kind, Owner: owner, Known: s.Known, Unknown: s.Unknown, Capacity: s.Capacity}
	for _, h := range s.Held {
		mh := model.SlotHolder{Holder: h.Holder, Node: h.Node, Since: h.Since}
		if step != nil && h.Node != "" {
			mh.Step = step(h.Node)
		}
		g.Holders = append(g.Holders, mh)
	}
	return g
}

// Cycle is a node's state as a model.NodeCycle of kind and owner.
func (n NodeState) Cycle(kind model.LockKind, owner string) model.NodeCycle {
	return model.NodeCycle{Kind: kind, Owner: owner, Node: n.Node, Phase: n.Phase, Step: n.Step, Cordoned: n.Cordoned}
}

// NodeMarker is a lock-object kind that marks the nodes it reboots on
// the nodes themselves (kured's reboot-in-progress annotation with
// --annotate-nodes): NodeMarks reads a node's marks as model.NodeCycles (a
// pending mark: it wants to reboot the node; a done mark with
// LeftCordoned: the node rebooted after the mark). Pure: the node's
// annotations and Ready condition only.
type NodeMarker interface {
	NodeMarks(n *model.Node) []model.NodeCycle
}

// Observer is a driver that can read its kind once (its source's one-shot
// read) and judge it.
type Observer interface {
	Observe(ctx context.Context, c Clients, now time.Time) Observation
}
