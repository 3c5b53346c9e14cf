package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/internal/coord/kinds"
	"github.com/rebootwatch/rebootwatch/internal/explain"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/notify"
	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/model"
)

// Iteration results (the result label of rebootwatch_agent_iterations_total).
const (
	resultOK       = "ok"       // judged from fresh data
	resultDegraded = "degraded" // the API answered, but some data is unusable (forbidden, stale, unknown verdicts)
	resultError    = "error"    // the API could not be read (timeout, unreachable)
)

// Source is a started source: it reports readiness through WaitForSync.
type Source interface {
	WaitForSync(ctx context.Context) error
}

// Starter starts one source feeding sink (sources/kube, sources/longhorn).
type Starter struct {
	Name  string
	Start func(ctx context.Context, sink func(model.Event)) (Source, error)
}

// Agent is one running rebootwatch-agent.
type Agent struct {
	Config   Config
	Log      *slog.Logger
	Clock    func() time.Time
	Identity string

	// Client is the timeout-bound client for the agent's own calls (the
	// freshness probe) and leader election.
	Client  kubernetes.Interface
	Engine  *lock.Engine
	Actor   *lock.Actor
	Sources []Starter

	Health  *Health
	Metrics *Metrics
	// Notify posts to the --notify-url targets and measures the blocked
	// time; New makes one without targets when nil.
	Notify *notify.Notifier
	// Coordinators reads the coordinator kinds once (each iteration; nil:
	// off): the selected kinds' ReadAll (Config.Coordinators, by default
	// every registered kind) with the agent's clients.
	Coordinators func(ctx context.Context, now time.Time) []kinds.Result

	leader atomic.Bool
	// settled: every source's WaitForSync returned and every event they
	// sent before it was applied (the model.Synced that says so came
	// through the same channel).
	settled atomic.Bool
	// lost is closed when leadership is lost, so a write under way stops
	// instead of landing after another replica took over.
	leadMu   sync.Mutex
	lost     chan struct{}
	leaderCh chan struct{}
	events   chan model.Event

	cluster       *model.Cluster
	nodesSource   *model.SourceHealth // the nodes health the sources last reported
	lastKey       string              // fingerprint of the last judgement
	probeOverrode bool                // the last probe failed and replaced the nodes health
	iteration     uint64
	// coordinators are the coordinator kinds as last read; only the loop
	// goroutine reads and writes them (the cluster's Explain runs there).
	coordinators []kinds.Result
	// toldCoordinator: the one startup line naming a configured
	// coordinator that cannot be read was logged.
	toldCoordinator bool
	// wasLeader, unrecordedPending and recordedWrites are the loop's:
	// on taking the lead, the agent looks once for a write of its own
	// whose Event was never recorded (unrecorded.go).
	wasLeader         bool
	unrecordedPending bool
	recordedWrites    map[string]bool
}

// New fills in an agent's defaults. Client, Engine, Actor must be set.
func New(a *Agent) *Agent {
	if a.Clock == nil {
		a.Clock = time.Now
	}
	if a.Log == nil {
		a.Log = slog.Default()
	}
	if a.Metrics == nil {
		a.Metrics = NewMetrics()
	}
	if a.Health == nil {
		a.Health = NewHealth(a.Clock, a.Config.Interval)
	}
	if a.Notify == nil {
		a.Notify = notify.NewWithTargets(nil, notify.Options{})
	}
	a.leaderCh = make(chan struct{}, 1)
	a.recordedWrites = map[string]bool{}
	a.events = make(chan model.Event, 1024)
	a.cluster = model.NewCluster("agent", model.Options{})
	a.cluster.LockSources = lock.Sources()
	a.cluster.Marks = kinds.NodeMarks
	if a.Coordinators != nil {
		a.cluster.CoordinatorSources = a.Config.Coordinators.CoordinatorSources()
	}
	base := explain.For(explain.Options{DrainBound: a.Config.DrainBound})
	a.cluster.Judge, a.cluster.Explain = a.Engine.Judge, func(c *model.Cluster, now time.Time) model.Blockers {
		return coord.Merge(base(c, now), kinds.Blockers(a.coordinators))
	}
	// The heartbeat reports the locks while the sources sync; the phases
	// (and so the blockers that time them) wait for the whole picture.
	a.cluster.PhasesAwaitSync = true
	if !a.Config.LeaderElect {
		a.leader.Store(true)
		a.Metrics.IsLeader.Set(1)
	}
	return a
}

