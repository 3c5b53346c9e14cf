package lock

import (
	"fmt"
	"strings"
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

// Gate names.
const (
	GateFreshData  = "fresh-data"
	GateVerdict    = "verdict"
	GateHolder     = "holder"
	GateOtherNodes = "other-nodes"
	GateVolumes    = "volumes"
	GateAlerts     = "alerts"
)

// Gate is one safety check before a release or reap (DESIGN §6 rule 3).
type Gate struct {
	Name   string
	Passed bool
	Reason string
}

// SameDecision reports whether two plans put the same decision before an
// operator: verdict, every gate's outcome and the exact write. A plan
// confirmed by a person is acted on only while this holds for a fresh plan.
func (p Plan) SameDecision(q Plan) bool {
	if p.Allowed != q.Allowed || p.Write != q.Write || p.Uncordon != q.Uncordon || p.Status.Verdict != q.Status.Verdict || len(p.Gates) != len(q.Gates) {
		return false
	}
	for i := range p.Gates {
		if p.Gates[i].Name != q.Gates[i].Name || p.Gates[i].Passed != q.Gates[i].Passed {
			return false
		}
	}
	return true
}

// Plan is what an action would do to one lock and whether it may.
type Plan struct {
	Status model.LockStatus
	Action model.Action
	Gates  []Gate
	// Allowed is true when every gate passed.
	Allowed bool
	// Refusal names the failed gates and why, when not Allowed.
	Refusal string
	Write   Write
	// Uncordon is a second write, made after Write succeeded: the holder's
	// uncordon, when the lock's coordinator cordoned it and would have
	// uncordoned it had the holder unlocked itself (fleetlock). Zero when
	// there is none or the operator keeps the node cordoned.
	Uncordon Write
	// Unattended is true when the plan came from an unattended (agent)
	// engine: no gate may then be overridden.
	Unattended bool
	// Nodes are the nodes the plan was judged on: before it writes, the
	// actor compares what the gates read of them with a fresh quorum read
	// of the node list (fresh.go).
	Nodes []model.Node
	// Judged are the gates' other inputs as the plan was judged on them,
	// which the actor compares with fresh reads before it writes too.
	Judged Judged
	// LeftBy is, for the uncordon of a node a coordinator kind of
	// internal/coord left cordoned, that kind's reading the node gate
	// rested on: before it writes, the actor reads the kinds again
	// (FreshReaders.LeftCordoned) and refuses when they no longer say so.
	LeftBy string
}

// FailedGates returns the gates that did not pass.
func (p Plan) FailedGates() []Gate {
	var out []Gate
	for _, g := range p.Gates {
		if !g.Passed {
			out = append(out, g)
		}
	}
	return out
}

// Plan judges the cluster at now and plans action a on the lock ref held by
// holder. holder may be the raw holder id or the node it maps to; it may be
// empty when the lock has one status. The error is for a lock or holder that
// does not exist (naming the candidates), a holder listed more than once
// (use PlanEntry), or an unknown action.
func (e *Engine) Plan(c *model.Cluster, ref model.LockRef, holder string, a model.Action, now time.Time) (Plan, error) {
	return e.PlanEntry(c, ref, holder, -1, a, now)
}

// PlanEntry is Plan on one entry of the lock: entry is the entry's position
// (model.LockStatus.Entry), or -1 for "the holder's only entry".
func (e *Engine) PlanEntry(c *model.Cluster, ref model.LockRef, holder string, entry int, a model.Action, now time.Time) (Plan, error) {
	if a != model.ActionRelease && a != model.ActionReap {
		return Plan{}, fmt.Errorf("unknown action %q (want release or reap)", a)
	}
	js, ctx := e.judgeAll(c, now)
	var cands []int
	for i := range js {
		if js[i].status.LockRef == ref {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		return Plan{}, fmt.Errorf("no lock %s", ref)
	}
	var idx int
	switch {
	case holder == "" && entry < 0 && len(cands) == 1:
		idx = cands[0]
	case holder == "" && entry < 0:
		return Plan{}, fmt.Errorf("lock %s has %d holders (%s): say which with --holder", ref, len(cands), holdersOf(js, cands))
	default:
		var by []int
		for _, i := range cands {
			if holder == "" || js[i].status.Holder == holder {
				by = append(by, i)
			}
		}
		if len(by) == 0 && holder != "" {
			for _, i := range cands {
				if hn := js[i].status.HolderNode(); hn != "" && hn == holder {
					by = append(by, i)
				}
			}
		}
		if entry >= 0 {
			var at []int
			for _, i := range by {
				if js[i].status.Entry == entry {
					at = append(at, i)
				}
			}
			by = at
		}
		switch {
		case len(by) == 1:
			idx = by[0]
		case len(by) > 1:
			var es []string
			for _, i := range by {
				es = append(es, fmt.Sprintf("entry %d (%s)", js[i].status.Entry, js[i].status.Verdict))
			}
			return Plan{}, fmt.Errorf("lock %s lists holder %q %d times: %s — say which with --entry", ref, holder, len(by), strings.Join(es, ", "))
		case entry >= 0:
			return Plan{}, fmt.Errorf("lock %s has no entry %d for holder %q (holders: %s)", ref, entry, holder, holdersOf(js, cands))
		default:
			return Plan{}, fmt.Errorf("lock %s has no holder %q (holders: %s)", ref, holder, holdersOf(js, cands))
		}
	}
	gates := e.gates(ctx, js, idx, a, false)
	p := Plan{Status: js[idx].status, Action: a, Gates: gates, Allowed: allGatesPass(gates), Unattended: e.opts.Unattended}
	p.Status.Actions, p.Status.Pending = e.actions(ctx, js, idx)
	if !p.Allowed {
		var why []string
		for _, g := range p.FailedGates() {
			why = append(why, g.Name+": "+g.Reason)
		}
		p.Refusal = fmt.Sprintf("%s refused: %s", a, strings.Join(why, "; "))
	}
	p.Write = writeFor(js[idx])
	p.Nodes, p.Judged = judgedNodes(c), judgedInputs(c)
	if a == model.ActionRelease && p.Write.Op != "" {
		p.Uncordon = uncordonFor(c, js[idx])
	}
	return p, nil
}

// KeepCordoned drops the plan's uncordon write (--keep-cordoned).
func (p Plan) KeepCordoned() Plan {
	p.Uncordon = Write{}
	return p
}

func holdersOf(js []judged, idx []int) string {
	var hs []string
	for _, i := range idx {
		h := js[i].status.Holder
		if h == "" {
			h = `""`
		}
		if n := js[i].status.HolderNode(); n != "" && n != h {
			h += " (" + n + ")"
		}
		if js[i].status.Duplicate {
			h += fmt.Sprintf(" [entry %d]", js[i].status.Entry)
		}
		hs = append(hs, h)
	}
	return strings.Join(hs, ", ")
}

// writeFor computes the write that frees one judged lock, through its
// kind's driver.
func writeFor(j judged) Write {
	switch {
	case j.drv == nil:
		return Write{}
	case j.parsed == nil:
		// Malformed: the driver's clearing write, if it has one.
		return j.drv.Write(j.obj, Parsed{}, -1)
	case j.entry == nil:
		return Write{}
	}
	for i := range j.parsed.Entries {
		if j.parsed.Entries[i].Index == j.entry.Index {
			return j.drv.Write(j.obj, *j.parsed, i)
		}
	}
	return Write{}
}

// uncordonFor is the holder's uncordon that goes with a release, when the
// coordinator cordoned it (Entry.UncordonOnRelease) and it is still
// cordoned: fleetlock's steady-state would have uncordoned it had the
// holder unlocked itself; and kured's, when kured on a stalled holder never
// came back to uncordon it (kured uncordons only a node it cordoned:
// metadata.unschedulable false, which is what stalled requires).
func uncordonFor(c *model.Cluster, j judged) Write {
	if j.entry == nil || !(j.entry.UncordonOnRelease || j.stalled) || j.mapping.Kind != MatchOne || len(j.mapping.Nodes) != 1 {
		return Write{}
	}
	n, ok := c.Node(j.mapping.Nodes[0])
	if !ok || !n.Unschedulable {
		return Write{}
	}
	return uncordonWrite(j.status.LockRef, n)
}

func allGatesPass(gs []Gate) bool {
	for _, g := range gs {
		if !g.Passed {
			return false
		}
	}
	return len(gs) > 0
}

// gates evaluates every gate for action a on judged lock i.
//
// strict applies the unattended rule (release only when orphaned); the
// engine's own Options.Unattended forces it.
func (e *Engine) gates(ctx *judgeCtx, js []judged, i int, a model.Action, strict bool) []Gate {
	strict = strict || e.opts.Unattended
	j := js[i]
	s := j.status
	c := ctx.c
	var gs []Gate
	add := func(name string, ok bool, format string, args ...any) {
		gs = append(gs, Gate{Name: name, Passed: ok, Reason: fmt.Sprintf(format, args...)})
	}

	gs = append(gs, freshDataGate(c, s.Kind))

	// verdict: the verdict allows the action.
	switch a {
	case model.ActionReap:
		switch s.Verdict {
		case model.VerdictGhost, model.VerdictExpired:
			add(GateVerdict, true, "verdict %s allows reap", s.Verdict)
		case model.VerdictOrphaned:
			add(GateVerdict, false, "verdict orphaned: the holder is a live node — use release, not reap")
		default:
			add(GateVerdict, false, "verdict %s: reap needs ghost or expired", s.Verdict)
		}
	case model.ActionRelease:
		switch {
		case s.Verdict == model.VerdictOrphaned:
			add(GateVerdict, true, "verdict orphaned allows release")
		case s.Verdict == model.VerdictHeld && j.inDelay:
			add(GateVerdict, false, "verdict held: holder %s rebooted, but its coordinator's release delay (%s) has not passed: it will release the lock itself", j.mapping.Nodes[0], j.entry.ReleaseDelay)
		case s.Verdict == model.VerdictHeld && !strict && j.rebooted && len(j.mapping.Nodes) == 1 && j.mapping.Kind == MatchOne && holderReadySchedulable(c, j):
			add(GateVerdict, true, "verdict held, but holder %s rebooted since the lock was taken and is Ready and schedulable: an operator may release it before the orphan grace ends", j.mapping.Nodes[0])
		case s.Verdict == model.VerdictHeld && !strict && !j.rebooted && len(j.mapping.Nodes) == 1:
			add(GateVerdict, false, "verdict held: holder %s has not rebooted since the lock was taken — freeing it lets another node drain while this one may still reboot", j.mapping.Nodes[0])
		case s.Verdict == model.VerdictHeld && strict:
			add(GateVerdict, false, "verdict held: the agent releases only orphaned locks")
		case s.Verdict == model.VerdictGhost || s.Verdict == model.VerdictExpired:
			add(GateVerdict, false, "verdict %s: the holder is not a finished node — use reap, not release", s.Verdict)
		default:
			add(GateVerdict, false, "verdict %s: release needs orphaned, or a held lock whose holder is Ready and schedulable", s.Verdict)
		}
	}

	// holder: a live holder node must be Ready and not draining (else
	// freeing its lock lets a second node go down while it is down).
	holders := map[string]bool{}
	for _, n := range s.HolderNodes {
		holders[n] = true
	}
	switch {
	case s.Holder == "":
		add(GateHolder, false, "the lock has no holder")
	case len(s.HolderNodes) == 0:
		add(GateHolder, true, "holder %s is not a current node", s.Holder)
	default:
		var bad []string
		for _, name := range s.HolderNodes {
			n, ok := c.Node(name)
			if !ok {
				bad = append(bad, name+" (gone from the node list)")
				continue
			}
			ready, known, _ := n.Ready()
			switch {
			case !known:
				bad = append(bad, name+" (readiness unknown)")
			case !ready:
				bad = append(bad, name+" (NotReady)")
			case n.Unschedulable && !j.leftCordoned() && !j.stalled:
				bad = append(bad, name+" (cordoned)")
			}
		}
		if len(bad) > 0 {
			add(GateHolder, false, "holder node is not finished: %s", strings.Join(bad, ", "))
		} else {
			how := "Ready and schedulable"
			if hn, ok := c.Node(s.HolderNodes[0]); ok && hn.Unschedulable && j.leftCordoned() {
				how = "Ready (cordoned by its coordinator until the holder unlocks)"
			} else if ok && hn.Unschedulable && j.stalled {
				how = "Ready, and still cordoned by kured, which never finished its cycle: the release uncordons it, as kured would"
			}
			add(GateHolder, true, "holder node %s is %s", strings.Join(s.HolderNodes, ", "), how)
		}
	}

	gs = append(gs, otherNodesGate(ctx, js, i, holders))

	gs = append(gs, volumesGate(c), alertsGate(c))
	return gs
}

// absent: the source read that its coordinator is not installed, or the
// operator turned it off: either way it holds no lock.
func absent(h model.SourceHealth) bool {
	return h.Status == model.StatusNotInstalled || h.Status == model.StatusDisabled
}

// freshDataGate: rule 1 — the node list, the lock's source, every other
// lock kind's source and (when Longhorn is present) the volume source are
// all current. kind "" checks every lock kind's source.
func freshDataGate(c *model.Cluster, kind model.LockKind) Gate {
	var gs []Gate
	add := func(name string, ok bool, format string, args ...any) {
		gs = append(gs, Gate{Name: name, Passed: ok, Reason: fmt.Sprintf(format, args...)})
	}
	// fresh-data: rule 1 — the node list, the lock's source and (when
	// Longhorn is present) the volume source are all current.
	var stale []string
	if !c.NodesFresh() {
		st := "not synced"
		if h, ok := c.Source(model.SourceNodes); ok {
			st = string(h.Status)
		}
		stale = append(stale, "nodes "+st)
	}
	if h, ok := c.Source(sourceOf(kind)); ok && kind != "" && !h.Usable() && !absent(h) {
		stale = append(stale, string(h.Name)+" "+string(h.Status))
	}
	// Longhorn must have said something (ok, or not installed): before
	// that, "no volumes" would pass the volume gate on missing data.
	if h, ok := c.Source(model.SourceLonghorn); !ok {
		stale = append(stale, "longhorn not reported yet")
	} else if c.LonghornPresent() && !h.Usable() {
		stale = append(stale, "longhorn "+string(h.Status))
	}
	// Every lock source that reported must be usable: holders of the other
	// kinds count for the other-nodes gate.
	for _, k := range Kinds() {
		if k == kind {
			continue
		}
		if h, ok := c.Source(sourceOf(k)); ok && !h.Usable() && !absent(h) {
			stale = append(stale, string(h.Name)+" "+string(h.Status))
		}
	}
	if !c.Synced() {
		stale = append(stale, "first picture not complete")
	}
	if len(stale) > 0 {
		add(GateFreshData, false, "data is not fresh: %s", strings.Join(stale, ", "))
	} else {
		add(GateFreshData, true, "nodes and lock data are fresh")
	}

	return gs[0]
}

// otherNodesGate: no node but the holders NotReady, of unknown readiness,
// mid-cycle or holding a lock other than judged lock i (-1: none).
func otherNodesGate(ctx *judgeCtx, js []judged, i int, holders map[string]bool) Gate {
	var gs []Gate
	add := func(name string, ok bool, format string, args ...any) {
		gs = append(gs, Gate{Name: name, Passed: ok, Reason: fmt.Sprintf(format, args...)})
	}
	// other-nodes: no other node NotReady, of unknown readiness, mid-cycle
	// or holding another lock.
	why := map[string][]string{}
	for n, r := range ctx.busy {
		if !holders[n] {
			why[n] = append(why[n], r)
		}
	}
	// A lock judged unknown without a holder node (malformed, not in its
	// coordinator's form, or a holder that cannot be mapped) may be held by
	// any node: who is down is then unknown.
	var unknown []string
	for k := range js {
		if k == i {
			continue
		}
		o := js[k].status
		if o.Verdict == model.VerdictUnknown && len(o.HolderNodes) == 0 {
			unknown = append(unknown, "who holds "+o.LockRef.String()+" is unknown ("+clip(o.Reason)+")")
			continue
		}
		if o.Holder == "" || o.Verdict == model.VerdictFree {
			continue
		}
		for _, n := range o.HolderNodes {
			if !holders[n] {
				why[n] = append(why[n], "holds "+o.LockRef.String())
			}
		}
	}
	var others []string
	for _, n := range sortedKeys(why) {
		others = append(others, n+" ("+strings.Join(why[n], ", ")+")")
	}
	others = append(others, unknown...)
	if len(others) > 0 {
		add(GateOtherNodes, false, "other nodes are not steady: %s", model.FirstFew(others, 5))
	} else {
		add(GateOtherNodes, true, "every other node is Ready and not mid-cycle")
	}

	return gs[0]
}

// volumesGate and alertsGate: no Longhorn volume degraded or faulted, and no
// blocking alert firing.
func volumesGate(c *model.Cluster) Gate {
	var gs []Gate
	add := func(name string, ok bool, format string, args ...any) {
		gs = append(gs, Gate{Name: name, Passed: ok, Reason: fmt.Sprintf(format, args...)})
	}
	// volumes: no Longhorn volume degraded or faulted — which is unknown
	// while Longhorn was not read (never a ✓ about data not read).
	if why, unread := c.LonghornUnread(); unread {
		add(GateVolumes, false, "volumes unknown: %s", why)
	} else if !c.LonghornPresent() {
		add(GateVolumes, true, "Longhorn is not installed")
	} else {
		var bad []string
		for _, v := range c.Volumes() {
			if v.Robustness == model.RobustnessDegraded || v.Robustness == model.RobustnessFaulted {
				bad = append(bad, v.Key()+" "+string(v.Robustness))
			}
		}
		if len(bad) > 0 {
			add(GateVolumes, false, "Longhorn volumes not healthy: %s", model.FirstFew(bad, 5))
		} else {
			add(GateVolumes, true, "no Longhorn volume is degraded or faulted")
		}
	}

	return gs[0]
}

func alertsGate(c *model.Cluster) Gate {
	var gs []Gate
	add := func(name string, ok bool, format string, args ...any) {
		gs = append(gs, Gate{Name: name, Passed: ok, Reason: fmt.Sprintf(format, args...)})
	}
	// alerts: no blocking Prometheus alert fires (kured's alert filter),
	// when that is configured.
	names, known := c.FiringAlerts()
	h, reported := c.Source(model.SourcePrometheus)
	whose := ""
	if f := c.AlertFilterFrom(); f != "" {
		whose = " (filter: " + f + ")"
	}
	switch {
	case !c.AlertFilterSet():
		add(GateAlerts, true, "no blocking-alert filter configured")
	case !known:
		add(GateAlerts, false, "a blocking-alert filter is set but Prometheus has not answered yet%s", whose)
	case reported && !h.Usable():
		add(GateAlerts, false, "prometheus is %s: cannot tell whether blocking alerts fire%s", h.Status, whose)
	case len(names) > 0:
		add(GateAlerts, false, "blocking alerts firing: %s%s", model.FirstFew(names, 5), whose)
	default:
		add(GateAlerts, true, "no blocking alert fires%s", whose)
	}
	return gs[0]
}

func holderReadySchedulable(c *model.Cluster, j judged) bool {
	n, ok := c.Node(j.mapping.Nodes[0])
	if !ok {
		return false
	}
	ready, known, _ := n.Ready()
	return known && ready && (!n.Unschedulable || j.leftCordoned())
}
