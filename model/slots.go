package model

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// A slot is a coordinator's permission for one node to go through its
// cycle: an entry of a lock object (kured's DaemonSet annotation, a
// fleetlock Lease), an entry of a system-upgrade-controller Plan's
// status.applying under its spec.concurrency, the Flatcar update operator's
// computed slot under its capacity. Every kind's slots, and the places in
// their cycle that the kinds without a lock object declare for their nodes,
// feed the same phases, progress, timeline and attention: the model never
// asks which kind it is looking at (a test, TestNoKindSpecialCase, holds it
// so).

// SlotGroup is the slots of one coordinator object (a lock, a Plan, FLUO's
// one slot): how many nodes it lets through at once and who holds them.
type SlotGroup struct {
	Kind LockKind
	// Owner names the object ("kube-system/kured", "system-upgrade/agent-plan";
	// "" for a kind whose slots belong to no object).
	Owner string
	// Known is false when the slots cannot be told: Unknown says why. An
	// unknown group is never "free".
	Known   bool
	Unknown string
	// Capacity is how many nodes may hold a slot at once (0: not known).
	Capacity int
	Holders  []SlotHolder
	// Warning is a problem of the object itself (a kured multi-lock listing
	// more holders than its maxOwners).
	Warning string
	// Lock is true for a lock object's group: its entries are also the
	// judged locks (LockStatuses), which the front ends list as locks.
	Lock bool
}

// SlotHolder is one held slot.
type SlotHolder struct {
	// Holder is the id as the coordinator writes it.
	Holder string
	// Node is the node it maps to ("" for none: a ghost).
	Node string
	// Since is when the slot was taken, when known.
	Since time.Time
	// Step is the coordinator's own word for where the holder is ("job
	// failed", "rebooting"), or the lock verdict for a lock entry.
	Step string
}

// Over reports whether more nodes hold the group's slots than its capacity
// lets through: the coordinator's own rule is broken (three nodes in FLUO's
// single slot), which needs an operator.
func (g SlotGroup) Over() bool {
	return g.Known && g.Capacity > 0 && len(g.Holders) > g.Capacity
}

// Name is "kind owner" for display ("suc system-upgrade/agent-plan").
func (g SlotGroup) Name() string {
	if g.Owner == "" {
		return string(g.Kind)
	}
	return string(g.Kind) + " " + g.Owner
}

// NodeCycle is a node's place in one coordinator's cycle as that
// coordinator's package declares it (a SUC plan's job running, failed or
// complete; FLUO's reboot-ok, reboot-in-progress and after-reboot; kured's
// reboot-in-progress mark). It feeds Advance (PhaseInput.Declared).
type NodeCycle struct {
	Kind LockKind
	// Owner is the object whose cycle it is (as SlotGroup.Owner).
	Owner string
	Node  string
	// Phase is the node's phase in that cycle; idle and unknown declare
	// nothing.
	Phase Phase
	// Step is the coordinator's own word for it ("job running").
	Step string
	// Cordoned: the node is unschedulable while the coordinator has it.
	Cordoned bool
	// LeftCordoned: the coordinator finished with the node (done) and left
	// it cordoned, by its own known fault: the node needs an uncordon
	// (Track.StillCordoned).
	LeftCordoned bool
}

// CoordinatorRead replaces what one coordinator kind without a lock object
// declares: its slot groups and its nodes' places in its cycle, read at one
// time. Known false (the kind could not be read; Unknown says why) keeps
// what was last read for phases rather than taking its absence for "none",
// and shows its slots as unknown.
type CoordinatorRead struct {
	Kind    LockKind
	Known   bool
	Unknown string
	Slots   []SlotGroup
	Nodes   []NodeCycle
}

func (CoordinatorRead) isEvent() {}

// cycleRank orders the phases a node's coordinators declare: the one that
// says most about where the node is wins (a node one plan has done and
// another applies to is in the second's cycle).
func cycleRank(p Phase) int {
	switch p {
	case PhaseRebooting:
		return 6
	case PhaseDraining:
		return 5
	case PhaseRecovering:
		return 4
	case PhasePending:
		return 3
	case PhaseDone:
		return 2
	}
	return 0
}

