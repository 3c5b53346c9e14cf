package lock

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/model"
)

// DefaultOrphanGrace is how long a holder must be steady (Ready, schedulable,
// rebooted) before its lock is judged orphaned.
const DefaultOrphanGrace = 10 * time.Minute

// Options configure the engine.
type Options struct {
	// OrphanGrace is --orphan-grace; 0 means DefaultOrphanGrace.
	OrphanGrace time.Duration
	// Unattended is set by the agent: release is then allowed only for
	// orphaned locks (never for a held lock an operator asks about), and no
	// failed gate can ever be overridden.
	Unattended bool
}

// Engine judges locks and plans actions. It remembers a little across
// judgements (when it first saw each lock, which nodes it saw cordoned and
// when it saw them uncordoned or first schedulable, when it saw the node
// marks a coordinator removes after the reboot removed
// (coord.AfterReboot.Marks), the Zincati ids of machine ids); it is safe for
// concurrent use.
type Engine struct {
	opts Options

	mu         sync.Mutex
	firstSeen  map[string]time.Time // lock key -> first judged
	cordoned   map[string]bool      // nodes unschedulable when last judged
	uncordoned map[string]time.Time // node -> when first seen schedulable again after a cordon
	schedSeen  map[string]time.Time // node -> when first seen schedulable (since it last was not)
	marked     marksOn              // mark -> nodes that carried it when last judged
	unmarked   marksOff             // mark -> node -> when it was seen removed
	appIDs     map[string]string    // machine id -> Zincati id ("" = unusable)
	leftBy     map[string]string    // node -> why a coordinator of internal/coord left it cordoned

	// What the coordinator kinds of internal/coord said of the cordons
	// they do not own (node -> whose it is) and which kind left a node
	// cordoned (SetCordons).
	notOwned map[string]string
	leftKind map[string]model.LockKind
}

// Judge must stay a model.Judge.
var _ model.Judge = (&Engine{}).Judge

// New returns an engine.
func New(opts Options) *Engine {
	if opts.OrphanGrace <= 0 {
		opts.OrphanGrace = DefaultOrphanGrace
	}
	return &Engine{opts: opts, firstSeen: map[string]time.Time{}, cordoned: map[string]bool{}, uncordoned: map[string]time.Time{},
		schedSeen: map[string]time.Time{}, marked: marksOn{}, unmarked: marksOff{}, appIDs: map[string]string{},
		leftBy: map[string]string{}}
}

// Options returns the engine's options (defaults filled in).
func (e *Engine) Options() Options { return e.opts }

// judged is one lock status with what the engine needs to plan on it.
type judged struct {
	status model.LockStatus
	obj    *model.LockObject
	drv    Driver  // nil for an unregistered kind
	parsed *Parsed // nil when the lock could not be parsed (malformed)
	entry  *Entry  // nil for a free or malformed lock
	// mapping is where the holder maps to.
	mapping Mapping
	// rebooted: the holder rebooted since the lock was taken.
	rebooted bool
	// inDelay: the holder rebooted but the coordinator's own release delay
	// has not passed yet.
	inDelay bool
	// stalled: the holder rebooted, is Ready and still cordoned by kured,
	// past the bound by which kured uncordons and releases (its pod never
	// came back): the release also uncordons it, as kured would.
	stalled bool
}

// leftCordoned says whether the coordinator leaves this holder cordoned
// after its reboot while it holds the lock.
func (j judged) leftCordoned() bool { return j.entry != nil && j.entry.LeftCordoned }

// Judge judges every lock of a cluster at now: one status per lock, one per
// kured multi-lock entry. It is a model.Judge; it does not change c.
func (e *Engine) Judge(c *model.Cluster, now time.Time) []model.LockStatus {
	js, ctx := e.judgeAll(c, now)
	out := make([]model.LockStatus, 0, len(js))
	for i := range js {
		s := js[i].status
		s.Actions, s.Pending = e.actions(ctx, js, i)
		out = append(out, s)
	}
	return out
}

