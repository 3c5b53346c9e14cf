package watch

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

// Kind says what a line is about: one of the model's timeline kinds (phase,
// lock, action, source, volume, node) or one of the watch's own.
type Kind string

// The watch's own line kinds. Their values are a public interface (-o json).
const (
	KindStart   Kind = "start"   // the first line: what is watched and where the fleet stands
	KindSummary Kind = "summary" // the periodic progress line
	KindDone    Kind = "done"    // --until-done reached
	KindStall   Kind = "stall"   // --stall-after fired
	KindCluster Kind = "cluster" // a cluster could not be opened or read
	KindBlocker Kind = "blocker" // a blocker appeared or cleared
)

// Line is one line of the watch stream.
type Line struct {
	Time time.Time
	// Context is the cluster's context; text lines show it only when the
	// watcher was told to prefix (several clusters).
	Context  string
	Kind     Kind
	Seq      uint64 // the timeline entry's Seq; 0 for the watch's own lines
	Node     string
	Severity model.Severity
	Message  string
	// Progress is set on start and summary lines.
	Progress *Progress
	// Blocker is the kind of blocker a blocker line is about; Nodes the
	// nodes it appeared on or cleared from (several when grouped).
	Blocker model.BlockerKind
	Nodes   []string
	// Prefix says whether the text form shows the context.
	Prefix bool
}

// Progress is the fleet's progress on a start or summary line.
type Progress struct {
	Nodes    int                 `json:"nodes"`
	Upgraded int                 `json:"upgraded"`
	TargetOS string              `json:"targetOS"`
	Phases   map[model.Phase]int `json:"phases"`
	Holders  []Holder            `json:"holders"`
	// Families is the progress per OS family when there are several.
	Families []model.SnapshotFamily `json:"families,omitempty"`
	// ETA is the estimated time left, nil when unknown.
	ETA *string `json:"eta"`
	// Unread lists what was not read (the snapshot's unread, additive):
	// with "locks" in it, an empty holders is unknown, not none.
	Unread []model.UnreadPart `json:"unread,omitempty"`
}

// Holder is one held lock on a summary line.
type Holder struct {
	Kind       model.LockKind `json:"kind"`
	Lock       string         `json:"lock"` // namespace/name
	Holder     string         `json:"holder"`
	HolderNode *string        `json:"holderNode"`
	Verdict    model.Verdict  `json:"verdict"`
	// Step is the coordinator's own word for a slot of a kind without a
	// lock object (a SUC Plan's, FLUO's: "job failed"), whose Verdict is
	// "" (additive).
	Step string `json:"step,omitempty"`
}

// Options configure a Watcher.
type Options struct {
	// Prefix shows the cluster's context on every text line (several clusters).
	Prefix bool
	// SummaryEvery is the period of the summary line; 0 disables it.
	SummaryEvery time.Duration
	// UntilDone makes Step report Done once every node that needed a reboot
	// is done and every lock is free.
	UntilDone bool
	// StallAfter, when positive, makes Step report Stalled when nothing
	// progressed for that long while work remained, or when a lock turned
	// ghost, orphaned or expired while watching.
	StallAfter time.Duration
}

// Outcome is what one Step decided.
type Outcome struct {
	// Done: --until-done is satisfied. Stalled: --stall-after fired.
	Done, Stalled bool
	// Reason explains Done or Stalled in one line.
	Reason string
	// Attention is true when a critical line was produced (the bell).
	Attention bool
}

// Watcher turns one cluster's changes into lines. It is not safe for
// concurrent use; one owner calls Step after each Recompute.
type Watcher struct {
	opts    Options
	lastSeq uint64
	started bool

	lastSummary  time.Time
	lastProgress time.Time
	lastWhat     string
	needed       map[string]bool
	finished     bool
	// notDone is why --until-done could last not tell whether it is done
	// ("" when it could): a line when it changes.
	notDone string
	// blocked are the stalling blockers seen at the last Step, by node and
	// kind (and lock): a line when one appears or clears.
	blocked map[blockerKey]bool
}

// blockerKey names one blocker across Steps: its reason changes (times in
// it), what it is about does not.
type blockerKey struct {
	node string
	kind model.BlockerKind
	lock string
	// muted: a drain refused by a PodDisruptionBudget within its bound,
	// said at once but not yet a stall.
	muted bool
}

