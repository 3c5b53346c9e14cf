package model

import (
	"fmt"
	"sort"
	"time"
)

// Judge judges every lock of a cluster. The lock engine provides it; the model
// only stores what it returns. It must not change the cluster.
type Judge func(c *Cluster, now time.Time) []LockStatus

// Options are the operator's settings that change derivation.
type Options struct {
	// TargetOS, when set, is the OS image or kernel the fleet upgrades to;
	// empty means the newest seen.
	TargetOS string
}

// BootSeen records when a boot id was first observed on a node.
type BootSeen struct {
	BootID    string
	FirstSeen time.Time
}

// Span is the time a node spent in one phase; End is zero while it lasts.
type Span struct {
	Phase Phase
	Start time.Time
	End   time.Time
}

// Duration returns the span's length, up to now when it is still open.
func (s Span) Duration(now time.Time) time.Duration {
	end := s.End
	if end.IsZero() {
		end = now
	}
	if d := end.Sub(s.Start); d > 0 {
		return d
	}
	return 0
}

// Track is what the model remembers about a node across events.
type Track struct {
	Phase Phase
	// Since is when the node entered Phase (as observed by rebootwatch).
	Since time.Time
	// SinceUnknown is true when the node was first seen in Phase with no
	// evidence of when it entered it: Since is then only the first sighting.
	SinceUnknown bool
	// Boots are the boot ids seen, oldest first (the last few only).
	Boots []BootSeen
	// Spans is the node's current or most recent progress run
	// (pending → draining → rebooting → recovering → done).
	Spans []Span
	// InCycle is true between taking the lock and reaching done.
	InCycle bool
	// CycleBoot is the boot id when the cycle started.
	CycleBoot string
	// Rebooted is true once the node rebooted in the current cycle.
	Rebooted bool
	// CycleStart is when the current cycle started (the lock was seen taken).
	CycleStart time.Time
	// LockKind is the kind of lock the node holds or held in this cycle.
	LockKind LockKind
	// StillCordoned: the node finished its cycle (done) but is still
	// cordoned — its coordinator did not uncordon it. It needs an uncordon.
	StillCordoned bool

	// cycleLock and cycleLockCreated identify the lock of the current
	// cycle (PhaseInput.LockID, LockCreated); doneLock, doneLockCreated
	// and doneBoot the lock and the boot id the last cycle ended with.
	cycleLock, doneLock               string
	cycleLockCreated, doneLockCreated time.Time
	doneBoot                          string
}

// maxBoots is how many boot ids a track remembers.
const maxBoots = 8

// maxTimeline is how many timeline entries the cluster keeps.
const maxTimeline = 2000

// maxCycles is how many finished cycle durations feed the ETA.
const maxCycles = 64