// applyCoordinator stores one kind's read and records its transitions on
// the timeline: slots taken and released, and each node's step as the
// coordinator names it (job started, failed, completed; reboot; uncordon).
func (c *Cluster) applyCoordinator(e CoordinatorRead, now time.Time) {
	if c.coord == nil {
		c.coord = map[LockKind]CoordinatorRead{}
	}
	old, had := c.coord[e.Kind]
	c.decl = nil
	if !e.Known {
		// Unknown is not "none": keep the last picture, say why.
		if had {
			old.Unknown = e.Unknown
			c.coord[e.Kind] = old
		} else {
			c.coord[e.Kind] = e
		}
		return
	}
	c.coord[e.Kind] = e
	c.decl = nil
	if !had || !old.Known {
		for _, g := range e.Slots {
			for _, h := range g.Holders {
				c.add(TimelineEntry{Time: now, Kind: KindSlot, Node: h.Node, Change: ChangeHeld,
					Message: fmt.Sprintf("%s slot held by %s%s", g.Name(), holderName(h), aside(h.Step))})
			}
		}
		return
	}
	prev := map[string]SlotHolder{}
	for _, g := range old.Slots {
		for _, h := range g.Holders {
			prev[g.Name()+"\x00"+h.Holder] = h
		}
	}
	seen := map[string]bool{}
	for _, g := range e.Slots {
		for _, h := range g.Holders {
			k := g.Name() + "\x00" + h.Holder
			seen[k] = true
			if _, ok := prev[k]; !ok {
				c.add(TimelineEntry{Time: now, Kind: KindSlot, Node: h.Node, Change: ChangeTaken,
					Message: fmt.Sprintf("%s slot taken by %s%s", g.Name(), holderName(h), aside(h.Step))})
			}
		}
	}
	for _, g := range old.Slots {
		for _, h := range g.Holders {
			if !seen[g.Name()+"\x00"+h.Holder] {
				c.add(TimelineEntry{Time: now, Kind: KindSlot, Node: h.Node, Change: ChangeReleased,
					Message: fmt.Sprintf("%s slot released by %s", g.Name(), holderName(h))})
			}
		}
	}
	steps := map[string]NodeCycle{}
	for _, n := range old.Nodes {
		steps[n.Owner+"\x00"+n.Node] = n
	}
	for _, n := range e.Nodes {
		o, ok := steps[n.Owner+"\x00"+n.Node]
		if !ok || o.Step == n.Step && o.Cordoned == n.Cordoned {
			continue
		}
		what := n.Step
		if o.Step == n.Step {
			what = "uncordoned"
			if n.Cordoned {
				what = "cordoned"
			}
		} else if o.Step != "" {
			what = o.Step + " → " + n.Step
		}
		c.add(TimelineEntry{Time: now, Kind: KindSlot, Node: n.Node, Change: ChangeStep, To: n.Step,
			Message: fmt.Sprintf("%s %s: %s", strings.TrimSpace(string(n.Kind)+" "+n.Owner), n.Node, what)})
	}
}

func holderName(h SlotHolder) string {
	if h.Node != "" && h.Node != h.Holder {
		return h.Node + " (" + h.Holder + ")"
	}
	return h.Holder
}

