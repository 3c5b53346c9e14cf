// Package explain is the stall explainer (DESIGN §5's blockers): for
// the fleet and for each node that is pending, draining, rebooting,
// recovering or stuck (done · still cordoned), what it waits for, in one
// sentence with the evidence and the action that clears it. Blockers is a
// model.Explain once its Options are bound (For).
//
// It reads a cluster whose phases and verdicts are already derived, and the
// time it is given. It must not write, read a source, judge a lock or start
// goroutines: it only explains what the model and the lock engine already
// concluded. It imports kured's coordinator package only for the shapes it reads
// (kured's configuration and reboot window).
package explain

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/timewindow"
	"github.com/rebootwatch/rebootwatch/model"
)

// Bounds of the blockers that are about time.
const (
	// DefaultDrainBound is how long a drain may take before its node is
	// "draining for too long" and its remaining pods are named.
	DefaultDrainBound = 10 * time.Minute
	// DefaultRebootBound is how long a node may be NotReady in a cycle
	// before its reboot is "taking too long", when this fleet has no reboot
	// on record to compare with.
	DefaultRebootBound = 15 * time.Minute
	// minRebootBound is the least bound relative to the fleet's median.
	minRebootBound = 5 * time.Minute
	// rebootBoundFactor times the fleet's median reboot is the bound.
	rebootBoundFactor = 3
)

// Options bound the blockers that are about time.
type Options struct {
	// DrainBound is how long a drain may take before the blockers name
	// what is left on the node; 0 means DefaultDrainBound.
	DrainBound time.Duration
	// RebootBound is how long a reboot may take (NotReady in a cycle)
	// before it is slow when the fleet has no reboot on record; 0 means
	// DefaultRebootBound. With reboots on record the bound is relative to
	// their median.
	RebootBound time.Duration
}

// For is Blockers with its options bound: the model's Explain.
func For(opts Options) model.Explain {
	return func(c *model.Cluster, now time.Time) model.Blockers { return Blockers(c, now, opts) }
}

// Blockers computes the blockers of every waiting node and of the fleet at
// now. Node blockers are in precedence order (model.AllBlockerKinds). The
// fleet's blocker is the first stalling blocker of the first waiting node —
// nodes in a cycle first (earliest cycle first), then pending nodes (the
// longest pending first), then stuck cordons — with how many other nodes
// are blocked; without one, a fleet-wide blocker (reboot-required unknown).
func Blockers(c *model.Cluster, now time.Time, opts Options) model.Blockers {
	x := newExplainer(c, now, opts)
	names := c.NodeNames()
	out := model.Blockers{Nodes: make(map[string][]model.Blocker, len(names))}
	order := make([]string, 0, len(names))
	for _, name := range names {
		var bs []model.Blocker
		ph := c.Phase(name)
		if ph.InCycle() && c.DeclaresPhase(name) {
			// Its coordinator has the node in its cycle and names what
			// stops it there itself (its kind's blockers, merged by the
			// wiring): the bounds below read lock objects' cycles.
			continue
		}
		switch ph {
		case model.PhasePending:
			bs = x.pending(name)
		case model.PhaseDraining:
			bs = x.draining(name)
		case model.PhaseRebooting:
			bs = x.rebooting(name)
		case model.PhaseRecovering:
			bs = x.recovering(name)
		case model.PhaseDone:
			if c.StillCordoned(name) {
				bs = x.cordoned(name)
			}
		}
		if len(bs) == 0 {
			continue
		}
		byRank(bs)
		out.Nodes[name] = bs
		order = append(order, name)
	}
	keys := make(map[string]orderKey, len(order))
	for _, name := range order {
		keys[name] = x.orderKey(name)
	}
	sort.SliceStable(order, func(i, j int) bool { return keys[order[i]].before(keys[order[j]], order[i], order[j]) })
	for _, name := range order {
		b := out.Nodes[name][0]
		if !b.Stalls {
			continue // queued behind progress under way
		}
		if out.Fleet == nil {
			out.Fleet = &model.FleetBlocker{Blocker: b}
			continue
		}
		out.Fleet.Others++
	}
	out.General = x.general()
	if out.Fleet == nil {
		for _, g := range out.General {
			if g.Stalls {
				out.Fleet = &model.FleetBlocker{Blocker: g}
				break
			}
		}
	}
	return out
}

// byRank sorts a node's few blockers by kind precedence, stably (an
// insertion sort: sort.SliceStable allocated per node).
func byRank(bs []model.Blocker) {
	for i := 1; i < len(bs); i++ {
		for j := i; j > 0 && bs[j].Kind.Rank() < bs[j-1].Kind.Rank(); j-- {
			bs[j], bs[j-1] = bs[j-1], bs[j]
		}
	}
}

// explainer is what every node's blockers share.
type explainer struct {
	c    *model.Cluster
	now  time.Time
	opts Options

	// pools are kured's lock objects with their settings, in the model's
	// order: one, or one per node pool when kured runs as several
	// DaemonSets (kuredLocks > 1), each answering for the nodes of its
	// scope (model.LockScope).
	pools      []*kpool
	kuredLocks int           // kured lock objects in the cluster
	hasKured   bool          // a kured lock object is in the cluster
	locks      []lockHolders // locks with holders, in the model's order

	// named: kured's DaemonSets were named (--kured-daemonset), so only
	// those are read and another node pool's kured may run unseen; their
	// pods scope their nodes even when one is named (scoped).
	named bool

	// What every pending node shares is worked out once per Blockers
	// call, not once per node (BenchmarkExplain measures it at scale).
	alert, lh shared
	lockFor   map[model.LockRef]*shared
}

// kpool is one kured DaemonSet's lock and settings: what a node of its
// pool waits for.
type kpool struct {
	ref       model.LockRef
	cfg       *kured.Config
	window    *timewindow.Window
	windowErr error
	win       shared // its window blocker, shared by its nodes
}