// Cluster is the live state of one cluster. It is not safe for concurrent
// use: one owner applies events and reads derived state.
type Cluster struct {
	// freedBy remembers, per judged lock (lockKey), the release or reap
	// an operator or the agent made, until the lock goes away.
	freedBy map[string]ActionRecorded
	// freedSeen is when each freedBy entry that came from an Event
	// (LockActionSeen) was seen: it is forgotten after seenActionTTL.
	freedSeen map[string]time.Time
	// actionsWatched: the rebootwatch Events are read (freed.go).
	actionsWatched bool
	// pending are freed locks whose entry waits for who freed them.
	pending []pendingRelease

	// Context is the kubeconfig context (or "demo").
	Context string
	Options Options
	// Judge is injected by the wiring; without it every lock is unknown.
	Judge Judge
	// Explain is injected by the wiring; without it no blocker is named.
	Explain Explain
	// LockSources are the sources the lock objects are read from, one per
	// lock kind (the lock engine's registry: lock.Sources), injected by the
	// wiring as Judge is. The verdicts depend on them: one that failed or is
	// forbidden is "could not read" (Unread, exit 1). Without them only the
	// node list is such a source.
	LockSources []SourceName
	// CoordinatorSources are the coordinator kinds read beside the locks
	// (--coordinators: internal/coord/kinds), injected by the wiring. One
	// that failed or is forbidden is "could not read" as a lock source is
	// (Unread, exit 1): what it would block is unknown.
	CoordinatorSources []SourceName
	// Marks reads what the lock-object kinds mark on a node itself (kured's
	// reboot-in-progress annotation), injected by the wiring as Judge is
	// (internal/coord/kinds.NodeMarks): PhaseInput.Marks. Nil: no marks.
	Marks func(n *Node) []NodeCycle
	// AwaitSync makes Recompute wait for a Synced event, so a half-loaded
	// picture (nodes before locks) never shows as phase changes.
	AwaitSync bool
	// PhasesAwaitSync makes only the phases (and the timeline of phases
	// and locks) wait for a Synced event: the locks are judged and the
	// blockers named before it. For an owner that reports the locks while
	// its sources sync (the agent's heartbeat), so that a node is never
	// first seen in a phase a half picture gave it (a holder seen before
	// its lock, idle, whose drain then seems to start when the lock
	// arrives).
	PhasesAwaitSync bool

	nodes       map[string]*Node
	locks       map[LockRef]*LockObject
	volumes     map[string]*Volume
	reboot      map[string]bool
	rebootOK    bool     // a RebootRequiredSet has been applied
	alerts      []string // firing blocking alerts (AlertsFiring)
	alertsOK    bool     // an AlertsFiring with a known result has been applied
	alertFilter bool     // an alert filter is configured (any AlertsFiring seen)
	alertFrom   string   // whose filter (AlertsFiring.From)
	sources     map[SourceName]SourceHealth
	everOK      map[SourceName]bool // sources that have reported ok at least once
	tracks      map[string]*Track
	statuses    []LockStatus
	logged      []LockStatus // the statuses the lock timeline was last derived from (fresh ones)
	derived     bool         // phases were derived at least once (there are phases to hold)
	cycles      []time.Duration
	reboots     []time.Duration // NotReady time of finished in-cycle reboots
	blockers    Blockers
	timeline    []TimelineEntry
	seq         uint64
	names       []string // sorted node names; nil when stale
	volKeys     []string // sorted volume keys (namespace/name); nil when stale
	now         time.Time
	synced      bool
	judged      bool              // locks were judged at least once
	target      OS                // the main family's newest OS, valid while targetOK
	targets     map[string]OS     // newest OS per family (OSFamily), valid while targetOK
	families    []string          // the families seen, most nodes first, valid while targetOK
	familyOf    map[string]string // OSFamily by image (osFamily), emptied by deriveTargets
	targetOK    bool
	coord       map[LockKind]CoordinatorRead // each coordinator kind's slots and node cycles (slots.go)
	decl        *declaredIndex               // coord indexed by node; nil when stale
	pods        podState                     // PDBs, pods on cordoned nodes, kured's blocking pods (pods.go)
	scopes      map[LockRef]LockScope        // the nodes each of a kind's side-by-side locks answers for (LockScopeSet)
}

// NewCluster returns an empty cluster for a context.
func NewCluster(context string, opts Options) *Cluster {
	return &Cluster{
		Context: context,
		Options: opts,
		nodes:   map[string]*Node{},
		locks:   map[LockRef]*LockObject{},
		volumes: map[string]*Volume{},
		reboot:  map[string]bool{},
		sources: map[SourceName]SourceHealth{},
		everOK:  map[SourceName]bool{},
		tracks:  map[string]*Track{},
	}
}