// actions lists the actions the engine recommends on judged lock i: those
// whose gates all pass under the strict (verdict-driven) rule. An operator's
// release of a held lock is possible through Plan but never listed here.
//
// It also returns the action the verdict calls for (reap for a ghost or an
// expired holder, release for an orphan) when its gates refuse it, with the
// gates that fail: the same gates, so the two never disagree.
func (e *Engine) actions(ctx *judgeCtx, js []judged, i int) ([]model.Action, *model.PendingAction) {
	var out []model.Action
	var pending *model.PendingAction
	calls := verdictCalls(js[i].status.Verdict)
	for _, a := range []model.Action{model.ActionRelease, model.ActionReap} {
		gs := e.gates(ctx, js, i, a, true)
		if allGatesPass(gs) {
			out = append(out, a)
			continue
		}
		if a == calls && js[i].status.Holder != "" {
			pending = &model.PendingAction{Action: a}
			for _, g := range gs {
				if !g.Passed {
					pending.Failed = append(pending.Failed, model.Evidence{Key: g.Name, Value: g.Reason})
				}
			}
		}
	}
	return out, pending
}

// verdictCalls is the action a verdict calls for, "" for none.
func verdictCalls(v model.Verdict) model.Action {
	switch v {
	case model.VerdictGhost, model.VerdictExpired:
		return model.ActionReap
	case model.VerdictOrphaned:
		return model.ActionRelease
	}
	return ""
}

// judgeCtx is what every lock's judgement and gates share.
type judgeCtx struct {
	c   *model.Cluster
	now time.Time
	// busy are nodes that are NotReady, of unknown readiness or mid-cycle,
	// with the reason (lock holding is added per lock by the gates).
	busy map[string]string
}

func (e *Engine) judgeAll(c *model.Cluster, now time.Time) ([]judged, *judgeCtx) {
	e.mu.Lock()
	defer e.mu.Unlock()

	names := c.NodeNames()
	nodes := make([]*model.Node, 0, len(names))
	ctx := &judgeCtx{c: c, now: now, busy: map[string]string{}}
	for _, name := range names {
		n, _ := c.Node(name)
		nodes = append(nodes, n)
		switch {
		case n.Unschedulable && !e.cordoned[name]:
			e.cordoned[name] = true
		case !n.Unschedulable && e.cordoned[name]:
			delete(e.cordoned, name)
			e.uncordoned[name] = now
		}
		if n.Unschedulable {
			delete(e.schedSeen, name)
			delete(e.uncordoned, name)
		} else if _, ok := e.schedSeen[name]; !ok {
			e.schedSeen[name] = now
		}
		for _, mark := range afterMarks {
			_, marked := n.Annotations[mark]
			switch {
			case marked:
				setIn(e.marked, mark, name, true)
				delete(e.unmarked[mark], name)
			case e.marked[mark][name]:
				delete(e.marked[mark], name)
				setIn(e.unmarked, mark, name, now)
			}
		}
		if why := busyReason(c, n); why != "" {
			ctx.busy[name] = why
		}
	}
	for name := range e.cordoned {
		if _, ok := c.Node(name); !ok {
			delete(e.cordoned, name)
		}
	}
	ms := []map[string]time.Time{e.uncordoned, e.schedSeen}
	for _, m := range e.unmarked {
		ms = append(ms, m)
	}
	for _, m := range ms {
		for name := range m {
			if _, ok := c.Node(name); !ok {
				delete(m, name)
			}
		}
	}
	for _, m := range e.marked {
		for name := range m {
			if _, ok := c.Node(name); !ok {
				delete(m, name)
			}
		}
	}
	ix := coord.NewIndexFunc(nodes, func(n string) bool { _, ok := c.Node(n); return ok }, e.appIDs)

	var js []judged
	seenKeys := map[string]bool{}
	for _, obj := range c.Locks() {
		for _, j := range e.judgeLock(c, ix, obj, now) {
			seenKeys[entryKey(j.status)] = true
			js = append(js, j)
		}
	}
	for k := range e.firstSeen {
		if !seenKeys[k] {
			delete(e.firstSeen, k)
		}
	}
	return js, ctx
}