// IsLeader reports whether this agent may act now.
func (a *Agent) IsLeader() bool { return a.leader.Load() }

// SetLeader is called by leader election.
func (a *Agent) SetLeader(on bool) {
	if a.leader.Swap(on) == on {
		return
	}
	a.leadMu.Lock()
	if on {
		a.lost = make(chan struct{})
		a.Metrics.IsLeader.Set(1)
	} else {
		if a.lost != nil {
			close(a.lost)
			a.lost = nil
		}
		a.Metrics.IsLeader.Set(0)
	}
	a.leadMu.Unlock()
	select {
	case a.leaderCh <- struct{}{}:
	default:
	}
}

// whileLeader returns a context that ends when ctx does or when this agent
// loses leadership (never, without leader election).
func (a *Agent) whileLeader(ctx context.Context) (context.Context, context.CancelFunc) {
	actx, cancel := context.WithCancel(ctx)
	a.leadMu.Lock()
	lost := a.lost
	a.leadMu.Unlock()
	if lost != nil {
		go func() {
			select {
			case <-lost:
				cancel()
			case <-actx.Done():
			}
		}()
	}
	return actx, cancel
}

// sink is what the sources call from their goroutines.
func (a *Agent) sink(ctx context.Context) func(model.Event) {
	return func(ev model.Event) {
		select {
		case a.events <- ev:
		case <-ctx.Done():
		}
	}
}

// Run starts the sources and runs the loop until ctx ends. Leader election,
// when enabled, is run by the caller (RunLeaderElection) and calls SetLeader.
func (a *Agent) Run(ctx context.Context) error {
	var waits []func(context.Context) error
	var names []string
	for _, st := range a.Sources {
		src, err := st.Start(ctx, a.sink(ctx))
		if err != nil {
			return fmt.Errorf("start source %s: %w", st.Name, err)
		}
		waits = append(waits, src.WaitForSync)
		names = append(names, st.Name)
	}
	a.Health.SetSynced(false, "waiting for "+strings.Join(names, ", "))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.waitForSync(ctx, names, waits)
	}()
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.Notify.Run(ctx)
	}()

	ticker := time.NewTicker(a.Config.Interval)
	defer ticker.Stop()
	a.iterate(ctx, "start")
	wasSettled := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-a.events:
			a.apply(ev)
			a.drain()
			a.updateReady()
			// React at once when the judgement changed (a node deleted
			// makes its lock a ghost), or when every source has just
			// delivered its first picture (an action skipped for want of
			// it is taken now); otherwise wait for the interval.
			settled := a.settled.Load()
			if a.judgementChanged() || (settled && !wasSettled) {
				a.iterate(ctx, "event")
			}
			wasSettled = settled
		case <-a.leaderCh:
			a.iterate(ctx, "leader")
		case <-ticker.C:
			a.iterate(ctx, "interval")
		}
	}
}

// waitForSync marks readiness once every source has synced, retrying each
// wait so a source that cannot sync yet (forbidden, unreachable) keeps
// readiness false with the reason.
func (a *Agent) waitForSync(ctx context.Context, names []string, waits []func(context.Context) error) {
	for i, w := range waits {
		for {
			err := w(ctx)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			a.Health.SetSynced(false, names[i]+": "+err.Error())
			a.Log.Warn("source not synced", "source", names[i], "error", err.Error())
			select {
			case <-ctx.Done():
				return
			case <-time.After(a.Config.RequestTimeout):
			}
		}
	}
	a.Log.Info("sources synced", "synced", names)
	if a.Config.ReclaimStartupPages {
		reclaimStartupPages(a.Log, "synced")
	}
	// Through the events, after everything the sources sent before they
	// settled: the loop is settled once it has applied all of that.
	select {
	case a.events <- model.Synced{}:
	case <-ctx.Done():
	}
}