// scoped says whether each kured lock answers only for the nodes its
// DaemonSet's pods run on (its scope): with several kured DaemonSets (node
// pools), and with any named (--kured-daemonset: an unnamed pool may run
// beside them). A single kured discovered answers for every node
// (docs/coordinators.md, "kured as several DaemonSets").
func (x *explainer) scoped() bool { return x.kuredLocks > 1 || (x.named && len(x.pools) > 0) }

// poolFor is the kured pool a node answers to: the only kured lock's when
// there is one, discovered (it answers for every node); otherwise (scoped)
// the one whose scope (the nodes its DaemonSet's pods run on) holds the
// node. A node no pool read runs on, in several pools, or whose pool
// cannot be told (a scope not read) gets a blocker that says so instead
// (blocked), never a pool picked for it.
func (x *explainer) poolFor(name string) (p *kpool, b model.Blocker, blocked bool) {
	if !x.scoped() || len(x.pools) == 0 {
		if len(x.pools) > 0 {
			return x.pools[0], b, false
		}
		return nil, b, false
	}
	var in, all []string
	var unread []string
	for _, kp := range x.pools {
		all = append(all, kp.ref.Namespace+"/"+kp.ref.Name)
		sc, ok := x.c.LockScope(kp.ref)
		switch {
		case !ok:
			unread = append(unread, kp.ref.Namespace+"/"+kp.ref.Name+": its pods are not read yet")
		case sc.Err != "":
			unread = append(unread, kp.ref.Namespace+"/"+kp.ref.Name+": "+sc.Err)
		case sc.Nodes[name]:
			in = append(in, kp.ref.Namespace+"/"+kp.ref.Name)
			p = kp
		}
	}
	pools := strings.Join(all, ", ")
	what := "kured's DaemonSets (node pools)"
	if x.named {
		what = "kured DaemonSets read (named by --kured-daemonset)"
	}
	evidence := []model.Evidence{ev(what, pools)}
	switch {
	case len(in) == 1:
		// Its pods say this kured runs on it (another pool's pods unread
		// could only add a second kured, which is not a second pool).
		return p, b, false
	case len(in) > 1:
		return nil, model.Blocker{Kind: model.BlockerLock, Node: name, Stalls: true, Evidence: append(evidence, ev("kured pods on "+name, strings.Join(in, ", "))),
			Reason: fmt.Sprintf("%s runs the kured pods of %d DaemonSets (%s): each takes its own lock, so two kureds may drain and reboot it at once", name, len(in), strings.Join(in, ", ")),
			Short:  "in two kured pools", Clears: "give each kured DaemonSet's pool its own nodes (nodeSelector, affinity)"}, true
	case len(unread) > 0:
		return nil, model.Blocker{Kind: model.BlockerUnknown, Node: name, Evidence: append(evidence, ev("unread", strings.Join(unread, "; "))),
			Reason: fmt.Sprintf("which of kured's node pools %s belongs to cannot be told: %s", name, strings.Join(unread, "; ")),
			Short:  "kured pool unknown", Clears: "grant list/watch on pods in kured's namespace to read which kured runs on it"}, true
	case x.named:
		// Only the named DaemonSets are read: a kured not named may run
		// on it (another node pool), or none (a rollout between pods, a
		// taint none tolerates). Unknown, never "no kured", and never a
		// named pool's window, blocking pods or lock.
		return nil, model.Blocker{Kind: model.BlockerUnknown, Node: name, Evidence: append(evidence, ev("kured pods on "+name, "none of these")),
			Reason: fmt.Sprintf("%s needs a reboot, but none of the kured DaemonSets read (%s) runs on it: it may be the node pool of a kured DaemonSet not named, whose settings and lock are not read", name, pools),
			Short:  "not in a kured pool read", Clears: "name its pool's kured DaemonSet too (--kured-daemonset ns/a,ns/b; the chart's kured.daemonSets), or schedule one of these on it"}, true
	}
	return nil, model.Blocker{Kind: model.BlockerLock, Node: name, Stalls: true, Evidence: append(evidence, ev("kured pods on "+name, "none")),
		Reason: fmt.Sprintf("%s needs a reboot but no kured runs on %s: none of kured's DaemonSets (%s) has a pod on it, so nothing will reboot it", name, name, pools),
		Short:  "no kured pool", Clears: "schedule one kured DaemonSet on it (its nodeSelector, affinity or tolerations)"}, true
}

// poolOfHolder is the pool of the kured lock a node holds, nil when it
// holds none with settings.
func (x *explainer) poolOfHolder(name string) *kpool {
	for _, l := range x.locks {
		for _, s := range l.entries {
			if s.HolderNode() != name {
				continue
			}
			for _, kp := range x.pools {
				if kp.ref == l.ref {
					return kp
				}
			}
		}
	}
	return nil
}

// shared is a blocker that is the same for every node but for its name:
// worked out once, then stamped per node.
type shared struct {
	done, ok bool
	b        model.Blocker
	reason   func(node string) string
}

// get works the blocker out on first use and returns it for node.
func (s *shared) get(node string, build func() (model.Blocker, func(string) string, bool)) (model.Blocker, bool) {
	if !s.done {
		s.done = true
		s.b, s.reason, s.ok = build()
	}
	if !s.ok {
		return model.Blocker{}, false
	}
	b := s.b
	b.Node, b.Reason = node, s.reason(node)
	// Nodes share the evidence: an append must copy it, never write into
	// another node's.
	b.Evidence = b.Evidence[:len(b.Evidence):len(b.Evidence)]
	return b, true
}

// lockHolders is one lock object's entries that have a holder.
type lockHolders struct {
	ref     model.LockRef
	entries []model.LockStatus
}