// busyReason says why a node blocks actions on other nodes' locks: it is
// NotReady, its readiness is unknown, or it is mid-cycle.
func busyReason(c *model.Cluster, n *model.Node) string {
	ready, known, since := n.Ready()
	switch {
	case !known:
		return "readiness unknown"
	case !ready:
		return "NotReady since " + since.UTC().Format(time.RFC3339)
	}
	p := c.Phase(n.Name)
	if t := c.Track(n.Name); t == nil || t.Phase == "" {
		// Phase not derived yet: judge from the node itself.
		if n.Unschedulable {
			return "cordoned (phase not yet known)"
		}
		return ""
	}
	if p.InCycle() {
		return "mid-cycle (" + string(p) + ")"
	}
	if p == model.PhaseUnknown || p == model.PhaseDown {
		return "phase " + string(p)
	}
	return ""
}

// judgeLock returns the judgements of one lock object: one per entry, or
// one for a free, malformed or unregistered lock.
func (e *Engine) judgeLock(c *model.Cluster, ix *Index, obj *model.LockObject, now time.Time) []judged {
	base := model.LockStatus{LockRef: obj.LockRef, UID: obj.UID, ResourceVersion: obj.ResourceVersion}
	d, err := DriverFor(obj.Kind)
	if err != nil {
		s := base
		s.Verdict, s.Reason = model.VerdictUnknown, err.Error()
		return []judged{{status: s, obj: obj}}
	}
	p, err := d.Parse(obj)
	if err != nil {
		s := base
		s.Verdict, s.Reason = model.VerdictUnknown, "malformed "+string(obj.Kind)+" lock: "+err.Error()
		s.Evidence = append(s.Evidence, p.Notes...)
		s.Settings = p.Settings
		return []judged{{status: s, obj: obj, drv: d}}
	}
	base.Capacity = p.Capacity
	if len(p.Entries) == 0 {
		s := base
		s.Verdict, s.Reason = model.VerdictFree, p.FreeReason
		s.Evidence = append(s.Evidence, p.Notes...)
		s.Settings = p.Settings
		s.Warning = p.Warning // a free lock's coordinator may be unable to run (kured's settings)
		return []judged{{status: s, obj: obj, drv: d, parsed: &p}}
	}
	out := make([]judged, 0, len(p.Entries))
	for i := range p.Entries {
		ent := p.Entries[i]
		s := base
		s.Holder, s.Entry, s.Duplicate = ent.Holder, ent.Index, ent.Duplicate
		s.TTL = ent.TTL
		s.Created = ent.Since
		s.Settings = p.Settings
		s.Warning = p.Warning
		j := judged{status: s, obj: obj, drv: d, parsed: &p, entry: &ent}
		e.judgeHeld(c, ix, &j, now)
		j.status.Evidence = append(j.status.Evidence, p.Notes...)
		out = append(out, j)
	}
	return out
}

