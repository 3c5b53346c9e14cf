package model

import (
	"time"
)

// SnapshotSchema is the schema id of the snapshot document.
const SnapshotSchema = "rebootwatch.snapshot/v1"

// Snapshot is the `--snapshot -o json` document (DESIGN §7). Its field names
// and enum values are a public interface: change them only with the schema.
type Snapshot struct {
	Schema      string           `json:"schema"`
	GeneratedAt string           `json:"generatedAt"`
	Context     string           `json:"context"`
	Sources     []SnapshotSource `json:"sources"`
	Fleet       SnapshotFleet    `json:"fleet"`
	Locks       []SnapshotLock   `json:"locks"`
	// Slots (additive to v1) are every coordinator kind's slot groups: a
	// lock object, a SUC Plan, FLUO's slot, with capacity and holders.
	Slots     []SnapshotSlots `json:"slots"`
	Nodes     []SnapshotNode  `json:"nodes"`
	Volumes   *VolumeSummary  `json:"volumes"`
	Attention []Attention     `json:"attention"`
	// Unread (additive to v1) lists the parts that were not read, so that
	// an empty "locks" or "fleet.blockers" there means unknown, not none.
	// Empty when everything was read.
	Unread []UnreadPart `json:"unread"`
	// ExitCode is the exit code the snapshot implies (0 nothing listed
	// under attention, 1 could not read, 2 needs attention). Added to v1:
	// with several clusters it is each cluster's own code.
	ExitCode int `json:"exitCode"`
}

// SnapshotSource is one entry of sources.
type SnapshotSource struct {
	Name    SourceName   `json:"name"`
	Status  SourceStatus `json:"status"`
	Message string       `json:"message"`
}

// SnapshotFleet is the fleet object.
type SnapshotFleet struct {
	Nodes    int           `json:"nodes"`
	Upgraded int           `json:"upgraded"`
	TargetOS string        `json:"targetOS"`
	Phases   map[Phase]int `json:"phases"`
	ETA      *string       `json:"eta"`
	// Families is the progress per OS family when the fleet runs several
	// (additive to rebootwatch.snapshot/v1; absent with one family).
	Families []SnapshotFamily `json:"families,omitempty"`
	// Blockers (additive to v1): first, when the fleet is blocked, the
	// blocker that stops it now (the first waiting node's, with "others":
	// how many other nodes are blocked); then the blockers of the fleet as
	// a whole (reboot-required unknown). Empty when nothing is in the way.
	Blockers []SnapshotBlocker `json:"blockers"`
}

// SnapshotBlocker is one blocker in the snapshot (additive to v1).
type SnapshotBlocker struct {
	Kind BlockerKind `json:"kind"`
	// Node is the waiting node; null for a blocker of the whole fleet.
	Node     *string    `json:"node"`
	Reason   string     `json:"reason"`
	Evidence []Evidence `json:"evidence"`
	// Action is the rebootwatch action that clears it, null when none.
	Action *Action `json:"action"`
	// Lock is the lock that action applies to ("kind:namespace/name").
	Lock *string `json:"lock,omitempty"`
	// Clears says, for humans, what clears it.
	Clears string `json:"clears"`
	// Until is when it clears by itself (window opening, release delay
	// over), RFC3339; null when it will not by itself.
	Until *string `json:"until"`
	// Stalls is false for plain queueing behind a node in a normal cycle.
	Stalls bool `json:"stalls"`
	// Others is set on the fleet's blocker only: how many other nodes are
	// blocked.
	Others *int `json:"others,omitempty"`
}

// SnapshotOf renders a blocker for the snapshot.
func SnapshotOf(b Blocker) SnapshotBlocker {
	sb := SnapshotBlocker{Kind: b.Kind, Reason: b.Reason, Evidence: append([]Evidence{}, b.Evidence...), Clears: b.Clears, Stalls: b.Stalls}
	if b.Node != "" {
		n := b.Node
		sb.Node = &n
	}
	if b.Action != "" {
		a := b.Action
		sb.Action = &a
	}
	if b.Lock != nil {
		l := b.Lock.String()
		sb.Lock = &l
	}
	if !b.Until.IsZero() {
		u := b.Until.UTC().Format(time.RFC3339)
		sb.Until = &u
	}
	return sb
}