// updateReady sets readiness: every source settled and none reports
// stale, error or forbidden (not-installed and disabled are fine).
func (a *Agent) updateReady() {
	if !a.settled.Load() {
		return
	}
	var bad []string
	for _, h := range a.cluster.Sources() {
		if !h.Usable() && h.Status != model.StatusNotInstalled && h.Status != model.StatusDisabled {
			msg := string(h.Name) + " " + string(h.Status)
			if h.Message != "" {
				msg += " (" + sanitize.Line(h.Message) + ")"
			}
			if hint := coordinatorHint(h); hint != "" {
				msg += "; " + hint
				if !a.toldCoordinator {
					a.toldCoordinator = true
					a.Log.Warn("configured coordinator unusable: no action is taken until it is readable or turned off",
						"coordinator", string(h.Name), "status", string(h.Status), "message", sanitize.Line(h.Message), "hint", hint)
				}
			}
			bad = append(bad, msg)
		}
	}
	a.Health.SetSynced(len(bad) == 0, strings.Join(bad, "; "))
}

// coordinatorHint says how to turn off a configured coordinator whose
// source failed (a cluster that does not run it): "" for other sources.
func coordinatorHint(h model.SourceHealth) string {
	if h.Status != model.StatusError {
		return ""
	}
	switch h.Name {
	case model.SourceKured:
		return "if this cluster runs no kured, turn it off: --kured=false (chart: kured.enabled=false)"
	case model.SourceFleetlock:
		return "if this cluster runs no fleetlock, turn it off: --fleetlock=false (chart: fleetlock.enabled=false)"
	}
	return ""
}

// apply applies one event to the model, remembering the nodes source health.
func (a *Agent) apply(ev model.Event) {
	a.note(ev)
	a.cluster.Apply(ev, a.Clock())
}

func (a *Agent) note(ev model.Event) {
	switch e := ev.(type) {
	case model.Batch:
		for _, x := range e {
			a.note(x)
		}
	case model.SourceChanged:
		if e.Health.Name == model.SourceNodes {
			h := e.Health
			a.nodesSource = &h
		}
	case model.Synced:
		a.settled.Store(true)
	}
}

// drain applies every event already queued.
func (a *Agent) drain() {
	for {
		select {
		case ev := <-a.events:
			a.apply(ev)
		default:
			return
		}
	}
}

// judgementChanged recomputes and reports whether any lock's verdict,
// holder or allowed actions differ from the last judgement.
func (a *Agent) judgementChanged() bool {
	a.cluster.Recompute(a.Clock())
	return a.fingerprint() != a.lastKey
}

func (a *Agent) fingerprint() string {
	var b strings.Builder
	for _, s := range a.cluster.LockStatuses() {
		fmt.Fprintf(&b, "%s#%s#%s#%s#%v;", s.LockRef, s.ResourceVersion, s.Holder, s.Verdict, s.Actions)
	}
	return b.String()
}

// BlockerReport is the fleet's blocker in the heartbeat: what stops the
// fleet now (the blockers step's), null when nothing does.
type BlockerReport struct {
	Kind   model.BlockerKind `json:"kind"`
	Node   string            `json:"node,omitempty"`
	Reason string            `json:"reason"`
	Clears string            `json:"clears,omitempty"`
	Action model.Action      `json:"action,omitempty"`
	Others int               `json:"others"`
	// Stuck is true when it does not clear by itself; BlockedFor is how
	// long the fleet has been stuck behind it with nothing progressing.
	Stuck      bool   `json:"stuck"`
	BlockedFor string `json:"blockedFor,omitempty"`
}