// judgeHeld judges one held lock (or multi-lock entry).
func (e *Engine) judgeHeld(c *model.Cluster, ix *Index, j *judged, now time.Time) {
	s := &j.status
	key := entryKey(*s)
	first, ok := e.firstSeen[key]
	if !ok || first.After(now) {
		first = now
		e.firstSeen[key] = now
	}
	ev := func(k, v string) { s.Evidence = append(s.Evidence, model.Evidence{Key: k, Value: v}) }
	set := func(v model.Verdict, format string, a ...any) {
		s.Verdict, s.Reason = v, fmt.Sprintf(format, a...)
	}

	// When the lock was taken: the time the lock itself records when sane,
	// else when this engine first saw it.
	lockTime, fromLock := first, false
	skew := time.Duration(0)
	switch {
	case s.Created.IsZero():
		ev("lock time", "unknown (not recorded in the lock); first seen "+first.UTC().Format(time.RFC3339))
	case s.Created.After(now):
		skew = s.Created.Sub(now)
		ev("lock time", fmt.Sprintf("%s from %s — %s in the future: the clock that wrote it is ahead (skew) or the lock was written by hand; ignored, only evidence from the node counts",
			s.Created.UTC().Format(time.RFC3339), j.entry.SinceFrom, model.HumanDuration(skew)))
		s.Created = time.Time{}
	default:
		lockTime, fromLock = s.Created, true
		ev("held for", model.HumanDuration(now.Sub(s.Created))+" (since "+s.Created.UTC().Format(time.RFC3339)+", from "+j.entry.SinceFrom+")")
	}
	if s.Duplicate {
		ev("duplicate", fmt.Sprintf("entry %d: the lock lists %s more than once (kured appends a new entry when a node's own entry expired); each entry is judged on its own", s.Entry+1, s.Holder))
	}
	if s.TTL > 0 {
		ev("ttl", s.TTL.String())
	}

	// Rule 1: sources must be fresh before anything is judged from them.
	if h, ok := c.Source(sourceOf(s.Kind)); ok && !h.Usable() {
		set(model.VerdictUnknown, "%s source is %s%s: the lock data may be out of date", h.Name, h.Status, model.Aside(h.Message))
		return
	}
	if !c.NodesFresh() {
		h, ok := c.Source(model.SourceNodes)
		st := "not synced"
		if ok {
			st = string(h.Status) + model.Aside(h.Message)
		}
		set(model.VerdictUnknown, "node list is %s: cannot tell whether holder %s is a live node", st, s.Holder)
		return
	}

	j.mapping = resolve(ix, s.Kind, s.Holder)
	m := j.mapping
	ev("holder mapping", m.How)
	switch m.Kind {
	case MatchManual:
		set(model.VerdictHeld, "manual lock set by an operator: kured reboots are paused until it is removed")
		return
	case MatchInconclusive:
		set(model.VerdictUnknown, "cannot map holder to a node: %s", m.How)
		return
	case MatchSeveral:
		s.HolderNodes = m.Nodes
		set(model.VerdictAmbiguous, "holder %s maps to %d nodes (%s): they share one machine id", s.Holder, len(m.Nodes), model.FirstFew(m.Nodes, 4))
		return
	}
	if j.entry.Expired(now) {
		if len(m.Nodes) == 1 {
			s.HolderNodes = m.Nodes
		}
		if j.entry.Since.IsZero() {
			set(model.VerdictExpired, "TTL %s is set but the lock has no created time: kured treats it as expired", s.TTL)
		} else {
			set(model.VerdictExpired, "TTL %s passed %s", s.TTL, model.Ago(now, s.Created.Add(s.TTL)))
		}
		return
	}
	if m.Kind == MatchNone {
		set(model.VerdictGhost, "holder %s matches none of the %d current nodes", s.Holder, c.NodeCount())
		return
	}

	name := m.Nodes[0]
	s.HolderNodes = []string{name}
	n, _ := c.Node(name)
	ready, known, readySince := n.Ready()
	switch {
	case !known:
		ev("ready", "unknown")
	default:
		ev("ready", fmt.Sprintf("%v since %s (%s)", ready, readySince.UTC().Format(time.RFC3339), model.HumanDuration(now.Sub(readySince))))
	}
	ev("schedulable", fmt.Sprint(!n.Unschedulable))
	if n.BootID != "" {
		ev("boot id", n.BootID)
	}

	// Rebooted since the lock was taken?
	var rebootedAt time.Time
	var rebootWhy string
	if t := c.Track(name); t != nil {
		var ids []string
		for i, b := range t.Boots {
			ids = append(ids, model.ShortID(b.BootID)+"@"+b.FirstSeen.UTC().Format(time.RFC3339))
			if i > 0 && b.FirstSeen.After(lockTime) {
				rebootedAt, rebootWhy = b.FirstSeen, "boot id changed "+model.ShortID(t.Boots[i-1].BootID)+" → "+model.ShortID(b.BootID)
			}
		}
		if len(ids) > 1 {
			ev("boot ids seen", strings.Join(ids, ", "))
		}
	}
	// Ready since after the lock was taken counts as a reboot only when this
	// engine never saw the node's boot id from before the lock: a Ready flap
	// under the same boot id (kubelet hiccup mid-drain) is not a reboot.
	sawBootBefore := false
	if t := c.Track(name); t != nil && len(t.Boots) > 0 && !t.Boots[0].FirstSeen.After(lockTime) {
		sawBootBefore = true
	}
	if rebootWhy == "" && fromLock && !sawBootBefore && known && ready && readySince.After(lockTime) {
		rebootedAt, rebootWhy = readySince, "Ready since after the lock was taken"
	}
	j.rebooted = rebootWhy != ""
	cordonOK := !n.Unschedulable || j.leftCordoned()
	// A coordinator that still acts on its holder after the reboot (kured)
	// answers for its own sequence; nil for one that does not.
	after, _ := j.drv.(coord.AfterReboot)
	if n.Unschedulable && j.leftCordoned() {
		ev("cordon", j.entry.CordonNote)
	}
	switch {
	case !known:
		set(model.VerdictHeld, "held by %s, whose readiness is unknown", name)
		return
	case !ready:
		set(model.VerdictHeld, "held by %s, which is NotReady (rebooting?) for %s", name, model.HumanDuration(now.Sub(readySince)))
		return
	case rebootWhy == "" && skew > 0:
		set(model.VerdictUnknown, "held by %s; the lock's time is %s in the future (clock skew?), so whether %s rebooted since the lock was taken is unknown until its boot id changes", name, model.HumanDuration(skew), name)
		return
	case rebootWhy == "" && !fromLock:
		set(model.VerdictHeld, "held by %s; when the lock was taken is unknown (%s records no time), so whether %s rebooted since is unknown", name, s.Kind, name)
		return
	case rebootWhy == "":
		if n.Unschedulable {
			set(model.VerdictHeld, "held by %s, cordoned and not yet rebooted (draining)", name)
		} else {
			set(model.VerdictHeld, "held by %s, which has not rebooted since the lock was taken", name)
		}
		return
	case !cordonOK && after != nil:
		// The coordinator uncordons it itself after the reboot: it judges
		// how long it may take (kured: its pod's first tick).
		ev("rebooted", rebootWhy)
		v := after.StillCordoned(e.holder(c, j, n, rebootWhy, rebootedAt, readySince, now))
		s.Evidence = append(s.Evidence, v.Evidence...)
		s.Verdict, s.Reason = v.Verdict, v.Reason
		j.stalled, s.Stalled = v.Stalled, v.Stalled
		return
	case !cordonOK:
		set(model.VerdictHeld, "held by %s, rebooted (%s) and still cordoned (recovering)", name, rebootWhy)
		return
	}
	ev("rebooted", rebootWhy)
	steadySince := readySince
	if rebootedAt.After(steadySince) {
		steadySince = rebootedAt
	}
	// Schedulable since when: the coordinator cordoned the holder for its
	// drain, so a schedulable holder was uncordoned since; steady counts
	// from then, when that can be known.
	schedUnknown := false
	if !n.Unschedulable {
		since, from, ok, first := e.schedulableSince(n)
		switch {
		case ok:
			ev("schedulable since", from)
			if since.After(steadySince) {
				steadySince = since
			}
		default:
			schedUnknown = true
			ev("schedulable since", "unknown: this process did not see it uncordoned, and no managedFields entry owns spec.unschedulable (an uncordon that removes the field, as kubectl's and kured's do, leaves none); seen schedulable since "+
				first.UTC().Format(time.RFC3339))
			if first.After(steadySince) {
				steadySince = first
			}
		}
	}
	var rel coord.Release
	if after != nil {
		r := after.ReleasesBy(e.holder(c, j, n, rebootWhy, rebootedAt, readySince, now))
		rel = r
		s.Evidence = append(s.Evidence, r.Evidence...)
		if r.Pending {
			if j.entry.ReleaseDelay > 0 {
				// The release-delay blocker and gate; without a delay
				// the coordinator is only between its start and its
				// first step.
				j.inDelay = true
				s.ReleaseAt = r.By
			}
			set(model.VerdictHeld, "%s", r.Reason)
			return
		}
	}
	steady := now.Sub(steadySince)
	if steady < 0 {
		steady = 0
	}
	grace := model.HumanDuration(e.opts.OrphanGrace)
	if schedUnknown {
		ev("steady for", "unknown: at least "+model.HumanDuration(steady)+", as long as this process has seen it schedulable (grace "+grace+")")
	} else {
		ev("steady for", model.HumanDuration(steady)+" (grace "+grace+")")
	}
	if rel.Stalled {
		// The coordinator provably will not release it (issue 33 §3:
		// kured's pod read and not running past its own bound): a stall
		// before the orphan grace and after it alike, so the verdict does
		// not flip from stalled to not stalled as the grace passes.
		s.Evidence = append(s.Evidence, rel.StallEvidence...)
		// A stall; its release uncordons only a node the coordinator
		// cordoned (never one its entry says was cordoned before).
		j.stalled, s.Stalled = !j.leftCordoned(), true
		set(model.VerdictOrphaned, "%s", rel.StallReason)
		return
	}
	if steady < e.opts.OrphanGrace {
		if schedUnknown {
			set(model.VerdictHeld, "held by %s, which rebooted and is Ready and schedulable, since when is unknown (seen so for %s; orphaned once seen steady for %s)", name, model.HumanDuration(steady), grace)
			return
		}
		set(model.VerdictHeld, "held by %s, which rebooted and is Ready and %s for %s (orphaned after %s)", name, schedWord(n), model.HumanDuration(steady), grace)
		return
	}
	set(model.VerdictOrphaned, "held by %s, which rebooted (%s) and has been Ready and %s for %s", name, rebootWhy, schedWord(n), model.HumanDuration(steady))
}