// FleetBlockers is the snapshot's fleet.blockers: the fleet's blocker
// (with others) first, then the fleet-wide blockers not already it.
func (b Blockers) FleetBlockers() []SnapshotBlocker {
	out := []SnapshotBlocker{}
	if b.Fleet != nil {
		sb := SnapshotOf(b.Fleet.Blocker)
		o := b.Fleet.Others
		sb.Others = &o
		out = append(out, sb)
	}
	for _, g := range b.General {
		if b.Fleet != nil && b.Fleet.Node == "" && b.Fleet.Kind == g.Kind && b.Fleet.Reason == g.Reason {
			continue
		}
		out = append(out, SnapshotOf(g))
	}
	return out
}

// SnapshotFamily is one OS family's progress: its targetOS is the newest
// OS of that family; versions are never compared across families.
type SnapshotFamily struct {
	Family   string `json:"family"`
	Nodes    int    `json:"nodes"`
	Upgraded int    `json:"upgraded"`
	TargetOS string `json:"targetOS"`
}

// SnapshotLock is one entry of locks.
type SnapshotLock struct {
	Kind        LockKind `json:"kind"`
	Namespace   string   `json:"namespace"`
	Name        string   `json:"name"`
	Holder      string   `json:"holder"`
	HolderNode  *string  `json:"holderNode"`
	Verdict     Verdict  `json:"verdict"`
	Reason      string   `json:"reason"`
	HeldSeconds *int64   `json:"heldSeconds"`
	Actions     []Action `json:"actions"`
	// Pending is the action the verdict calls for while its gates refuse
	// it, with the failing gates (additive); absent otherwise.
	Pending *SnapshotPending `json:"pending,omitempty"`
	// Entry is the entry's position (0-based, for --entry) when the lock
	// lists this holder more than once (kured); absent otherwise. Additive.
	Entry *int `json:"entry,omitempty"`
}

// SnapshotSlots is one slot group (additive to v1).
type SnapshotSlots struct {
	Kind  LockKind `json:"kind"`
	Owner string   `json:"owner"`
	// Capacity is how many nodes may hold a slot at once; null when not
	// known.
	Capacity *int `json:"capacity"`
	// Known is false when the slots could not be read (Unknown says why):
	// an empty holders list is then unknown, not free.
	Known   bool                 `json:"known"`
	Unknown string               `json:"unknown,omitempty"`
	Holders []SnapshotSlotHolder `json:"holders"`
	// Over is true when more nodes hold its slots than its capacity.
	Over bool `json:"over"`
	// LockObject is true for a lock object's group (its entries are also
	// in locks).
	LockObject bool   `json:"lockObject"`
	Warning    string `json:"warning,omitempty"`
}

// SnapshotSlotHolder is one held slot.
type SnapshotSlotHolder struct {
	Holder string `json:"holder"`
	// Node is null when the holder maps to no node.
	Node  *string `json:"node"`
	Step  string  `json:"step"`
	Since *string `json:"since"`
}

// SnapshotSlotsOf renders the slot groups for the snapshot.
func SnapshotSlotsOf(gs []SlotGroup) []SnapshotSlots {
	out := []SnapshotSlots{}
	for _, g := range gs {
		sg := SnapshotSlots{Kind: g.Kind, Owner: g.Owner, Known: g.Known, Unknown: g.Unknown, Over: g.Over(), LockObject: g.Lock,
			Warning: g.Warning, Holders: []SnapshotSlotHolder{}}
		if g.Capacity > 0 {
			n := g.Capacity
			sg.Capacity = &n
		}
		for _, h := range g.Holders {
			sh := SnapshotSlotHolder{Holder: h.Holder, Step: h.Step}
			if h.Node != "" {
				n := h.Node
				sh.Node = &n
			}
			if !h.Since.IsZero() {
				t := h.Since.UTC().Format(time.RFC3339)
				sh.Since = &t
			}
			sg.Holders = append(sg.Holders, sh)
		}
		out = append(out, sg)
	}
	return out
}

// SnapshotPending is a lock's action that waits for its gates.
type SnapshotPending struct {
	Action Action         `json:"action"`
	Failed []SnapshotGate `json:"failedGates"`
}

// SnapshotGate is one gate that fails.
type SnapshotGate struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Gates names the failing gates.
func (p SnapshotPending) Gates() []string {
	out := make([]string, len(p.Failed))
	for i, g := range p.Failed {
		out[i] = g.Name
	}
	return out
}