func newExplainer(c *model.Cluster, now time.Time, opts Options) *explainer {
	if opts.DrainBound <= 0 {
		opts.DrainBound = DefaultDrainBound
	}
	if opts.RebootBound <= 0 {
		opts.RebootBound = DefaultRebootBound
	}
	x := &explainer{c: c, now: now, opts: opts}
	for _, l := range c.Locks() {
		if l.Kind == model.LockKured {
			x.hasKured = true
			x.kuredLocks++
		}
		if s, ok := l.Spec.(*kured.Spec); ok && s != nil && s.Named {
			x.named = true
		}
		if s, ok := l.Spec.(*kured.Spec); ok && s != nil && s.Config != nil {
			kp := &kpool{ref: l.LockRef, cfg: s.Config}
			kp.window, kp.windowErr = s.Config.RebootWindow()
			x.pools = append(x.pools, kp)
		}
	}
	idx := map[model.LockRef]int{}
	for _, s := range c.LockStatuses() {
		if s.Holder == "" {
			continue
		}
		i, ok := idx[s.LockRef]
		if !ok {
			i = len(x.locks)
			idx[s.LockRef] = i
			x.locks = append(x.locks, lockHolders{ref: s.LockRef})
		}
		x.locks[i].entries = append(x.locks[i].entries, s)
	}
	return x
}

// orderKey places a waiting node for the fleet: in a cycle first
// (earliest cycle start), then pending (pending longest first), then the
// rest; ties by name.
type orderKey struct {
	rank int
	at   time.Time
}

func (a orderKey) before(b orderKey, an, bn string) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	return an < bn
}

func (x *explainer) orderKey(name string) orderKey {
	t := x.c.Track(name)
	if t == nil {
		return orderKey{rank: 3}
	}
	switch p := x.c.Phase(name); {
	case p.InCycle():
		return orderKey{0, t.CycleStart}
	case p == model.PhasePending:
		return orderKey{1, t.Since}
	}
	return orderKey{2, t.Since}
}

func ev(k, v string) model.Evidence { return model.Evidence{Key: k, Value: v} }

// pending: the node needs a reboot and has no lock. In kured's order: the
// reboot window, then the blocking alerts and pods, then the lock; then
// Longhorn, which kured does not check but the next drain depends on.
func (x *explainer) pending(name string) []model.Blocker {
	p, pb, blocked := x.poolFor(name)
	if blocked {
		return []model.Blocker{pb}
	}
	var buf [4]model.Blocker // most nodes have one or two: keep them exact
	out := buf[:0]
	if b, ok := x.windowBlocker(p, name); ok {
		out = append(out, b)
	}
	if b, ok := x.alertBlocker(name); ok && x.poolChecksAlerts(p) {
		out = append(out, b)
	}
	out = append(out, x.podBlockers(p, name)...)
	out = append(out, x.lockBlockers(p, name)...)
	if b, ok := x.longhornBlocker(name); ok {
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil
	}
	return append(make([]model.Blocker, 0, len(out)), out...)
}

// windowBlocker: kured reboots only inside its window (the window of the
// node's pool's kured).
func (x *explainer) windowBlocker(p *kpool, name string) (model.Blocker, bool) {
	if p == nil {
		return model.Blocker{}, false
	}
	b, ok := p.win.get(name, func() (model.Blocker, func(string) string, bool) { return x.windowShared(p) })
	if ok && x.scoped() {
		b.Evidence = append(b.Evidence, ev("kured DaemonSet (node pool)", p.ref.Namespace+"/"+p.ref.Name))
	}
	return b, ok
}

func (x *explainer) windowShared(p *kpool) (model.Blocker, func(string) string, bool) {
	k := p.cfg
	from := func(flag string) string {
		if f, ok := k.From[flag]; ok {
			return f
		}
		return "default"
	}
	evidence := []model.Evidence{
		ev("kured --reboot-days", strings.Join(k.RebootDays, ",")+" ("+from("reboot-days")+")"),
		ev("kured --start-time", k.StartTime+" ("+from("start-time")+")"),
		ev("kured --end-time", k.EndTime+" ("+from("end-time")+")"),
		ev("kured --time-zone", k.TimeZone+" ("+from("time-zone")+")"),
	}
	if p.windowErr != nil {
		// kured exits at start with these settings (its window, or any
		// other setting it rejects first): quote its own error, never a
		// window of ours.
		said := kured.QuoteStartError(p.windowErr.Error())
		return model.Blocker{Kind: model.BlockerWindow, Stalls: true,
				Evidence: append(evidence, ev("kured exits with", said)), Clears: "fix kured's settings: kured cannot start with them", Short: "kured cannot start"},
			func(name string) string {
				return fmt.Sprintf("%s cannot reboot: kured cannot start with these settings: %s", name, said)
			}, true
	}
	w := p.window
	if w.Contains(x.now) {
		return model.Blocker{}, nil, false
	}
	evidence = append(evidence, ev("now", x.now.In(w.Location()).Format("Mon 15:04 MST")))
	b := model.Blocker{Kind: model.BlockerWindow, Stalls: true, Evidence: evidence}
	opens := w.Opens(x.now)
	if at, ok := w.NextOpen(x.now); ok {
		b.Until = at
		b.Clears = "wait: it " + opens
		b.Short = "window: opens in " + model.HumanDuration(at.Sub(x.now))
	} else {
		b.Clears = "set a reboot day in kured's --reboot-days"
		b.Short = "window: never opens"
	}
	// When it opens leads (a narrow screen cuts the end of the line); the
	// window's days and hours follow, and Clears gives the opening time.
	when := "opens in " + model.HumanDuration(b.Until.Sub(x.now))
	if b.Until.IsZero() {
		when = "never opens, no reboot day is set"
	}
	win := w.String()
	if _, hours, ok := strings.Cut(win, " "); ok && everyDay(k.RebootDays) {
		win = "every day " + hours
	}
	tail := fmt.Sprintf(" waits for kured's reboot window: %s (%s)", when, win)
	return b, func(name string) string { return name + tail }, true
}