func blockerReport(b *model.FleetBlocker, blocked time.Duration) *BlockerReport {
	if b == nil {
		return nil
	}
	r := &BlockerReport{Kind: b.Kind, Node: bound(b.Node), Reason: bound(b.Reason), Clears: bound(b.Clears), Action: b.Action, Others: b.Others, Stuck: notify.Stuck(b)}
	if blocked > 0 {
		r.BlockedFor = model.HumanDuration(blocked)
	}
	return r
}

// bound is a heartbeat value from the cluster, bounded as the logger bounds
// a string attribute (sanitize.LogValueMax runes, start and end kept).
func bound(s string) string { return sanitize.Middle(s, sanitize.LogValueMax) }

// LockReport is one lock in the heartbeat.
type LockReport struct {
	Kind       model.LockKind `json:"kind"`
	Lock       string         `json:"lock"`
	Holder     string         `json:"holder,omitempty"`
	HolderNode string         `json:"holderNode,omitempty"`
	Verdict    model.Verdict  `json:"verdict"`
	Reason     string         `json:"reason"`
	HeldFor    string         `json:"heldFor,omitempty"`
	Action     model.Action   `json:"action,omitempty"`
	Outcome    model.Outcome  `json:"outcome,omitempty"`
	Message    string         `json:"message,omitempty"`
}

// SourceReport is one source in the heartbeat.
type SourceReport struct {
	Name    model.SourceName   `json:"name"`
	Status  model.SourceStatus `json:"status"`
	Message string             `json:"message,omitempty"`
}