// SnapshotNode is one entry of nodes.
type SnapshotNode struct {
	Name           string    `json:"name"`
	Phase          Phase     `json:"phase"`
	Ready          bool      `json:"ready"`
	Schedulable    bool      `json:"schedulable"`
	OSImage        string    `json:"osImage"`
	Kernel         string    `json:"kernel"`
	BootID         string    `json:"bootID"`
	RebootRequired *bool     `json:"rebootRequired"`
	HoldsLock      *LockKind `json:"holdsLock"`
	// Slot (additive to v1) is the slot group the node holds a slot of
	// ("suc system-upgrade/agent-plan"), absent when none; Step is its
	// coordinator's own word for where the node is ("job failed"), absent
	// when no coordinator declares one.
	Slot *string `json:"slot,omitempty"`
	Step *string `json:"step,omitempty"`
	// Blockers is what the node waits for, first first (additive to v1).
	Blockers []SnapshotBlocker `json:"blockers"`
}

// Snapshot derives the snapshot document at now.
func (c *Cluster) Snapshot(now time.Time) Snapshot {
	s := Snapshot{
		Schema:      SnapshotSchema,
		GeneratedAt: now.UTC().Format(time.RFC3339),
		Context:     c.Context,
		Sources:     []SnapshotSource{},
		Locks:       []SnapshotLock{},
		Nodes:       []SnapshotNode{},
		Attention:   []Attention{},
	}
	for _, h := range c.Sources() {
		s.Sources = append(s.Sources, SnapshotSource{Name: h.Name, Status: h.Status, Message: h.Message})
	}
	f := c.Fleet(now)
	s.Fleet = SnapshotFleet{Nodes: f.Nodes, Upgraded: f.Upgraded, TargetOS: f.Target.String(), Phases: f.Phases}
	for _, fp := range f.Families {
		s.Fleet.Families = append(s.Fleet.Families, SnapshotFamily{Family: fp.Family, Nodes: fp.Nodes, Upgraded: fp.Upgraded, TargetOS: fp.Target.String()})
	}
	s.Fleet.Blockers = c.blockers.FleetBlockers()
	if f.ETA != nil {
		e := HumanDuration(*f.ETA)
		s.Fleet.ETA = &e
	}
	holds := map[string]LockKind{}
	for _, l := range c.statuses {
		sl := SnapshotLock{Kind: l.Kind, Namespace: l.Namespace, Name: l.Name, Holder: l.Holder,
			Verdict: l.Verdict, Reason: l.Reason, Actions: []Action{}}
		if n := l.HolderNode(); n != "" {
			sl.HolderNode = &n
			if l.Holder != "" {
				holds[n] = l.Kind
			}
		}
		if d, ok := l.HeldFor(now); ok {
			sec := int64(d / time.Second)
			sl.HeldSeconds = &sec
		}
		sl.Actions = append(sl.Actions, l.Actions...)
		if l.Pending != nil {
			sl.Pending = &SnapshotPending{Action: l.Pending.Action, Failed: make([]SnapshotGate, len(l.Pending.Failed))}
			for i, g := range l.Pending.Failed {
				sl.Pending.Failed[i] = SnapshotGate{Name: g.Key, Reason: g.Value}
			}
		}
		if l.Duplicate {
			e := l.Entry
			sl.Entry = &e
		}
		s.Locks = append(s.Locks, sl)
	}
	slots := c.Slots()
	s.Slots = SnapshotSlotsOf(slots)
	slotOf := map[string]SlotGroup{}
	for _, g := range slots {
		for _, h := range g.Holders {
			if _, ok := slotOf[h.Node]; h.Node != "" && !ok {
				slotOf[h.Node] = g
			}
		}
	}
	cycles, _ := c.declared()
	for _, name := range c.NodeNames() {
		n := c.nodes[name]
		ready, _, _ := n.Ready()
		sn := SnapshotNode{Name: name, Phase: c.Phase(name), Ready: ready, Schedulable: !n.Unschedulable,
			OSImage: n.OSImage, Kernel: n.KernelVersion, BootID: n.BootID, RebootRequired: c.rebootRequiredPtr(name)}
		if k, ok := holds[name]; ok {
			sn.HoldsLock = &k
		}
		if g, ok := slotOf[name]; ok {
			if sn.HoldsLock == nil {
				k := g.Kind
				sn.HoldsLock = &k
			}
			sl := g.Name()
			sn.Slot = &sl
		}
		if d, ok := cycles[name]; ok && d.Step != "" {
			st := d.Step
			sn.Step = &st
		}
		sn.Blockers = []SnapshotBlocker{}
		for _, b := range c.blockers.Nodes[name] {
			sn.Blockers = append(sn.Blockers, SnapshotOf(b))
		}
		s.Nodes = append(s.Nodes, sn)
	}
	s.Volumes = c.VolumeSummary()
	s.Unread = c.UnreadParts()
	att := c.Attention(now)
	s.Attention = append(s.Attention, att...)
	s.ExitCode = c.exitCode(att)
	return s
}