// Apply applies one event observed at now. Derived state (phases, verdicts)
// changes only on Recompute, so a batch of events costs one derivation.
func (c *Cluster) Apply(ev Event, now time.Time) {
	c.now = now
	switch e := ev.(type) {
	case Batch:
		for _, x := range e {
			c.Apply(x, now)
		}
	case NodeUpserted:
		n := e.Node
		if _, ok := c.nodes[n.Name]; !ok {
			c.names = nil
		}
		if old, ok := c.nodes[n.Name]; !ok || old.OSImage != n.OSImage || old.KernelVersion != n.KernelVersion {
			c.targetOK = false
		}
		c.nodes[n.Name] = &n
		t := c.track(n.Name)
		if n.BootID != "" && (len(t.Boots) == 0 || t.Boots[len(t.Boots)-1].BootID != n.BootID) {
			if len(t.Boots) > 0 {
				c.add(TimelineEntry{Time: now, Kind: KindNode, Node: n.Name, Change: ChangeBooted,
					Message: fmt.Sprintf("%s booted (boot id %s → %s)", n.Name, ShortID(t.Boots[len(t.Boots)-1].BootID), ShortID(n.BootID))})
			}
			t.Boots = append(t.Boots, BootSeen{BootID: n.BootID, FirstSeen: now})
			if len(t.Boots) > maxBoots {
				t.Boots = t.Boots[len(t.Boots)-maxBoots:]
			}
		}
	case NodeDeleted:
		if _, ok := c.nodes[e.Name]; ok {
			delete(c.nodes, e.Name)
			delete(c.tracks, e.Name)
			c.targetOK = false
			c.names = nil
			c.add(TimelineEntry{Time: now, Kind: KindNode, Node: e.Name, Change: ChangeDeleted, Message: e.Name + " deleted"})
		}
	case LockUpserted:
		l := e.Lock
		c.locks[l.LockRef] = &l
	case LockDeleted:
		delete(c.locks, e.Ref)
		delete(c.scopes, e.Ref)
	case LockScopeSet:
		if e.Off {
			delete(c.scopes, e.Ref)
			break
		}
		sc := LockScope{Err: e.Err}
		if e.Err == "" {
			sc.Nodes = make(map[string]bool, len(e.Nodes))
			for _, n := range e.Nodes {
				sc.Nodes[n] = true
			}
		}
		if c.scopes == nil {
			c.scopes = map[LockRef]LockScope{}
		}
		c.scopes[e.Ref] = sc
	case VolumeUpserted:
		v := e.Volume
		k := v.Key()
		old, ok := c.volumes[k]
		if !ok {
			c.volKeys = nil
		} else if old.Robustness != v.Robustness {
			c.add(TimelineEntry{Time: now, Kind: KindVolume, Node: v.Node, To: string(v.Robustness),
				Message: fmt.Sprintf("volume %s %s → %s", v.Name, old.Robustness, v.Robustness)})
		}
		c.volumes[k] = &v
	case VolumeDeleted:
		k := e.Namespace + "/" + e.Name
		if _, ok := c.volumes[k]; ok {
			delete(c.volumes, k)
			c.volKeys = nil
		}
	case RebootRequiredSet:
		c.reboot = make(map[string]bool, len(e.Values))
		for k, v := range e.Values {
			c.reboot[k] = v
		}
		c.rebootOK = true
	case AlertsFiring:
		if e.Off {
			c.alerts, c.alertsOK, c.alertFilter, c.alertFrom = nil, false, false, ""
			break
		}
		c.alerts = append([]string(nil), e.Names...)
		c.alertsOK = !e.Unknown
		c.alertFilter = true
		c.alertFrom = e.From
	case SourceChanged:
		old, had := c.sources[e.Health.Name]
		c.sources[e.Health.Name] = e.Health
		if e.Health.Status == StatusOK {
			c.everOK[e.Health.Name] = true
		}
		if had && old.Status != e.Health.Status {
			msg := fmt.Sprintf("source %s %s → %s", e.Health.Name, old.Status, e.Health.Status)
			if e.Health.Message != "" {
				msg += ": " + e.Health.Message
			}
			c.add(TimelineEntry{Time: now, Kind: KindSource, To: string(e.Health.Status), Message: msg})
		}
	case LockActionSeen:
		if e.Action == ActionRelease || e.Action == ActionReap {
			c.attribute(now, ActionRecorded{Lock: e.Lock, Holder: e.Holder, Action: e.Action, Outcome: OutcomeDone, By: e.By}, true)
		}
	case LockActionsWatched:
		c.actionsWatched = e.Watched
	case CoordinatorRead:
		c.applyCoordinator(e, now)
	case Synced:
		c.synced = true
	case PDBUpserted, PDBDeleted, NodePodsSet, BlockingSelectorsSet, BlockingPodsSet:
		c.applyPods(ev)
	case ActionRecorded:
		if e.Outcome == OutcomeDone && (e.Action == ActionRelease || e.Action == ActionReap) {
			c.attribute(now, e, false)
		}
		msg := fmt.Sprintf("%s %s: %s", e.Action, e.Subject(), e.Outcome)
		if e.Message != "" {
			msg += " — " + e.Message
		}
		c.add(TimelineEntry{Time: now, Kind: KindAction, Node: "", Change: string(e.Outcome), Message: msg})
	}
}