// everyDay reports whether kured's --reboot-days names all seven weekdays
// (its default): the window's text then says "every day".
func everyDay(days []string) bool {
	w, err := lock.ParseRebootWindow(days, "00:00", "23:59", "UTC")
	if err != nil {
		return false
	}
	sunday := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i := range 7 {
		if !w.Contains(sunday.AddDate(0, 0, i)) {
			return false
		}
	}
	return true
}

// alertBlocker: firing alerts match the blocking-alert filter.
func (x *explainer) alertBlocker(name string) (model.Blocker, bool) {
	return x.alert.get(name, x.alertShared)
}

func (x *explainer) alertShared() (model.Blocker, func(string) string, bool) {
	names, known := x.c.FiringAlerts()
	if !known || len(names) == 0 {
		return model.Blocker{}, nil, false
	}
	whose := x.c.AlertFilterFrom()
	if whose == "" {
		whose = "the alert filter"
	}
	tail := fmt.Sprintf(" waits: %s %s firing (%s)", count(len(names), "blocking alert", "blocking alerts"), isAre(len(names)), model.FirstFew(names, 3))
	return model.Blocker{Kind: model.BlockerAlert, Stalls: true,
		Evidence: []model.Evidence{ev("firing", strings.Join(names, ", ")), ev("filter", whose)},
		Clears:   "resolve the alerts (or narrow the alert filter)", Short: "alert: " + model.FirstFew(names, 1)}, func(name string) string { return name + tail }, true
}

// podBlockers: pods on the node match kured's --blocking-pod-selector; or
// a selector could not be read here (kured itself blocks every reboot on a
// selector it cannot list, such as an invalid one).
func (x *explainer) podBlockers(p *kpool, name string) []model.Blocker {
	if len(x.c.BlockingSelectors()) == 0 {
		return nil
	}
	pods, unread := x.c.BlockingPodsOn(name)
	if x.scoped() {
		pods, unread = poolSelectors(p, pods, unread)
	}
	var out []model.Blocker
	if len(pods) > 0 {
		keys := make([]string, len(pods))
		b := model.Blocker{Kind: model.BlockerPod, Node: name, Stalls: true, Clears: "wait for the pods to finish, or move them off " + name}
		for i, p := range pods {
			keys[i] = p.Key()
			b.Evidence = append(b.Evidence, ev("pod "+p.Key(), p.Phase+", matches "+strings.Join(p.Selectors, " | ")))
		}
		b.Reason = fmt.Sprintf("%s waits: kured's --blocking-pod-selector matches %s on it (%s)", name, count(len(pods), "pod", "pods"), model.FirstFew(keys, 3))
		b.Short = "pod: " + model.FirstFew(keys, 1)
		out = append(out, b)
	}
	for _, sel := range slices.Sorted(maps.Keys(unread)) {
		why := unread[sel]
		if why == "not read yet" {
			continue
		}
		b := model.Blocker{Kind: model.BlockerPod, Node: name, Evidence: []model.Evidence{ev("selector", sel), ev("read", why)}}
		if strings.Contains(strings.ToLower(why), "invalid") {
			b.Stalls = true
			b.Reason = fmt.Sprintf("%s waits: kured's --blocking-pod-selector %q is invalid (%s), and kured blocks every reboot on it", name, sel, why)
			b.Clears = "fix kured's --blocking-pod-selector"
			b.Short = "pod selector invalid"
		} else {
			b.Reason = fmt.Sprintf("cannot tell whether pods matching kured's --blocking-pod-selector %q are on %s (%s)", sel, name, why)
			b.Clears = "grant list/watch on pods to read them"
			b.Short = "pods: cannot tell"
		}
		out = append(out, b)
	}
	return out
}

// lockBlockers: the node's coordinator's lock is full, held by others
// (with kured as several DaemonSets, only its own pool's lock, at that
// DaemonSet's --concurrency).
func (x *explainer) lockBlockers(p *kpool, name string) []model.Blocker {
	var out []model.Blocker
	for _, l := range x.locks {
		if x.hasKured && l.ref.Kind != model.LockKured {
			// A pending node is kured's (its reboot-required signal and
			// marks are kured's): with kured here it waits for kured's
			// lock, not for a fleetlock group's.
			continue
		}
		if x.scoped() && (p == nil || l.ref != p.ref) {
			continue // another pool's lock
		}
		capacity := 1
		if l.ref.Kind == model.LockKured {
			if lp := x.poolOf(l.ref); lp != nil && lp.cfg.Concurrency > 1 {
				capacity = lp.cfg.Concurrency
			}
		}
		mine := false
		for _, s := range l.entries {
			if s.HolderNode() == name {
				mine = true
			}
		}
		if mine || len(l.entries) < capacity {
			continue
		}
		if x.lockFor == nil {
			x.lockFor = map[model.LockRef]*shared{}
		}
		sh := x.lockFor[l.ref]
		if sh == nil {
			sh = &shared{}
			x.lockFor[l.ref] = sh
		}
		b, _ := sh.get(name, func() (model.Blocker, func(string) string, bool) {
			// The entry to name: the first that stalls the fleet, else the first.
			s := l.entries[0]
			for _, e := range l.entries {
				if lockStalls(e) {
					s = e
					break
				}
			}
			b, reason := x.lockBlocker(l, s, capacity)
			return b, reason, true
		})
		out = append(out, b)
	}
	return out
}

// poolChecksAlerts says whether the alerts read bear on a node of pool p:
// always, but where kured runs as several DaemonSets and the alert filter
// is kured's own (the sourceset names it so), only for a pool whose kured
// sets a --prometheus-url (another pool's kured checks no alert).
func (x *explainer) poolChecksAlerts(p *kpool) bool {
	if x.kuredLocks <= 1 || p == nil || !strings.HasPrefix(x.c.AlertFilterFrom(), "kured's own") {
		return true
	}
	return p.cfg.PrometheusURL != ""
}