// holder is the rebooted, Ready holder of j as a coordinator's
// AfterReboot hook sees it, with what this engine saw of its node.
func (e *Engine) holder(c *model.Cluster, j *judged, n *model.Node, rebootWhy string, rebootedAt, readySince, now time.Time) coord.Holder {
	h := coord.Holder{Cluster: c, Ref: j.status.LockRef, Node: n, Entry: j.entry, RebootWhy: rebootWhy,
		RebootedAt: rebootedAt, ReadySince: readySince, Now: now, OrphanGrace: e.opts.OrphanGrace,
		Uncordoned: e.uncordoned[n.Name], MarksRemoved: map[string]time.Time{}}
	for mark, nodes := range e.unmarked {
		if at, ok := nodes[n.Name]; ok {
			h.MarksRemoved[mark] = at
		}
	}
	return h
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

// afterMarks are the node marks every registered lock kind's coordinator
// removes after the reboot (coord.AfterReboot.Marks): the engine records
// when it saw each removed.
var afterMarks = func() []string {
	var out []string
	for _, d := range registry {
		if a, ok := d.(coord.AfterReboot); ok {
			out = append(out, a.Marks()...)
		}
	}
	return out
}()

// marksOn and marksOff are the engine's memory of the marks coordinators
// remove after the reboot (afterMarks): mark -> node -> whether it carried
// it when last judged, and when it was seen removed.
type (
	marksOn  = map[string]map[string]bool
	marksOff = map[string]map[string]time.Time
)

// setIn sets m[k1][k2] = v, making the inner map when needed.
func setIn[V any](m map[string]map[string]V, k1, k2 string, v V) {
	if m[k1] == nil {
		m[k1] = map[string]V{}
	}
	m[k1][k2] = v
}

// schedWord says how a finished holder stands: schedulable, or still
// cordoned by a coordinator that leaves it so until the holder unlocks.
func schedWord(n *model.Node) string {
	if n.Unschedulable {
		return "still cordoned by its coordinator"
	}
	return "schedulable"
}

// entryKey names one entry of one lock across judgements.
func entryKey(s model.LockStatus) string {
	k := s.LockRef.String() + "#" + s.Holder
	if s.Duplicate {
		k += fmt.Sprintf("#%d", s.Entry)
	}
	return k
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