func (c *Cluster) track(name string) *Track {
	t, ok := c.tracks[name]
	if !ok {
		t = &Track{}
		c.tracks[name] = t
	}
	return t
}

// Recompute judges the locks and advances every node's phase to now.
//
// While the data phases derive from is stale (StaleInputs) the locks are
// judged (their verdicts say the data may be out of date) but nothing moves
// on from them: every node keeps its last phase, and no phase or lock entry
// is logged. A lock judged unknown because its source is stale maps to no
// node, so deriving from it would end its holder's cycle (done) and start a
// new one (draining) once the source recovered. When the inputs are fresh
// again, what changed meanwhile is derived and logged against the last fresh
// picture.
func (c *Cluster) Recompute(now time.Time) {
	c.now = now
	if c.AwaitSync && !c.synced {
		return
	}
	if c.Judge != nil {
		c.statuses = c.Judge(c, now)
	} else {
		c.statuses = unjudged(c)
	}
	c.flushReleases(now)
	if len(c.StaleInputs()) == 0 && (c.synced || !c.PhasesAwaitSync) {
		c.logLocks(now, c.logged, c.statuses)
		c.logged = c.statuses
		if c.advance(now) && c.Judge != nil {
			// The judgement's gates read the phases (a node mid-cycle
			// stops another lock's action; one cordoned outside any cycle
			// does not): judged before a phase moved — or before any was
			// derived, as in a one-shot snapshot — the statuses' actions
			// would disagree with a plan made now. Judge again.
			c.statuses = c.Judge(c, now)
		}
	}
	c.blockers = Blockers{}
	if c.Explain != nil {
		c.blockers = c.Explain(c, now)
	}
}

// advance moves every node's phase to now from fresh inputs, and says
// whether a phase was derived or changed.
func (c *Cluster) advance(now time.Time) bool {
	moved := false
	holds := map[string]LockStatus{}
	for _, s := range c.statuses {
		if n := s.HolderNode(); n != "" && s.Holder != "" {
			holds[n] = s
		}
	}
	target := c.TargetOS()
	mixed := false
	for _, name := range c.NodeNames() {
		if !c.Upgraded(c.nodes[name], target) {
			mixed = true
			break
		}
	}
	rebootStale := c.staleSource(SourcePrometheus)
	cycles, slots := c.declared()
	for _, name := range c.NodeNames() {
		n := c.nodes[name]
		t := c.track(name)
		s, held := holds[name]
		in := PhaseInput{Holds: held, LockCreated: s.Created, LockKind: s.Kind, RebootRequired: c.rebootRequiredPtr(name),
			RebootStale: rebootStale}
		if held {
			in.LockID = lockKey(s)
		} else if h, ok := slots[name]; ok {
			// A slot of a kind without a lock object.
			in.Holds, in.LockKind, in.LockCreated = true, h.Group.Kind, h.Holder.Since
			in.LockID = h.Group.Name() + "#" + h.Holder.Holder
		}
		if c.Marks != nil {
			in.Marks = c.Marks(n)
		}
		if d, ok := cycles[name]; ok {
			in.Declared, in.LeftCordoned = d.Phase, d.LeftCordoned
			if in.LockKind == "" {
				in.LockKind = d.Kind
			}
		}
		if t.Phase == "" && mixed {
			in.Upgraded = c.Upgraded(n, target)
		}
		from := t.Phase
		finished := Advance(t, n, in, now)
		moved = moved || from != t.Phase
		if finished > 0 {
			c.cycles = append(c.cycles, finished)
			if len(c.cycles) > maxCycles {
				c.cycles = c.cycles[len(c.cycles)-maxCycles:]
			}
		}
		if from == PhaseRebooting && t.Phase != PhaseRebooting {
			c.recordReboot(t, now)
		}
		if from != "" && from != t.Phase {
			c.add(TimelineEntry{Time: now, Kind: KindPhase, Node: name, To: string(t.Phase),
				Message: fmt.Sprintf("%s %s → %s", name, from, t.Phase)})
		}
	}
	c.derived = true
	return moved
}