// poolOf is the pool of a kured lock object, nil without settings.
func (x *explainer) poolOf(ref model.LockRef) *kpool {
	for _, kp := range x.pools {
		if kp.ref == ref {
			return kp
		}
	}
	return nil
}

// poolSelectors keeps of the blocking pods on a node and the selectors
// that could not be read those of its pool's kured's
// --blocking-pod-selector values (another pool's kured does not check the
// node).
func poolSelectors(p *kpool, pods []model.BlockingPod, unread map[string]string) ([]model.BlockingPod, map[string]string) {
	if p == nil {
		return nil, nil
	}
	mine := map[string]bool{}
	for _, sel := range p.cfg.BlockingPodSelectors {
		mine[sel] = true
	}
	var keep []model.BlockingPod
	for _, bp := range pods {
		var sels []string
		for _, sel := range bp.Selectors {
			if mine[sel] {
				sels = append(sels, sel)
			}
		}
		if len(sels) > 0 {
			bp.Selectors = sels
			keep = append(keep, bp)
		}
	}
	var un map[string]string
	for sel, why := range unread {
		if mine[sel] {
			if un == nil {
				un = map[string]string{}
			}
			un[sel] = why
		}
	}
	return keep, un
}

// pendingClears says what clears a lock whose verdict's action its gates
// refuse: the action, once the failing gates pass, and why they fail (a
// snapshot has no lock detail to point at).
func pendingClears(p *model.PendingAction) string {
	gates := "gates " + strings.ReplaceAll(p.Gates(), ", ", " and ") + " pass"
	if len(p.Failed) == 1 {
		gates = "gate " + p.Failed[0].Key + " passes"
	}
	var why []string
	for _, g := range p.Failed {
		why = append(why, g.Value)
	}
	return fmt.Sprintf("%s it once the %s (%s)", p.Action, gates, strings.Join(why, "; "))
}

// lockStalls says whether a holder stops the fleet rather than working
// through its cycle: any verdict but held, or kured's manual lock.
func lockStalls(s model.LockStatus) bool {
	return s.Verdict != model.VerdictHeld || (s.Kind == model.LockKured && s.Holder == kured.ManualHolder)
}

func (x *explainer) lockBlocker(l lockHolders, s model.LockStatus, capacity int) (model.Blocker, func(string) string) {
	ref := s.LockRef
	b := model.Blocker{Kind: model.BlockerLock, Stalls: lockStalls(s), Lock: &ref}
	who := s.Holder
	if n := s.HolderNode(); n != "" {
		who = n
	}
	held := "held by " + who
	if d, ok := s.HeldFor(x.now); ok {
		held += " for " + model.HumanDuration(d)
	}
	if n := s.HolderNode(); n != "" && s.Verdict == model.VerdictHeld {
		held += " (" + string(x.c.Phase(n)) + ")"
	}
	b.Evidence = []model.Evidence{ev("lock", ref.String()), ev("holder", s.Holder), ev("verdict", string(s.Verdict)+": "+s.Reason)}
	if len(l.entries) > 1 {
		b.Evidence = append(b.Evidence, ev("holders", fmt.Sprintf("%d (the lock allows %d)", len(l.entries), capacity)))
	}
	for _, a := range []model.Action{model.ActionRelease, model.ActionReap} {
		for _, have := range s.Actions {
			if have == a && b.Action == "" {
				b.Action = a
			}
		}
	}
	verdict := string(s.Verdict)
	switch {
	case b.Action != "":
		b.Clears = string(b.Action) + " it"
	case s.Kind == model.LockKured && s.Holder == kured.ManualHolder:
		verdict = "a manual lock"
		b.Clears = "remove the manual lock to resume kured's reboots"
	case s.Verdict == model.VerdictHeld:
		b.Clears = "wait for " + who + " to finish its cycle"
	case s.Pending != nil:
		b.Clears = pendingClears(s.Pending)
	case s.Verdict == model.VerdictGhost:
		b.Clears = "reap it once the gates allow (see the lock's detail)"
	case s.Verdict == model.VerdictOrphaned || s.Verdict == model.VerdictExpired:
		b.Clears = "release it once the gates allow (see the lock's detail)"
	default:
		b.Clears = "see the lock's detail: why it is " + string(s.Verdict)
	}
	tail := fmt.Sprintf(" waits for the %s lock, %s, %s", s.Kind, held, verdict)
	b.Short = "lock: " + who
	if s.Verdict != model.VerdictHeld || verdict != string(s.Verdict) {
		b.Short += " (" + verdict + ")"
	}
	if b.Action != "" {
		tail += ": " + b.Clears
	}
	return b, func(name string) string { return name + tail }
}

// longhornBlocker: degraded (rebuilding) or faulted volumes make the next
// drain unsafe.
func (x *explainer) longhornBlocker(name string) (model.Blocker, bool) {
	return x.lh.get(name, x.longhornShared)
}

func (x *explainer) longhornShared() (model.Blocker, func(string) string, bool) {
	if !x.c.LonghornPresent() {
		return model.Blocker{}, nil, false
	}
	if _, unread := x.c.LonghornUnread(); unread {
		return model.Blocker{}, nil, false
	}
	var bad []string
	var evidence []model.Evidence
	for _, v := range x.c.Volumes() {
		// As the volumes gate (plan.go): degraded or faulted. Longhorn
		// reports a detached volume as unknown; it has no replica a drain
		// could take.
		if v.Robustness != model.RobustnessDegraded && v.Robustness != model.RobustnessFaulted {
			continue
		}
		bad = append(bad, v.Name)
		evidence = append(evidence, ev("volume "+v.Key(), volumeState(v)))
	}
	if len(bad) == 0 {
		return model.Blocker{}, nil, false
	}
	head := fmt.Sprintf("Longhorn is not ready for the next node: %s degraded or faulted (%s); draining ", count(len(bad), "volume", "volumes"), model.FirstFew(bad, 3))
	return model.Blocker{Kind: model.BlockerLonghorn, Stalls: true, Evidence: evidence,
			Clears: "wait for Longhorn to rebuild the replicas", Short: "longhorn: " + count(len(bad), "volume", "volumes")},
		func(name string) string { return head + name + " now can leave a volume without a healthy replica" }, true
}