func aside(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// Slots returns every kind's slot groups, sorted by kind and owner: each
// lock object's entries as judged (capacity as its driver read it), and the
// groups each coordinator kind without a lock object declared.
func (c *Cluster) Slots() []SlotGroup {
	var out []SlotGroup
	byRef := map[LockRef]int{}
	for _, s := range c.statuses {
		i, ok := byRef[s.LockRef]
		if !ok {
			i = len(out)
			byRef[s.LockRef] = i
			out = append(out, SlotGroup{Kind: s.Kind, Owner: s.Namespace + "/" + s.Name, Known: s.Verdict != VerdictUnknown || s.Holder != "",
				Capacity: s.Capacity, Warning: s.Warning, Lock: true})
			if s.Verdict == VerdictUnknown && s.Holder == "" {
				out[i].Unknown = s.Reason
			}
		}
		if s.Holder != "" {
			out[i].Holders = append(out[i].Holders, SlotHolder{Holder: s.Holder, Node: s.HolderNode(), Since: s.Created, Step: string(s.Verdict)})
		}
	}
	for _, k := range sortedKeys(c.coordByName()) {
		r := c.coord[LockKind(k)]
		for _, g := range r.Slots {
			if !r.Known || r.Unknown != "" {
				// Unread now: the holders shown are the last read.
				g.Known, g.Unknown = false, r.Unknown
			}
			out = append(out, g)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Owner < out[j].Owner
	})
	return out
}

func (c *Cluster) coordByName() map[string]bool {
	m := make(map[string]bool, len(c.coord))
	for k := range c.coord {
		m[string(k)] = true
	}
	return m
}

// declaredIndex is what the coordinator reads declare, indexed by node:
// derived once per CoordinatorRead (a plan selecting 5,000 nodes is read
// every few seconds; the phases, progress and snapshot read it many times
// between).
type declaredIndex struct {
	cycles map[string]NodeCycle
	holds  map[string]SlotHolderOf
	byNode map[string][]NodeCycle
}

// declared is each node's place in its coordinators' cycles, the most
// telling one when several declare one, and which kind holds a slot for it.
// Callers must not modify the maps.
func (c *Cluster) declared() (cycles map[string]NodeCycle, holds map[string]SlotHolderOf) {
	if c.decl == nil {
		c.decl = c.indexDeclared()
	}
	return c.decl.cycles, c.decl.holds
}

func (c *Cluster) indexDeclared() *declaredIndex {
	cycles := map[string]NodeCycle{}
	holds := map[string]SlotHolderOf{}
	byNode := map[string][]NodeCycle{}
	for _, k := range sortedKeys(c.coordByName()) {
		r := c.coord[LockKind(k)]
		for _, n := range r.Nodes {
			byNode[n.Node] = append(byNode[n.Node], n)
			if cycleRank(n.Phase) == 0 {
				continue
			}
			if o, ok := cycles[n.Node]; !ok || cycleRank(n.Phase) > cycleRank(o.Phase) {
				cycles[n.Node] = n
			}
		}
		for _, g := range r.Slots {
			for _, h := range g.Holders {
				if h.Node == "" {
					continue
				}
				if _, ok := holds[h.Node]; !ok {
					holds[h.Node] = SlotHolderOf{Group: g, Holder: h}
				}
			}
		}
	}
	for _, ns := range byNode {
		sort.SliceStable(ns, func(i, j int) bool { return cycleRank(ns[i].Phase) > cycleRank(ns[j].Phase) })
	}
	return &declaredIndex{cycles: cycles, holds: holds, byNode: byNode}
}

// SlotHolderOf is one held slot with its group.
type SlotHolderOf struct {
	Group  SlotGroup
	Holder SlotHolder
}

// SlotsHeldBy returns the slots a node holds, of every kind.
func (c *Cluster) SlotsHeldBy(node string) []SlotHolderOf {
	var out []SlotHolderOf
	for _, g := range c.Slots() {
		for _, h := range g.Holders {
			if h.Node == node {
				out = append(out, SlotHolderOf{Group: g, Holder: h})
			}
		}
	}
	return out
}

// NodeCycles returns what the coordinators declare of a node, most telling
// first.
func (c *Cluster) NodeCycles(node string) []NodeCycle {
	c.declared()
	return append([]NodeCycle(nil), c.decl.byNode[node]...)
}

// Used renders how many slots are held of the capacity: "1/1", "3/1",
// "2/?" (capacity not known), "?" (slots unknown).
func (g SlotGroup) Used() string {
	if !g.Known {
		return "?"
	}
	if g.Capacity <= 0 {
		return fmt.Sprintf("%d/?", len(g.Holders))
	}
	return fmt.Sprintf("%d/%d", len(g.Holders), g.Capacity)
}

// HolderName renders a holder: its node, and the raw id when it differs.
func (h SlotHolder) HolderName() string { return holderName(h) }

// DeclaresPhase reports whether a coordinator kind without a lock object
// declares the node's current phase (NodeCycle): its blockers there are
// that kind's to name, not the lock engine's bounds.
func (c *Cluster) DeclaresPhase(node string) bool {
	c.declared()
	cs := c.decl.byNode[node]
	return len(cs) > 0 && cs[0].Phase == c.Phase(node)
}