// StaleInputs names the sources whose data the phases derive from and
// which have delivered it before but are not ok now (stale, failed,
// forbidden): the node list and every lock source. While any is listed,
// Recompute holds every phase and logs no phase or lock entry. A source that
// never delivered is not listed: there is no earlier picture to hold, and
// the phases are derived without it; nor is any before the phases were
// first derived (no phase to hold). Prometheus's reboot-required signal
// is held on its own (PhaseInput.RebootStale).
func (c *Cluster) StaleInputs() []string {
	if !c.derived {
		return nil
	}
	var out []string
	for _, h := range c.Sources() {
		switch h.Name {
		case SourceLonghorn, SourcePDBs, SourcePods, SourcePrometheus:
			continue
		}
		if c.staleSource(h.Name) {
			out = append(out, string(h.Name)+" "+string(h.Status))
		}
	}
	return out
}

// StaleBlockerInputs is StaleInputs plus the pods, which a lock verdict
// may rest on (a coordinator's own pod on its holder: kured's, read or
// missing, issue 33 §3): while any is listed, a blocker that appears or
// clears may come from data that went quiet, and is no news.
func (c *Cluster) StaleBlockerInputs() []string {
	out := c.StaleInputs()
	if c.derived && c.staleSource(SourcePods) {
		out = append(out, string(SourcePods)+" "+string(c.sources[SourcePods].Status))
	}
	return out
}

// staleSource reports whether a source delivered data before and is not
// ok now: what the model holds of it may be out of date.
func (c *Cluster) staleSource(name SourceName) bool {
	h, ok := c.sources[name]
	return ok && c.everOK[name] && h.Status != StatusOK
}

// recordReboot remembers how long the reboot a track just left took, for
// the fleet's median reboot (only a rebooting span seen from its start).
func (c *Cluster) recordReboot(t *Track, now time.Time) {
	for i := len(t.Spans) - 1; i >= 0; i-- {
		s := t.Spans[i]
		if s.Phase != PhaseRebooting {
			continue
		}
		if s.End.Equal(now) && !s.Start.IsZero() {
			c.reboots = append(c.reboots, s.Duration(now))
			if len(c.reboots) > maxCycles {
				c.reboots = c.reboots[len(c.reboots)-maxCycles:]
			}
		}
		return
	}
}

// unjudged is the lock list when no engine is wired: every lock unknown.
func unjudged(c *Cluster) []LockStatus {
	var out []LockStatus
	for _, l := range c.Locks() {
		out = append(out, LockStatus{LockRef: l.LockRef, UID: l.UID, ResourceVersion: l.ResourceVersion,
			Verdict: VerdictUnknown, Reason: "lock engine not wired: no verdict"})
	}
	return out
}

// Synced reports whether the first picture is complete (always true
// without AwaitSync).
func (c *Cluster) Synced() bool { return c.synced || !c.AwaitSync }

// NodeNames returns every node name, sorted.
func (c *Cluster) NodeNames() []string {
	if c.names == nil {
		c.names = sortedKeys(c.nodes)
	}
	return c.names
}

// Node returns a node by name.
func (c *Cluster) Node(name string) (*Node, bool) {
	n, ok := c.nodes[name]
	return n, ok
}

// NodeCount returns the number of nodes.
func (c *Cluster) NodeCount() int { return len(c.nodes) }

// Track returns what the model remembers of a node (nil if unknown).
func (c *Cluster) Track(name string) *Track { return c.tracks[name] }

// StillCordoned reports whether a node finished its reboot cycle (done) but
// is still cordoned: it needs an uncordon, and it is not mid-cycle.
func (c *Cluster) StillCordoned(name string) bool {
	t := c.tracks[name]
	n, ok := c.nodes[name]
	return ok && t != nil && t.Phase == PhaseDone && t.StillCordoned && n.Unschedulable
}

// Phase returns a node's current phase.
func (c *Cluster) Phase(name string) Phase {
	if t := c.tracks[name]; t != nil && t.Phase != "" {
		return t.Phase
	}
	return PhaseUnknown
}

// Locks returns every lock object, sorted by kind, namespace and name.
func (c *Cluster) Locks() []*LockObject {
	out := make([]*LockObject, 0, len(c.locks))
	for _, l := range c.locks {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LockRef.String() < out[j].LockRef.String() })
	return out
}