// volumeState says how one volume stands: robustness and replicas.
func volumeState(v *model.Volume) string {
	s := string(v.Robustness)
	if v.Replicas > 0 {
		s += fmt.Sprintf(", %d replicas wanted", v.Replicas)
	}
	if v.Node != "" {
		s += ", attached to " + v.Node
	}
	return s
}

// draining: a drain taking longer than the bound (drainBound), with what
// keeps it from finishing: pods whose PodDisruptionBudget allows no
// disruption, pods that do not leave, or why that cannot be told. Within
// the bound, a budget that refuses an eviction is said at once, as a
// blocker that does not stall.
func (x *explainer) draining(name string) []model.Blocker {
	t := x.c.Track(name)
	if t == nil {
		return nil
	}
	d := x.now.Sub(t.Since)
	bound, basis := x.drainBound(name, t)
	// Within the bound a drain is under way: only a budget that refuses
	// an eviction is said then (muted, it does not stall yet), since the
	// drain cannot finish before that changes.
	within := d <= bound
	took := model.HumanDuration(d)
	over := ""
	if basis != "--drain-bound" {
		over = ", longer than " + basis + " " + model.HumanDuration(bound)
	}
	b := model.Blocker{Kind: model.BlockerDrain, Node: name, Stalls: true,
		Evidence: []model.Evidence{ev("draining since", t.Since.UTC().Format(time.RFC3339)+sinceNote(t)), ev("bound", model.HumanDuration(bound)+" ("+basis+")")}}
	if n, ok := x.c.Node(name); ok && !n.Unschedulable {
		if within {
			return nil
		}
		// Holding the lock, not cordoned: the coordinator has not begun
		// the drain (both cordon first). Its pods are watched only once
		// it is cordoned, so "not read yet" would never clear.
		b.Reason = fmt.Sprintf("%s has held the lock for %s but is not cordoned: its coordinator has not begun the drain", name, took)
		b.Short = "not cordoned " + took
		b.Clears = "look at the coordinator's log for " + name
		return []model.Blocker{b}
	}
	pods, known := x.c.NodePods(name)
	if !known {
		if within {
			return nil
		}
		b.Reason = fmt.Sprintf("%s has been draining for %s; cannot tell why the drain is slow (%s)", name, took, x.unreadWhy(model.SourcePods, "its pods are not read yet"))
		b.Short = "slow drain " + took
		b.Clears = "look at the pods still on the node"
		return []model.Blocker{b}
	}
	var left []*model.Pod
	for i := range pods {
		if p := &pods[i]; !p.DrainSkips() && !p.Terminal() {
			left = append(left, p)
		}
	}
	if len(left) == 0 {
		if within {
			return nil
		}
		b.Reason = fmt.Sprintf("%s has been draining for %s with no pod left to evict: its coordinator has not gone on to reboot it", name, took)
		b.Clears = "look at the coordinator's log on " + name
		b.Short = "drain: no pod left"
		return []model.Blocker{b}
	}
	// Budgets that refuse the eviction of a pod still there.
	type hold struct {
		pdb  *model.PDB
		pods []string
	}
	var holds []*hold
	byPDB := map[string]*hold{}
	var free, terminating []string
	for _, p := range left {
		blocked := false
		for _, pdb := range x.c.PDBsCovering(p) {
			if !pdb.Refuses(p) {
				continue
			}
			blocked = true
			h := byPDB[pdb.Key()]
			if h == nil {
				h = &hold{pdb: pdb}
				byPDB[pdb.Key()] = h
				holds = append(holds, h)
			}
			h.pods = append(h.pods, p.Key())
		}
		switch {
		case blocked:
		case !p.Deleting.IsZero():
			terminating = append(terminating, p.Key())
		default:
			free = append(free, p.Key())
		}
	}
	for _, h := range holds {
		p := h.pdb
		v := fmt.Sprintf("%d disruptions allowed, %d healthy of %d desired (%d expected)", p.DisruptionsAllowed, p.CurrentHealthy, p.DesiredHealthy, p.ExpectedPods)
		if p.MinAvailable != "" {
			v += ", minAvailable " + p.MinAvailable
		}
		if p.MaxUnavailable != "" {
			v += ", maxUnavailable " + p.MaxUnavailable
		}
		if !p.Observed {
			v += " (status older than its spec)"
		}
		if p.BlockedReason != "" {
			v += "; " + p.BlockedReason + model.Aside(p.BlockedMessage)
		}
		b.Evidence = append(b.Evidence, ev("PodDisruptionBudget "+p.Key(), v+"; pods on "+name+": "+model.FirstFew(h.pods, 5)))
	}
	if len(terminating) > 0 {
		b.Evidence = append(b.Evidence, ev("terminating", model.FirstFew(terminating, 5)))
	}
	if len(free) > 0 {
		b.Evidence = append(b.Evidence, ev("not held by a budget", model.FirstFew(free, 5)))
	}
	if len(holds) > 0 {
		h := holds[0]
		more := ""
		if len(holds) > 1 {
			more = fmt.Sprintf(" (and %s more)", count(len(holds)-1, "budget", "budgets"))
		}
		held := fmt.Sprintf("PodDisruptionBudget %s allows 0 disruptions (%d/%d healthy) for %s still on it%s",
			h.pdb.Key(), h.pdb.CurrentHealthy, h.pdb.DesiredHealthy, model.FirstFew(h.pods, 3), more)
		b.Reason = fmt.Sprintf("%s has been draining for %s%s: %s", name, took, over, held)
		b.Clears = "scale up the workload behind " + h.pdb.Key() + " or relax the budget"
		b.Short = "PDB " + h.pdb.Key()
		if within {
			b.Stalls = false
			b.Reason = fmt.Sprintf("%s is draining (%s): %s; a stall after %s (%s)", name, took, held, model.HumanDuration(bound), basis)
			b.Short = "drain: PDB " + h.pdb.Key() + " allows 0 disruptions"
		}
		if why, unread := x.unread(model.SourcePDBs); unread {
			b.Evidence = append(b.Evidence, ev("budgets", "may be out of date: "+why))
		}
		return []model.Blocker{b}
	}
	if within {
		return nil
	}
	pdbNote := ", none held by a PodDisruptionBudget"
	if why, unread := x.unread(model.SourcePDBs); unread {
		pdbNote = "; cannot tell whether a PodDisruptionBudget holds them (" + why + ")"
	}
	if len(terminating) == len(left) {
		b.Reason = fmt.Sprintf("%s has been draining for %s%s: %s still terminating (%s)%s", name, took, over, count(len(left), "pod is", "pods are"), model.FirstFew(terminating, 3), pdbNote)
		b.Clears = "look at why the pods do not stop (finalizers, long grace periods)"
		b.Short = "drain: " + count(len(left), "pod stuck", "pods stuck")
		return []model.Blocker{b}
	}
	keys := make([]string, len(left))
	for i, p := range left {
		keys[i] = p.Key()
	}
	b.Reason = fmt.Sprintf("%s has been draining for %s%s with %s still on it (%s)%s", name, took, over, count(len(left), "pod", "pods"), model.FirstFew(keys, 3), pdbNote)
	b.Clears = "look at why these pods are not evicted"
	b.Short = "drain: " + count(len(left), "pod", "pods") + " left"
	return []model.Blocker{b}
}