// iterate is one iteration: probe the API, judge, act (leader only), log
// the heartbeat, update health and metrics.
func (a *Agent) iterate(ctx context.Context, trigger string) {
	a.iteration++
	start := a.Clock()
	a.drain()

	probeErr := a.probe(ctx)
	if ctx.Err() != nil {
		return // shutting down: a cancelled probe is not an API failure
	}
	result := resultOK
	var apiErr string
	nodes := a.nodesSource
	if probeErr != nil {
		apiErr = "node list: " + probeErr.Error()
		// Forbidden: the API answered and RBAC says no (a restart would not
		// help; the heartbeat and readiness say why). Anything else,
		// including 401 (credentials rejected), is an error that makes
		// /healthz fail after 3× interval.
		st := model.StatusError
		if apierrors.IsForbidden(probeErr) {
			st = model.StatusForbidden
			result = resultDegraded
		} else {
			result = resultError
		}
		nodes = &model.SourceHealth{Name: model.SourceNodes, Status: st, Message: apiErr}
	}
	if nodes == nil && a.probeOverrode {
		nodes = &model.SourceHealth{Name: model.SourceNodes, Status: model.StatusError, Message: "the node informer has not reported yet"}
	}
	a.probeOverrode = probeErr != nil
	if nodes != nil {
		a.cluster.Apply(model.SourceChanged{Health: *nodes}, start)
	}
	a.readCoordinators(ctx, start)
	now := a.Clock()
	a.cluster.Recompute(now)
	statuses := a.cluster.LockStatuses()
	a.Metrics.SetLocks(statuses, now)
	slots := a.cluster.Slots()
	a.Metrics.SetSlots(slots)
	a.Metrics.SetHolders(statuses, slots...)

	leader := a.IsLeader()
	if leader && !a.wasLeader {
		a.unrecordedPending = true
	}
	a.wasLeader = leader
	// A new leader records the Event of a write of the agent's own that
	// a leader killed between the two never recorded, once; from a
	// settled picture of the lock objects, and not in a dry run.
	if leader && a.unrecordedPending && a.settled.Load() && probeErr == nil && !a.Config.DryRun && a.Client != nil {
		if a.recordUnrecorded(ctx, now) {
			a.unrecordedPending = false
		}
	}
	// Notifications go out from the leader only (every replica tracks),
	// and only once every source delivered its first picture: a lock that
	// looks like a ghost in half a picture is not told.
	var blocked time.Duration
	var blocker *model.FleetBlocker
	if a.settled.Load() {
		// What stops the fleet, from a settled picture only (half a
		// picture can look blocked).
		blocker = a.cluster.FleetBlocker()
		blocked = a.Notify.Judged(now, statuses, blocker, notify.Progress(a.cluster), leader)
	}
	a.Metrics.SetFleet(a.cluster.Fleet(now), blocker, blocked)
	a.Metrics.SetNodes(nodeSeries(a.cluster))
	a.Metrics.SetRebootRequired(rebootRequired(a.cluster))
	reports := make([]LockReport, 0, len(statuses))
	for _, s := range statuses {
		r := LockReport{Kind: s.Kind, Lock: bound(s.Namespace + "/" + s.Name), Holder: bound(s.Holder), HolderNode: bound(s.HolderNode()),
			Verdict: s.Verdict, Reason: bound(s.Reason)}
		if d, ok := s.HeldFor(now); ok {
			r.HeldFor = model.HumanDuration(d)
		}
		if s.Verdict == model.VerdictUnknown && result == resultOK {
			result = resultDegraded
		}
		action, why := a.policy(s.Verdict)
		switch {
		case action == "":
			if why != "" {
				r.Outcome, r.Message = model.OutcomeSkipped, why
			}
		case probeErr != nil:
			r.Action, r.Outcome, r.Message = action, model.OutcomeSkipped, "not acting: the API could not be read this iteration ("+apiErr+")"
		case !a.settled.Load():
			r.Action, r.Outcome, r.Message = action, model.OutcomeSkipped, "not acting: not every source has delivered its first picture yet"
		case !leader || !a.IsLeader(): // re-checked before each write
			r.Action, r.Outcome, r.Message = action, model.OutcomeSkipped, "not the leader"
		default:
			a.act(ctx, s, action, now, &r)
		}
		r.Message = bound(r.Message)
		reports = append(reports, r)
	}
	var sources []SourceReport
	for _, h := range a.cluster.Sources() {
		sources = append(sources, SourceReport{Name: h.Name, Status: h.Status, Message: bound(h.Message)})
		if !h.Usable() && h.Status != model.StatusNotInstalled && h.Status != model.StatusDisabled && result == resultOK {
			result = resultDegraded
		}
	}
	a.lastKey = a.fingerprint()
	a.updateReady()

	var healthErr error
	if result == resultError {
		healthErr = errors.New(apiErr)
	} else {
		a.Metrics.LastSuccess.Set(float64(a.Clock().UnixNano()) / 1e9)
	}
	a.Health.Iteration(healthErr)
	a.Metrics.Iterations.WithLabelValues(result).Inc()
	healthy, healthMsg := a.Health.Healthy()

	attrs := []any{
		"iteration", a.iteration, "trigger", trigger, "result", result, "leader", leader,
		"identity", a.Identity, "dryRun", a.Config.DryRun,
		"durationMs", a.Clock().Sub(start).Milliseconds(),
		"nodes", a.cluster.NodeCount(), "volumes", a.cluster.VolumeCount(),
		"sources", sources, "locks", reports, "blocker", blockerReport(blocker, blocked), "healthy", healthy,
		"alertGate", alertGate(a.cluster),
	}
	if apiErr != "" {
		attrs = append(attrs, "apiError", apiErr)
	}
	if !healthy {
		attrs = append(attrs, "health", healthMsg)
	}
	level := slog.LevelInfo
	if result != resultOK {
		level = slog.LevelWarn
	}
	a.Log.Log(ctx, level, "heartbeat", attrs...)
}

// readCoordinators reads the selected coordinator kinds (--coordinators), bounded
// by the request timeout, and reports each as a source: a kind that could
// not be read is forbidden or error in the heartbeat and readiness, never
// left out. Each kind's slots and nodes' cycle go to the model.
func (a *Agent) readCoordinators(ctx context.Context, at time.Time) {
	if a.Coordinators == nil {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, a.Config.RequestTimeout)
	defer cancel()
	a.coordinators = a.Coordinators(rctx, at)
	for _, r := range a.coordinators {
		a.cluster.Apply(model.SourceChanged{Health: r.Health(at)}, at)
		a.cluster.Apply(r.Cycle(), at)
	}
}