// Lock returns one lock object.
func (c *Cluster) Lock(ref LockRef) (*LockObject, bool) {
	l, ok := c.locks[ref]
	return l, ok
}

// LockStatuses returns the verdicts of the last Recompute.
func (c *Cluster) LockStatuses() []LockStatus { return c.statuses }

// Volumes returns every Longhorn volume, sorted by namespace/name.
func (c *Cluster) Volumes() []*Volume {
	out := make([]*Volume, 0, len(c.volumes))
	for _, k := range c.volumeKeys() {
		out = append(out, c.volumes[k])
	}
	return out
}

// volumeKeys returns the volumes' keys, sorted: sorted once per change of
// the set of volumes, not on every read (the lock engine's volumes gate,
// the summary and the snapshot each read them all, 10,000 on a large
// cluster). Callers must not modify it.
func (c *Cluster) volumeKeys() []string {
	if c.volKeys == nil {
		c.volKeys = sortedKeys(c.volumes)
	}
	return c.volKeys
}

// VolumeCount returns the number of volumes.
func (c *Cluster) VolumeCount() int { return len(c.volumes) }

// LonghornPresent reports whether Longhorn is installed as far as its source knows.
func (c *Cluster) LonghornPresent() bool {
	h, ok := c.sources[SourceLonghorn]
	if !ok {
		return len(c.volumes) > 0
	}
	return h.Status != StatusNotInstalled && h.Status != StatusDisabled
}

// LonghornUnread says why the volumes cannot be trusted, if so: Longhorn
// has not reported yet, or its source failed, is forbidden or is stale.
// Then "not installed" and "no volume is degraded" are unknown, not true.
func (c *Cluster) LonghornUnread() (string, bool) {
	h, ok := c.sources[SourceLonghorn]
	switch {
	case !ok:
		return "Longhorn has not been read yet", true
	case h.Status == StatusError, h.Status == StatusForbidden, h.Status == StatusStale:
		why := "Longhorn source " + string(h.Status)
		if h.Message != "" {
			why += ": " + h.Message
		}
		return why, true
	}
	return "", false
}

// RebootRequired returns a node's reboot-required signal
// (kured_reboot_required) and whether it is known.
func (c *Cluster) RebootRequired(name string) (required, known bool) {
	required, known = c.reboot[name]
	return required, known
}

// rebootRequiredPtr is RebootRequired as a fresh pointer, nil when unknown
// (the snapshot's JSON null, PhaseInput).
func (c *Cluster) rebootRequiredPtr(name string) *bool {
	v, ok := c.reboot[name]
	if !ok {
		return nil
	}
	return &v
}

// Source returns the last health of a source; ok is false when never reported.
func (c *Cluster) Source(name SourceName) (SourceHealth, bool) {
	h, ok := c.sources[name]
	return h, ok
}

// Sources returns the health of every reported source in display order:
// AllSources first, then any other source (a lock kind's, say) by name.
func (c *Cluster) Sources() []SourceHealth {
	var out []SourceHealth
	known := make(map[SourceName]bool, len(AllSources))
	for _, n := range AllSources {
		known[n] = true
		if h, ok := c.sources[n]; ok {
			out = append(out, h)
		}
	}
	var other []string
	for n := range c.sources {
		if !known[n] {
			other = append(other, string(n))
		}
	}
	sort.Strings(other)
	for _, n := range other {
		out = append(out, c.sources[SourceName(n)])
	}
	return out
}

// NodesFresh reports whether the node list is complete and current enough
// to judge from (DESIGN §6 rule 1).
func (c *Cluster) NodesFresh() bool {
	h, ok := c.sources[SourceNodes]
	return ok && h.Status == StatusOK
}

// RebootDurations returns how long finished in-cycle reboots were NotReady,
// oldest first (the last 64).
func (c *Cluster) RebootDurations() []time.Duration { return c.reboots }

// CycleDurations returns the durations of finished cycles, oldest first.
func (c *Cluster) CycleDurations() []time.Duration { return c.cycles }

// Now returns the time of the last Apply or Recompute.
func (c *Cluster) Now() time.Time { return c.now }

// ShortID is the first 8 bytes of an id (a boot id, a machine id): enough
// to tell two apart in a reason's evidence. The text is raw: renderers
// sanitise it with the rest of the reason.
func ShortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