// drainBound is how long the drain of a node may take before it stalls,
// counted from when it took the lock, and where that bound comes from:
// kured's own --drain-timeout when the node is kured's and it is set (past
// it kured aborts the drain: it releases the lock and uncordons, or with
// --force-reboot reboots anyway, so a drain still under way is a stall);
// else --drain-bound. kured's default 0 waits forever, which is no bound to
// wait for. A kured holder first waits out kured's --drain-delay before it
// cordons (cmd/kured/main.go, drain), so that delay is added.
func (x *explainer) drainBound(name string, t *model.Track) (time.Duration, string) {
	bound, basis := x.opts.DrainBound, "--drain-bound"
	if t.LockKind != model.LockKured {
		return bound, basis
	}
	// The settings of the kured whose lock the node holds (its pool's).
	kp := x.poolOfHolder(name)
	if kp == nil && x.kuredLocks <= 1 && len(x.pools) > 0 {
		kp = x.pools[0]
	}
	if kp == nil {
		return bound, basis
	}
	k := kp.cfg
	if k.DrainTimeout > 0 && k.Known("drain-timeout") {
		bound, basis = k.DrainTimeout, "kured's --drain-timeout"
	}
	if k.DrainDelay > 0 && k.Known("drain-delay") {
		bound += k.DrainDelay
		basis = "kured's --drain-delay + " + strings.TrimPrefix(basis, "kured's ")
	}
	return bound, basis
}

// unread says why a source's data cannot be trusted: never reported, or
// in error, forbidden or stale.
func (x *explainer) unread(name model.SourceName) (string, bool) {
	h, ok := x.c.Source(name)
	switch {
	case !ok:
		return string(name) + " not read yet", true
	case h.Status == model.StatusError || h.Status == model.StatusForbidden || h.Status == model.StatusStale:
		why := string(h.Status)
		if h.Message != "" {
			why += ": " + h.Message
		}
		return why, true
	}
	return "", false
}

// unreadWhy is unread's reason, or dflt when the source is fine.
func (x *explainer) unreadWhy(name model.SourceName, dflt string) string {
	if why, ok := x.unread(name); ok {
		return why
	}
	return dflt
}

func sinceNote(t *model.Track) string {
	if t.SinceUnknown {
		return " (first seen; it may have started earlier)"
	}
	return ""
}

// rebooting: NotReady in a cycle for longer than the fleet's usual reboot.
func (x *explainer) rebooting(name string) []model.Blocker {
	n, ok := x.c.Node(name)
	t := x.c.Track(name)
	if !ok || t == nil {
		return nil
	}
	since := t.Since
	if _, known, rs := n.Ready(); known && !rs.IsZero() && !rs.After(x.now) && rs.Before(since) {
		since = rs
	}
	d := x.now.Sub(since)
	bound, basis := x.opts.RebootBound, "no reboot of this fleet seen yet"
	var median time.Duration
	if rs := x.c.RebootDurations(); len(rs) > 0 {
		median = model.Median(rs)
		bound = max(rebootBoundFactor*median, minRebootBound)
		basis = fmt.Sprintf("this fleet's median is %s", model.HumanDuration(median))
	}
	if d <= bound {
		return nil
	}
	evidence := []model.Evidence{ev("NotReady since", since.UTC().Format(time.RFC3339)), ev("bound", model.HumanDuration(bound))}
	if median > 0 {
		evidence = append(evidence, ev("median reboot", fmt.Sprintf("%s over %d reboots", model.HumanDuration(median), len(x.c.RebootDurations()))))
	}
	return []model.Blocker{{Kind: model.BlockerSlowReboot, Node: name, Stalls: true, Evidence: evidence,
		Reason: fmt.Sprintf("%s has been rebooting for %s; %s", name, model.HumanDuration(d), basis),
		Short:  "slow reboot: " + model.HumanDuration(d),
		Clears: "look at the node's console: it may be stuck in firmware, a file system check or its boot"}}
}