// alertGate says in the heartbeat whether a blocking-alert filter decides
// (and whose), or that none is configured and the gate passes every action.
func alertGate(c *model.Cluster) string {
	if !c.AlertFilterSet() {
		return "no blocking-alert filter configured: the gate passes every action"
	}
	if f := c.AlertFilterFrom(); f != "" {
		return "filter: " + f
	}
	return "filter set"
}

// probe is the per-iteration freshness check: a one-item node list with the
// request timeout. It proves the API answers and that nodes may be listed,
// whatever the informers' caches still hold.
func (a *Agent) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, a.Config.RequestTimeout)
	defer cancel()
	_, err := a.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
	return err
}

// policy maps a verdict to the action the agent's policy takes, or says
// why it takes none ("" when there is nothing to say).
func (a *Agent) policy(v model.Verdict) (model.Action, string) {
	switch v {
	case model.VerdictGhost:
		if a.Config.ReapGhost {
			return model.ActionReap, ""
		}
		return "", "policy: reaping ghost locks is off (--reap-ghost=false)"
	case model.VerdictExpired:
		if a.Config.ReapExpired {
			return model.ActionReap, ""
		}
		return "", "policy: reaping expired locks is off (--reap-expired=false)"
	case model.VerdictOrphaned:
		if a.Config.ReleaseOrphaned {
			return model.ActionRelease, ""
		}
		return "", "policy: releasing orphaned locks is off (enable with --release-orphaned)"
	case model.VerdictAmbiguous:
		return "", "policy: the agent never acts on an ambiguous lock"
	case model.VerdictUnknown:
		return "", "policy: the agent never acts on an unknown verdict"
	}
	return "", ""
}

// act plans and performs one action through the lock engine. A plan whose
// gates fail is refused and never overridden.
func (a *Agent) act(ctx context.Context, s model.LockStatus, action model.Action, now time.Time, r *LockReport) {
	r.Action = action
	kind := string(s.Kind)
	plan, err := a.Engine.PlanEntry(a.cluster, s.LockRef, s.Holder, s.Entry, action, now)
	if err != nil {
		r.Outcome, r.Message = model.OutcomeError, "plan: "+err.Error()
		a.Metrics.Actions.WithLabelValues(kind, string(action), string(r.Outcome)).Inc()
		a.Log.Error("action", "lock", s.LockRef.String(), "holder", s.Holder, "action", action, "outcome", r.Outcome, "message", r.Message)
		return
	}
	if !plan.Allowed {
		r.Outcome, r.Message = model.OutcomeRefused, plan.Refusal
		a.Metrics.Actions.WithLabelValues(kind, string(action), string(r.Outcome)).Inc()
		return
	}
	actx, cancel := a.whileLeader(ctx)
	defer cancel()
	res := a.Actor.Do(actx, plan, lock.DoOptions{AllowUnsafe: false})
	r.Outcome, r.Message = res.Outcome, res.Message
	if res.Uncordon.Outcome != "" {
		// The second write of a release whose coordinator cordoned the
		// holder (fleetlock; kured on a stalled holder): its uncordon.
		r.Message += "; uncordon " + string(res.Uncordon.Outcome) + ": " + res.Uncordon.Message
		a.Metrics.Actions.WithLabelValues(kind, "uncordon", string(res.Uncordon.Outcome)).Inc()
	}
	a.Metrics.Actions.WithLabelValues(kind, string(action), string(res.Outcome)).Inc()
	a.Notify.Acted(s, action, res.Outcome, r.Message)
	a.cluster.Apply(res.Recorded(plan), a.Clock())
	// The Actor logs the action line (who, what, why, outcome) itself.
}