// groupAbove is how many nodes gaining or losing the same kind of blocker
// in one Step get a line each; more share one line (a reboot window that
// closes on 4,500 pending nodes is one line).
const groupAbove = 3

// New returns a watcher.
func New(o Options) *Watcher {
	return &Watcher{opts: o, needed: map[string]bool{}}
}

// LastSeq returns the Seq of the last timeline entry turned into a line.
func (w *Watcher) LastSeq() uint64 { return w.lastSeq }

// Needed returns the nodes seen needing a reboot (pending or in a cycle)
// since the watch started, sorted.
func (w *Watcher) Needed() []string {
	out := make([]string, 0, len(w.needed))
	for n := range w.needed {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Step is called after every Recompute of c at now: it returns the lines
// for what changed since the last call (the first call also returns a start
// line), a summary line when one is due, and a done or stall line when that
// condition holds. After a Done or Stalled outcome it returns nothing more.
func (w *Watcher) Step(c *model.Cluster, now time.Time) ([]Line, Outcome) {
	var out []Line
	var oc Outcome
	if w.finished {
		return nil, oc
	}
	first := !w.started
	if first {
		w.started = true
		w.lastSummary, w.lastProgress, w.lastWhat = now, now, "the watch started"
		p := ProgressOf(c, now)
		out = append(out, w.line(c, now, Line{Kind: KindStart, Severity: model.SeverityInfo,
			Message: "watching " + c.Context + ": " + p.Text(), Progress: &p}))
	}
	var turned string
	for _, e := range ordered(c.TimelineSince(w.lastSeq)) {
		w.lastSeq = max(w.lastSeq, e.Seq)
		l := w.line(c, e.Time, Line{Kind: Kind(e.Kind), Seq: e.Seq, Node: e.Node, Message: e.Message})
		l.Severity = severity(e)
		out = append(out, l)
		if progressed(e) {
			w.lastProgress, w.lastWhat = e.Time, e.Message
		}
		if turned == "" && turnedBad(e, first) {
			turned = e.Message
		}
	}
	w.track(c)
	if len(c.StaleBlockerInputs()) == 0 {
		// Blockers named from stale data (a lock judged unknown because
		// its source went quiet, a kured pod no longer read) are no news:
		// the source's line says it, and what really changed is told once
		// the data is fresh.
		out = append(out, w.blockers(c, now)...)
	}

	if w.opts.SummaryEvery > 0 && !first && now.Sub(w.lastSummary) >= w.opts.SummaryEvery {
		w.lastSummary = now
		p := ProgressOf(c, now)
		out = append(out, w.line(c, now, Line{Kind: KindSummary, Severity: model.SeverityInfo, Message: p.Text(), Progress: &p}))
	}

	if w.opts.UntilDone {
		ok, why, unknown := w.done(c)
		switch {
		case ok:
			oc.Done, oc.Reason, w.finished = true, why, true
			out = append(out, w.line(c, now, Line{Kind: KindDone, Severity: model.SeverityInfo, Message: why}))
		case unknown != "" && unknown != w.notDone:
			// Done as far as was read: say once (and on each new reason)
			// why that is not done.
			out = append(out, w.line(c, now, Line{Kind: KindCluster, Severity: model.SeverityWarning,
				Message: "cannot tell whether the window is done: " + unknown}))
		}
		w.notDone = unknown
	}
	if !w.finished && w.opts.StallAfter > 0 {
		if turned != "" {
			oc.Stalled, oc.Reason = true, "a lock needs attention: "+turned
		} else if !workRemains(c) {
			w.lastProgress, w.lastWhat = now, "no work left"
		} else if idle := now.Sub(w.lastProgress); idle >= w.opts.StallAfter {
			oc.Stalled = true
			oc.Reason = fmt.Sprintf("nothing progressed for %s (last progress at %s: %s)",
				model.HumanDuration(idle), w.lastProgress.UTC().Format(time.RFC3339), w.lastWhat)
			if b := c.FleetBlocker(); b != nil {
				// Name what stops the fleet, so the exit says why.
				oc.Reason += "; blocked by " + string(b.Kind) + ": " + b.Reason
				if b.Others > 0 {
					oc.Reason += fmt.Sprintf(" (and %d other node(s) blocked)", b.Others)
				}
			}
		}
		if oc.Stalled {
			w.finished = true
			out = append(out, w.line(c, now, Line{Kind: KindStall, Severity: model.SeverityCritical, Message: oc.Reason}))
		}
	}
	for _, l := range out {
		if l.Severity == model.SeverityCritical {
			oc.Attention = true
		}
	}
	return out, oc
}

// blockers returns a line for every stalling blocker that appeared or
// cleared since the last Step (those of the first Step appear), grouped by
// kind when more than groupAbove nodes share it; a fleet-wide blocker (of
// no node) has a line of its own and is not counted as a node. A node whose first
// blocker is plain queueing (a lock held by a node in a normal cycle) is
// not blocked: none of its blockers makes a line; one whose drain a
// PodDisruptionBudget refuses within the drain's bound gets an info line.
func (w *Watcher) blockers(c *model.Cluster, now time.Time) []Line {
	cur := map[blockerKey]bool{}
	reasons := map[blockerKey]string{}
	bs := c.Blockers()
	add := func(b model.Blocker) {
		if !b.Stalls {
			return
		}
		k := blockerKey{node: b.Node, kind: b.Kind}
		if b.Lock != nil {
			k.lock = b.Lock.String()
		}
		if !cur[k] {
			cur[k], reasons[k] = true, b.Reason
		}
	}
	for _, n := range c.NodeNames() {
		nb := bs.Nodes[n]
		if len(nb) > 0 && !nb[0].Stalls && nb[0].Kind == model.BlockerDrain {
			// A drain a budget refuses, within its bound: said at once
			// (an info line), a stall only past the bound.
			k := blockerKey{node: n, kind: nb[0].Kind, muted: true}
			cur[k], reasons[k] = true, nb[0].Reason
			continue
		}
		if len(nb) == 0 || !nb[0].Stalls {
			// Not blocked: it queues behind a node in a normal cycle
			// (what follows, a Longhorn degraded by that drain, say, is
			// expected until its turn).
			continue
		}
		for _, b := range nb {
			add(b)
		}
	}
	for _, b := range bs.General {
		add(b)
	}
	var appeared, cleared []blockerKey
	for k := range cur {
		if !w.blocked[k] {
			appeared = append(appeared, k)
		}
	}
	for k := range w.blocked {
		if !cur[k] {
			cleared = append(cleared, k)
		}
	}
	w.blocked = cur
	var out []Line
	for _, g := range groupKeys(appeared) {
		if g[0].muted {
			for _, k := range g {
				out = append(out, w.line(c, now, Line{Kind: KindBlocker, Node: k.node, Severity: model.SeverityInfo, Blocker: k.kind,
					Nodes: nodesOf([]blockerKey{k}), Message: "waits: " + reasons[k]}))
			}
			continue
		}
		// A fleet-wide blocker (no node) is not one of the nodes: it has a
		// line of its own, and the nodes are counted without it.
		if k := g[0]; k.node == "" {
			out = append(out, w.line(c, now, Line{Kind: KindBlocker, Severity: model.SeverityWarning, Blocker: k.kind,
				Message: "blocked (fleet-wide): " + reasons[k]}))
			if g = g[1:]; len(g) == 0 {
				continue
			}
		}
		if k := g[0]; len(g) > groupAbove {
			out = append(out, w.line(c, now, Line{Kind: KindBlocker, Severity: model.SeverityWarning, Blocker: k.kind, Nodes: nodesOf(g),
				Message: fmt.Sprintf("%s blocks %d nodes (%s): %s", k.kind, len(g), model.FirstFew(nodesOf(g), groupAbove), reasons[k])}))
			continue
		}
		for _, k := range g {
			out = append(out, w.line(c, now, Line{Kind: KindBlocker, Node: k.node, Severity: model.SeverityWarning, Blocker: k.kind,
				Nodes: nodesOf([]blockerKey{k}), Message: "blocked: " + reasons[k]}))
		}
	}
	for _, g := range groupKeys(cleared) {
		if g[0].muted {
			continue // silently: it became a stall, or the drain went on
		}
		if k := g[0]; k.node == "" {
			out = append(out, w.line(c, now, Line{Kind: KindBlocker, Severity: model.SeverityInfo, Blocker: k.kind,
				Message: fmt.Sprintf("cleared: %s (fleet-wide)", k.kind) + lockNote(k)}))
			if g = g[1:]; len(g) == 0 {
				continue
			}
		}
		if k := g[0]; len(g) > groupAbove {
			msg := fmt.Sprintf("%s cleared on %d nodes (%s)", k.kind, len(g), model.FirstFew(nodesOf(g), groupAbove))
			if k.lock != "" {
				msg += " (" + k.lock + ")"
			}
			out = append(out, w.line(c, now, Line{Kind: KindBlocker, Severity: model.SeverityInfo, Blocker: k.kind, Nodes: nodesOf(g), Message: msg}))
			continue
		}
		for _, k := range g {
			msg := fmt.Sprintf("cleared: %s no longer waits for %s", k.node, k.kind)
			if k.lock != "" {
				msg += " (" + k.lock + ")"
			}
			out = append(out, w.line(c, now, Line{Kind: KindBlocker, Node: k.node, Severity: model.SeverityInfo, Blocker: k.kind,
				Nodes: nodesOf([]blockerKey{k}), Message: msg}))
		}
	}
	return out
}

// lockNote names a blocker key's lock, " (lock)", or "".
func lockNote(k blockerKey) string {
	if k.lock == "" {
		return ""
	}
	return " (" + k.lock + ")"
}

// groupKeys groups blocker keys by kind and lock, in precedence order, each
// group sorted by node.
func groupKeys(ks []blockerKey) [][]blockerKey {
	type gk struct {
		kind  model.BlockerKind
		lock  string
		muted bool
	}
	by := map[gk][]blockerKey{}
	var order []gk
	for _, k := range ks {
		g := gk{k.kind, k.lock, k.muted}
		if _, ok := by[g]; !ok {
			order = append(order, g)
		}
		by[g] = append(by[g], k)
	}
	sort.Slice(order, func(i, j int) bool {
		if ri, rj := order[i].kind.Rank(), order[j].kind.Rank(); ri != rj {
			return ri < rj
		}
		if order[i].muted != order[j].muted {
			return order[j].muted
		}
		return order[i].lock < order[j].lock
	})
	out := make([][]blockerKey, 0, len(order))
	for _, g := range order {
		l := by[g]
		sort.Slice(l, func(i, j int) bool { return l[i].node < l[j].node })
		out = append(out, l)
	}
	return out
}

func nodesOf(g []blockerKey) []string {
	var out []string
	for _, k := range g {
		if k.node != "" {
			out = append(out, k.node)
		}
	}
	return out
}

// Summary returns a summary line now, whatever the period (the caller's
// final line on interrupt, for instance).
func (w *Watcher) Summary(c *model.Cluster, now time.Time) Line {
	p := ProgressOf(c, now)
	return w.line(c, now, Line{Kind: KindSummary, Severity: model.SeverityInfo, Message: p.Text(), Progress: &p})
}

// Unreachable returns the line reporting that a cluster could not be opened
// or read.
func Unreachable(context string, prefix bool, now time.Time, why string) Line {
	return Line{Time: now, Context: context, Prefix: prefix, Kind: KindCluster, Severity: model.SeverityCritical,
		Message: fmt.Sprintf("%s unreachable: %s", context, why)} // the kind column already says "cluster"
}

func (w *Watcher) line(c *model.Cluster, t time.Time, l Line) Line {
	l.Time, l.Context, l.Prefix = t, c.Context, w.opts.Prefix
	return l
}

// ordered returns entries in time order; entries of the same instant go
// source, node, volume, then lock/phase/action in the model's order. Events
// of different sources applied at one instant (a demo step, a burst) then
// read the same on every run; in real time instants differ and the model's
// order stands.
func ordered(es []model.TimelineEntry) []model.TimelineEntry {
	out := append([]model.TimelineEntry(nil), es...)
	group := func(k model.TimelineKind) int {
		switch k {
		case model.KindSource:
			return 0
		case model.KindNode:
			return 1
		case model.KindVolume:
			return 2
		}
		return 3
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.Time.Equal(b.Time) {
			return a.Time.Before(b.Time)
		}
		ga, gb := group(a.Kind), group(b.Kind)
		if ga != gb {
			return ga < gb
		}
		if ga == 0 {
			return a.Message < b.Message
		}
		return false
	})
	return out
}

// track remembers every node seen pending or in a cycle.
func (w *Watcher) track(c *model.Cluster) {
	for _, n := range c.NodeNames() {
		p := c.Phase(n)
		if p == model.PhasePending || p.InCycle() {
			w.needed[n] = true
		}
	}
}

// done reports whether every node that needed a reboot is done and every
// lock is free (DESIGN §9 --until-done). It is never done while that
// cannot be told: a lock source or a node's reboot-required signal not
// read; unknown says why then.
func (w *Watcher) done(c *model.Cluster) (ok bool, why, unknown string) {
	if !c.Readable() || !c.NodesFresh() || c.ReleasesPending() {
		// A freed lock's line still waits for who freed it: ending now
		// would never print it.
		return false, "", ""
	}
	for _, n := range c.NodeNames() {
		p := c.Phase(n)
		if p == model.PhasePending || p.InCycle() || p == model.PhaseUnknown {
			return false, "", ""
		}
	}
	target := c.TargetOS()
	count := 0
	for n := range w.needed {
		node, ok := c.Node(n)
		if !ok {
			continue // deleted: nothing left to wait for
		}
		p := c.Phase(n)
		if p != model.PhaseDone && !(p == model.PhaseIdle && c.Upgraded(node, target)) {
			return false, "", ""
		}
		count++
	}
	for _, s := range c.LockStatuses() {
		if s.Holder != "" {
			return false, "", ""
		}
	}
	var gaps []string
	if why, unread := c.LocksUnread(); unread {
		gaps = append(gaps, "locks unknown: "+why)
	}
	if ns := c.RebootRequiredUnknown(); len(ns) > 0 {
		r := fmt.Sprintf("whether %d node(s) need a reboot is unknown (%s)", len(ns), model.FirstFew(ns, groupAbove))
		if h, ok := c.Source(model.SourcePrometheus); !ok || h.Status != model.StatusOK {
			r += ": Prometheus is not read"
			if ok && h.Message != "" {
				r += " (" + h.Message + ")"
			}
		}
		gaps = append(gaps, r)
	}
	if len(gaps) > 0 {
		return false, "", strings.Join(gaps, "; ")
	}
	if count == 0 {
		return true, "done: no node needs a reboot and every lock is free", ""
	}
	return true, fmt.Sprintf("done: %d node(s) rebooted and done, every lock is free", count), ""
}

// workRemains reports whether the fleet still has something to do: a node
// pending or in a cycle, or a lock held.
func workRemains(c *model.Cluster) bool {
	for _, n := range c.NodeNames() {
		if p := c.Phase(n); p == model.PhasePending || p.InCycle() {
			return true
		}
	}
	for _, s := range c.LockStatuses() {
		if s.Holder != "" {
			return true
		}
	}
	return false
}

// severity classifies a timeline entry from its structured fields.
func severity(e model.TimelineEntry) model.Severity {
	switch e.Kind {
	case model.KindPhase:
		switch model.Phase(e.To) {
		case model.PhaseDown:
			return model.SeverityCritical
		case model.PhaseUnknown:
			return model.SeverityWarning
		}
	case model.KindLock:
		switch {
		case e.Change == model.ChangeReleased:
		case e.Verdict.NeedsAttention():
			return model.SeverityCritical
		case e.Verdict == model.VerdictUnknown:
			return model.SeverityWarning
		}
	case model.KindVolume:
		switch model.Robustness(e.To) {
		case model.RobustnessFaulted:
			return model.SeverityCritical
		case model.RobustnessDegraded, model.RobustnessUnknown:
			return model.SeverityWarning
		}
	case model.KindSource:
		switch model.SourceStatus(e.To) {
		case model.StatusError, model.StatusForbidden, model.StatusStale:
			return model.SeverityWarning
		}
	case model.KindAction:
		if !model.Outcome(e.Change).Succeeded() {
			return model.SeverityWarning
		}
	}
	return model.SeverityInfo
}

// progressed reports whether an entry moves the fleet forward: a phase
// transition (other than to down or unknown), a lock taken or released, a
// boot, or an action that was done.
func progressed(e model.TimelineEntry) bool {
	switch e.Kind {
	case model.KindPhase:
		p := model.Phase(e.To)
		return p != model.PhaseDown && p != model.PhaseUnknown
	case model.KindLock:
		return e.Change == model.ChangeTaken || e.Change == model.ChangeReleased || e.Change == model.ChangeHeld
	case model.KindNode:
		return e.Change == model.ChangeBooted
	case model.KindAction:
		return e.Change == string(model.OutcomeDone)
	}
	return false
}

// turnedBad reports whether a lock entry says a lock turned ghost, orphaned
// or expired while watching. Locks already bad when the watch starts are
// reported (critical lines) but are not a stall: the stall clock covers them.
func turnedBad(e model.TimelineEntry, first bool) bool {
	if e.Kind != model.KindLock || e.Change == model.ChangeReleased {
		return false
	}
	if e.Change != model.ChangeJudged && first {
		return false
	}
	v := e.Verdict
	return v == model.VerdictGhost || v == model.VerdictOrphaned || v == model.VerdictExpired
}

// ProgressOf derives the fleet's progress at now.
func ProgressOf(c *model.Cluster, now time.Time) Progress {
	f := c.Fleet(now)
	p := Progress{Nodes: f.Nodes, Upgraded: f.Upgraded, TargetOS: f.Target.String(), Phases: f.Phases, Holders: []Holder{}}
	for _, fp := range f.Families {
		p.Families = append(p.Families, model.SnapshotFamily{Family: fp.Family, Nodes: fp.Nodes, Upgraded: fp.Upgraded, TargetOS: fp.Target.String()})
	}
	if f.ETA != nil {
		e := model.HumanDuration(*f.ETA)
		p.ETA = &e
	}
	if u := c.UnreadParts(); len(u) > 0 {
		p.Unread = u
	}
	for _, s := range c.LockStatuses() {
		if s.Holder == "" {
			continue
		}
		h := Holder{Kind: s.Kind, Lock: s.Namespace + "/" + s.Name, Holder: s.Holder, Verdict: s.Verdict}
		if n := s.HolderNode(); n != "" {
			h.HolderNode = &n
		}
		p.Holders = append(p.Holders, h)
	}
	for _, g := range c.Slots() {
		if g.Lock {
			continue // listed above, as judged
		}
		for _, sh := range g.Holders {
			h := Holder{Kind: g.Kind, Lock: g.Owner, Holder: sh.Holder, Step: sh.Step}
			if sh.Node != "" {
				n := sh.Node
				h.HolderNode = &n
			}
			p.Holders = append(p.Holders, h)
		}
	}
	return p
}

// Text renders progress in one line:
// "3/7 upgraded · holder cp-3 (kured) · ETA 9m · 3 pending, 1 draining, 3 done".
func (p Progress) Text() string {
	var parts []string
	for _, ph := range model.AllPhases {
		if n := p.Phases[ph]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, ph))
		}
	}
	var hs []string
	for _, h := range p.Holders {
		name := short(h.Holder)
		if h.HolderNode != nil {
			name = *h.HolderNode
		}
		what := string(h.Kind)
		switch {
		case h.Verdict == "" && h.Step != "":
			what += ": " + h.Step
		case h.Verdict != "" && h.Verdict != model.VerdictHeld:
			what += " " + string(h.Verdict)
		}
		hs = append(hs, name+" ("+what+")")
	}
	holder := "no lock held"
	switch len(hs) {
	case 0:
	case 1:
		holder = "holder " + hs[0]
	default:
		holder = "holders " + strings.Join(hs, ", ")
	}
	if why, unread := model.UnreadReason(p.Unread, "locks"); unread {
		// Nothing seen is not nothing held.
		if len(hs) == 0 {
			holder = why
		} else {
			holder += "; other " + why
		}
	}
	eta := "ETA unknown"
	if p.ETA != nil {
		eta = "ETA " + *p.ETA
	}
	up := fmt.Sprintf("%d/%d upgraded", p.Upgraded, p.Nodes)
	if len(p.Families) > 1 {
		var fams []string
		for _, f := range p.Families {
			fams = append(fams, fmt.Sprintf("%s %d/%d", f.Family, f.Upgraded, f.Nodes))
		}
		up += " (" + strings.Join(fams, ", ") + ")"
	}
	s := fmt.Sprintf("%s · %s · %s", up, holder, eta)
	if len(parts) > 0 {
		s += " · " + strings.Join(parts, ", ")
	}
	return s
}

// short shortens a holder id for a progress line to the width sanitize.ID
// shows it in. It stays raw (the line's message is also JSON, which must
// carry exact bytes); Line.Text sanitises the whole message.
func short(id string) string {
	if len(id) > 12 {
		return id[:12] + "…"
	}
	return id
}