// recovering: rebooted and holding its lock; kured may wait out its
// --lock-release-delay before releasing. A holder on which kured never
// finished its cycle (model.LockStatus.Stalled) stalls the fleet on
// itself: the lock's release clears it.
func (x *explainer) recovering(name string) []model.Blocker {
	var out []model.Blocker
	for _, s := range x.c.LockStatuses() {
		if s.HolderNode() == name && s.Stalled {
			ref := s.LockRef
			b := model.Blocker{Kind: model.BlockerLock, Node: name, Stalls: true, Lock: &ref,
				Evidence: []model.Evidence{ev("lock", ref.String()), ev("verdict", string(s.Verdict)+": "+s.Reason)},
				Reason:   s.Reason, Short: string(s.Kind) + " not finished", Clears: "release it once the gates allow (see the lock's detail)"}
			if s.Pending != nil {
				b.Clears = pendingClears(s.Pending)
			}
			for _, e := range s.Evidence {
				if e.Key == "kured's pod" {
					b.Evidence = append(b.Evidence, e)
				}
			}
			for _, a := range s.Actions {
				if a == model.ActionRelease {
					b.Action, b.Clears = a, "release it"
				}
			}
			if n, ok := x.c.Node(name); ok && n.Unschedulable {
				b.Clears += " (which also uncordons " + name + ", as kured would)"
			}
			b.Reason += ": " + b.Clears
			out = append(out, b)
			continue
		}
		if s.HolderNode() != name || s.ReleaseAt.IsZero() || !s.ReleaseAt.After(x.now) {
			continue
		}
		left := s.ReleaseAt.Sub(x.now)
		out = append(out, model.Blocker{Kind: model.BlockerReleaseDelay, Node: name, Stalls: true, Until: s.ReleaseAt,
			Evidence: []model.Evidence{ev("lock", s.LockRef.String()), ev("releases at", s.ReleaseAt.UTC().Format(time.RFC3339))},
			Reason:   fmt.Sprintf("%s rebooted; %s waits out its --lock-release-delay before releasing the lock: %s left", name, s.Kind, model.HumanDuration(left)),
			Clears:   "wait " + model.HumanDuration(left), Short: "release delay: " + model.HumanDuration(left)})
	}
	return out
}

// cordoned: done · still cordoned, nobody will uncordon it.
func (x *explainer) cordoned(name string) []model.Blocker {
	by := "its coordinator"
	if t := x.c.Track(name); t != nil && t.LockKind != "" {
		by = string(t.LockKind)
	}
	return []model.Blocker{{Kind: model.BlockerCordon, Node: name, Stalls: true, Action: model.ActionUncordon,
		Evidence: []model.Evidence{ev("schedulable", "false"), ev("holds a lock", "no")},
		Reason:   fmt.Sprintf("%s rebooted and holds no lock but is still cordoned: %s did not uncordon it", name, by),
		Clears:   "uncordon it", Short: "uncordon"}}
}

// general: blockers of the fleet as a whole.
func (x *explainer) general() []model.Blocker {
	out := x.unseenWaiters()
	if b, ok := x.unknownBlocker(); ok {
		out = append(out, b)
	}
	return out
}

// unseenWaiters: a fleetlock Lease (any lock but kured's) whose holder
// stalls — a ghost, an orphan, an expired or ambiguous holder. Zincati
// decides on the node and publishes no reboot-required signal, so the nodes
// waiting for the Lease are not seen: the block is the fleet's.
func (x *explainer) unseenWaiters() []model.Blocker {
	var out []model.Blocker
	for _, l := range x.locks {
		if l.ref.Kind == model.LockKured {
			continue // kured's waiters are seen: pending nodes
		}
		for _, s := range l.entries {
			if !lockStalls(s) {
				continue
			}
			b, _ := x.lockBlocker(l, s, 1)
			who := s.Holder
			if n := s.HolderNode(); n != "" {
				who = n
			}
			held := ""
			if d, ok := s.HeldFor(x.now); ok {
				held = " for " + model.HumanDuration(d)
			}
			b.Reason = fmt.Sprintf("no node can take the %s lock %s/%s: held by %s%s, %s", s.Kind, s.Namespace, s.Name, who, held, s.Verdict)
			if b.Action != "" || s.Pending != nil {
				b.Reason += ": " + b.Clears
			}
			out = append(out, b)
			break
		}
	}
	return out
}

// unknownBlocker: kured runs, or whether it does is unknown (its source
// not read), and whether nodes need a reboot is unknown
// (model.Cluster.RebootRequiredUnknown). Not without kured: fleetlock's
// Zincati decides on the node and publishes no reboot-required signal.
func (x *explainer) unknownBlocker() (model.Blocker, bool) {
	unknown := x.c.RebootRequiredUnknown()
	if len(unknown) == 0 {
		return model.Blocker{}, false
	}
	why, clears := "kured_reboot_required is absent for them (is kured's metrics endpoint scraped?)", "have Prometheus scrape kured's metrics"
	h, ok := x.c.Source(model.SourcePrometheus)
	switch {
	case !ok || h.Status == model.StatusDisabled || h.Status == model.StatusNotInstalled:
		why, clears = "Prometheus is not configured, so kured_reboot_required is not read", "give --prometheus-url"
	case h.Status != model.StatusOK:
		why, clears = fmt.Sprintf("Prometheus is %s%s", h.Status, model.Aside(h.Message)), "fix the Prometheus connection"
	}
	evidence := []model.Evidence{ev("nodes", fmt.Sprintf("%d: %s", len(unknown), model.FirstFew(unknown, 5)))}
	if w, unread := x.c.LockSourceUnread(model.LockKured); unread && !x.hasKured {
		evidence = append(evidence, ev("kured", "whether kured runs here is unknown: "+w))
	}
	return model.Blocker{Kind: model.BlockerUnknown, Stalls: true,
		Evidence: evidence,
		Reason:   fmt.Sprintf("nothing to do as far as can be told: whether %s %s a reboot is unknown: %s", count(len(unknown), "node", "nodes"), needs(len(unknown)), why),
		Clears:   clears, Short: fmt.Sprintf("reboot-required unknown (%d)", len(unknown))}, true
}

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func needs(n int) string {
	if n == 1 {
		return "needs"
	}
	return "need"
}
