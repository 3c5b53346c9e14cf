package suc

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/internal/timewindow"
	"github.com/rebootwatch/rebootwatch/model"
)

// DefaultDrainBound is how long a plan's job may run on a cordoned node
// before pods a PodDisruptionBudget holds there are named as its drain
// blocker (the lock engine's drain bound).
const DefaultDrainBound = 10 * time.Minute

// Input is what the judging reads: SUC's Plans and Jobs, the nodes, and
// for the drain blocker the pods of cordoned nodes and the budgets. A
// non-empty …Unread says why that input could not be read (forbidden, not
// installed, stale): what rests on it is unknown, never "none".
type Input struct {
	Plans       []Plan
	PlansUnread string
	Jobs        []Job
	JobsUnread  string
	// Nodes must be a fresh and complete list, else NodesUnread says why:
	// no slot holder is then judged a ghost.
	Nodes       []coord.Node
	NodesUnread string
	// Pods maps a node to its pods; a node absent from it has unread pods.
	Pods       map[string][]model.Pod
	PDBs       []model.PDB
	PDBsUnread string
	DrainBound time.Duration
}

// PlanReport is one Plan as judged.
type PlanReport struct {
	Plan  *Plan
	Slots coord.Slots
	// Nodes are the nodes the plan selects, in name order.
	Nodes []coord.NodeState
}

// Report is SUC's state as judged at one time.
type Report struct {
	// Unknown says why nothing could be judged ("" when Plans were read).
	Unknown string
	Plans   []PlanReport
	// Blockers are in node, then precedence order; a plan's own blockers
	// (not validated, not resolved, ghost slot) have no Node.
	Blockers []model.Blocker
	// Uncordon lists the nodes a plan left cordoned, for which the
	// uncordon action may be offered (behind the engine's gates): the
	// newest cordon is provably the one a job of SUC's wrote for the cycle
	// that left it (OwnCordon).
	Uncordon []string
	// NotOwned maps a cordoned node a plan's cycle touched, but whose
	// cordon is not provably SUC's, to why (whose cordon it is, manager and
	// time, or what could not be read): never uncordoned.
	NotOwned map[string]string
}

// Hostname is the name SUC puts in applying[] for a node (node.Hostname:
// its kubernetes.io/hostname label, else its name).
func Hostname(n *coord.Node) string {
	if h, ok := n.Labels[LabelHostname]; ok {
		return h
	}
	return n.Name
}

type judge struct {
	in       Input
	now      time.Time
	nodes    map[string]*coord.Node // by name
	byHost   map[string][]*coord.Node
	plans    map[string]*Plan // by namespace/name
	out      Report
	uncordon map[string]bool
	// planNS are the namespaces of the Plans read: SUC runs in one
	// namespace and creates its jobs there (job.New: the plan's namespace).
	planNS map[string]bool
}

func ev(k, v string) model.Evidence { return coord.Ev(k, v) }

func ts(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format(time.RFC3339)
}

// Judge reads SUC's state: each plan's slots and nodes, the blockers and
// the uncordons it allows.
func Judge(in Input, now time.Time) Report {
	if in.DrainBound <= 0 {
		in.DrainBound = DefaultDrainBound
	}
	j := &judge{in: in, now: now, nodes: map[string]*coord.Node{}, byHost: map[string][]*coord.Node{},
		plans: map[string]*Plan{}, uncordon: map[string]bool{}, planNS: map[string]bool{}}
	if in.PlansUnread != "" {
		j.out.Unknown = "system-upgrade-controller's plans are not read: " + in.PlansUnread
		return j.out
	}
	if in.JobsUnread != "" {
		// Which job cordoned a node, and whether a job runs there now (one
		// SUC created again), rest on the jobs: unknown, never "none".
		j.out.Unknown = "system-upgrade-controller's jobs are not read (" + in.JobsUnread + "): which node its jobs cordoned, and whether one runs now, is unknown"
	}
	for i := range in.Nodes {
		n := &in.Nodes[i]
		j.nodes[n.Name] = n
		h := Hostname(n)
		j.byHost[h] = append(j.byHost[h], n)
	}
	plans := make([]*Plan, len(in.Plans))
	for i := range in.Plans {
		plans[i] = &in.Plans[i]
		j.plans[plans[i].Key()] = plans[i]
		j.planNS[plans[i].Namespace] = true
	}
	sort.Slice(plans, func(a, b int) bool { return plans[a].Key() < plans[b].Key() })
	for _, p := range plans {
		j.plan(p)
	}
	j.orphanedJobs()
	sort.SliceStable(j.out.Blockers, func(a, b int) bool {
		x, y := j.out.Blockers[a], j.out.Blockers[b]
		if x.Node != y.Node {
			return x.Node < y.Node
		}
		return rank(x.Kind) < rank(y.Kind)
	})
	for n := range j.uncordon {
		j.out.Uncordon = append(j.out.Uncordon, n)
		delete(j.out.NotOwned, n)
	}
	sort.Strings(j.out.Uncordon)
	return j.out
}

// rank orders SUC's blockers for one node: its own failures first, then
// model's precedence.
func rank(k model.BlockerKind) int {
	switch k {
	case BlockerNotValidated:
		return -4
	case BlockerNotResolved:
		return -3
	case BlockerJobFailed:
		return -2
	}
	return k.Rank()
}

// job returns the newest job of plan p for node n at the plan's latest
// version, selected as SUC selects its jobs (handle_batch.go handleJobs:
// the upgrade.cattle.io/controller label, in the namespace it watches, the
// plan's): a job without the controller label, or in another namespace, is
// not SUC's whatever its other labels say.
func (j *judge) job(p *Plan, node string) *Job {
	var best *Job
	for i := range j.in.Jobs {
		jb := &j.in.Jobs[i]
		if jb.Controller == "" || jb.Namespace != p.Namespace || jb.Plan != p.Name || jb.Node != node || jb.Version != p.Status.LatestVersion {
			continue
		}
		if best == nil || jb.Created.After(best.Created) {
			best = jb
		}
	}
	return best
}

func (j *judge) add(b model.Blocker) { j.out.Blockers = append(j.out.Blockers, b) }

func (j *judge) plan(p *Plan) {
	r := PlanReport{Plan: p}
	pe := ev("plan", p.Key())
	slotsBad, bad := p.SlotsBad()
	switch {
	case bad:
		r.Slots = coord.Slots{Unknown: fmt.Sprintf("plan %s: %s is not what system-upgrade-controller writes", p.Key(), slotsBad)}
	case j.in.NodesUnread != "":
		r.Slots = coord.Slots{Unknown: "nodes not read: " + j.in.NodesUnread}
	default:
		r.Slots = coord.Slots{Known: true, Capacity: int(p.Spec.Concurrency)}
	}

	// The plan's own conditions: SUC creates no job until it is validated
	// and resolved (handle_upgrade.go: Complete NotReady).
	j.conditionBlocker(p, CondValidated, BlockerNotValidated, "not validated",
		"fix the plan's spec as the message says (system-upgrade-controller validates it again on every change)")
	j.conditionBlocker(p, CondLatestResolved, BlockerNotResolved, "not resolved",
		"set spec.version, or make spec.channel answer (system-upgrade-controller polls it every 15m)")

	// Slots: applying[] entries, each mapped to the node SUC means.
	wedged := map[string]string{} // holder -> why it is wedged
	if r.Slots.Known {
		for _, h := range p.Status.Applying {
			s := coord.Slot{Holder: h, Owner: "plan " + p.Key(),
				Evidence: []model.Evidence{ev("status.applying", strings.Join(p.Status.Applying, ","))}}
			switch ns := j.byHost[h]; len(ns) {
			case 0:
				wedged[h] = "matches no node"
				j.add(model.Blocker{Kind: model.BlockerLock, Stalls: true,
					Reason: fmt.Sprintf("plan %s holds a slot for %s, which matches no node: system-upgrade-controller drops it at its next sync of the plan, so a slot that stays means the controller is not syncing this plan", p.Key(), h),
					Short:  "slot: " + h + " (ghost)",
					Clears: "look at system-upgrade-controller's log and pod (rebootwatch never writes Plans)",
					Evidence: []model.Evidence{pe, ev("status.applying", strings.Join(p.Status.Applying, ",")),
						ev("nodes", fmt.Sprintf("%d read, none with %s=%s or named %s", len(j.in.Nodes), LabelHostname, h, h))}})
			case 1:
				s.Node = ns[0].Name
			default:
				// Several nodes share the hostname: SUC's job affinity
				// would land on any of them; rebootwatch does not pick.
				wedged[h] = "matches several nodes"
			}
			r.Slots.Held = append(r.Slots.Held, s)
		}
	}

	// The nodes the plan selects.
	var pending []*coord.Node
	names := make([]string, 0, len(j.in.Nodes))
	for i := range j.in.Nodes {
		names = append(names, j.in.Nodes[i].Name)
	}
	sort.Strings(names)
	applying := map[string]bool{}
	for _, h := range p.Status.Applying {
		applying[h] = true
	}
	for _, name := range names {
		n := j.nodes[name]
		if _, hasHost := n.Labels[LabelHostname]; !hasHost || !p.Spec.NodeSelector.Matches(n.Labels) {
			continue
		}
		st, isPending := j.nodeState(p, n, applying[Hostname(n)], wedged)
		r.Nodes = append(r.Nodes, st)
		if jb := j.job(p, n.Name); jb != nil && applying[Hostname(n)] {
			// The slot was taken when SUC created the node's job for it.
			for i := range r.Slots.Held {
				if r.Slots.Held[i].Node == n.Name && r.Slots.Held[i].Since.IsZero() {
					r.Slots.Held[i].Since = jb.Created
				}
			}
		}
		if isPending {
			pending = append(pending, n)
		}
	}

	// Pending nodes: why they wait (window, slots).
	if r.Slots.Known && len(pending) > 0 {
		if b, ok := j.windowBlocker(p); ok {
			for _, n := range pending {
				b.Node = n.Name
				j.add(b)
			}
		} else if free, _ := r.Slots.Free(); free == 0 && len(p.Status.Applying) > 0 {
			var why []string
			for _, h := range p.Status.Applying {
				if w, ok := wedged[h]; ok {
					why = append(why, h+" "+w)
				}
			}
			for _, n := range pending {
				b := model.Blocker{Kind: model.BlockerLock, Node: n.Name, Stalls: len(why) > 0,
					Reason: fmt.Sprintf("plan %s applies to %d of %d nodes at once and its slots are taken by %s", p.Key(), len(p.Status.Applying), p.Spec.Concurrency, strings.Join(p.Status.Applying, ", ")),
					Short:  "slot: " + strings.Join(p.Status.Applying, ","),
					Clears: "wait for the plan's jobs on those nodes to complete",
					Evidence: []model.Evidence{pe, ev("spec.concurrency", fmt.Sprint(p.Spec.Concurrency)),
						ev("status.applying", strings.Join(p.Status.Applying, ","))}}
				if len(why) > 0 {
					b.Reason += " (" + strings.Join(why, "; ") + ")"
					b.Clears = "clear what stops " + strings.Join(p.Status.Applying, ", ")
				}
				j.add(b)
			}
		}
	}
	j.out.Plans = append(j.out.Plans, r)
}

// conditionBlocker names a plan whose Validated or LatestResolved
// condition is not True.
func (j *judge) conditionBlocker(p *Plan, typ string, kind model.BlockerKind, what, clears string) {
	c, ok := p.Status.Cond(typ)
	if ok && c.Status == "True" {
		return
	}
	b := model.Blocker{Kind: kind, Stalls: true, Clears: clears, Evidence: []model.Evidence{ev("plan", p.Key())}}
	switch {
	case !ok:
		b.Reason = fmt.Sprintf("plan %s has no %s condition: system-upgrade-controller has not processed it (is the controller running?)", p.Key(), typ)
		b.Short = "plan " + what + ": not processed"
		b.Clears = "look at system-upgrade-controller's pod and log"
	case c.Status == "False":
		b.Reason = fmt.Sprintf("plan %s is %s: %s", p.Key(), what, strings.TrimSpace(c.Reason+": "+c.Message))
		b.Short = "plan " + what
	default:
		b.Reason = fmt.Sprintf("plan %s: condition %s is %q", p.Key(), typ, c.Status)
		b.Short = "plan " + what + "?"
	}
	if ok {
		b.Evidence = append(b.Evidence, ev(typ, fmt.Sprintf("%s, reason %q, message %q, since %s", c.Status, c.Reason, c.Message, ts(c.LastTransition))))
	}
	j.add(b)
}

// windowBlocker: SUC creates no job outside spec.window while no node is
// applying (handle_upgrade.go), and says so with Complete reason Waiting.
func (j *judge) windowBlocker(p *Plan) (model.Blocker, bool) {
	if p.Spec.Window == nil || len(p.Status.Applying) > 0 {
		return model.Blocker{}, false
	}
	w := p.Spec.Window
	b := model.Blocker{Kind: model.BlockerWindow, Stalls: false,
		Evidence: []model.Evidence{ev("plan", p.Key()),
			ev("spec.window", fmt.Sprintf("days %s, %s–%s %s", strings.Join(w.Days, ","), w.StartTime, w.EndTime, w.TimeZone))}}
	if c, ok := p.Status.Cond(CondComplete); ok && c.Reason == ReasonWaiting {
		b.Evidence = append(b.Evidence, ev(CondComplete, fmt.Sprintf("%s, reason %s: %s", c.Status, c.Reason, c.Message)))
	}
	tw, err := timewindow.Parse(w.Days, w.StartTime, w.EndTime, w.TimeZone)
	if err != nil {
		// SUC's Validate fails the plan on this: the plan-not-validated
		// blocker says so; the window is not what stops it.
		return model.Blocker{}, false
	}
	if tw.Contains(j.now) {
		return model.Blocker{}, false
	}
	at, ok := tw.NextOpen(j.now)
	b.Reason = fmt.Sprintf("plan %s creates no job outside its window (%s)", p.Key(), tw.Opens(j.now))
	b.Short = "window: " + tw.Opens(j.now)
	b.Clears = "wait: " + tw.Opens(j.now)
	if ok {
		b.Until = at
	}
	return b, true
}

// nodeState is one selected node's place in the plan's cycle; pending is
// true when it waits for a slot.
func (j *judge) nodeState(p *Plan, n *coord.Node, applying bool, wedged map[string]string) (st coord.NodeState, pending bool) {
	st = coord.NodeState{Node: n.Name, Cordoned: n.Unschedulable}
	label, hasLabel := n.Labels[LabelPlanPrefix+p.Name]
	st.Evidence = append(st.Evidence, ev("plan", p.Key()))
	if hasLabel {
		st.Evidence = append(st.Evidence, ev("label "+LabelPlanPrefix+p.Name, label))
	}
	switch {
	case label == Disabled:
		st.Phase, st.Step = model.PhaseIdle, "opted out (disabled)"
		return st, false
	case p.Status.LatestHash == "":
		st.Phase, st.Step = model.PhaseUnknown, "plan has no latest hash yet"
		return st, false
	case label == p.Status.LatestHash:
		st.Phase, st.Step = model.PhaseDone, "done at "+p.Status.LatestVersion
		return st, false
	case !applying:
		st.Phase, st.Step = model.PhasePending, "waiting for a slot"
		return st, true
	}
	jb := j.job(p, n.Name)
	if jb == nil {
		st.Phase, st.Step = model.PhasePending, "slot taken, no job read"
		if j.in.JobsUnread != "" {
			st.Step = "slot taken, jobs not read"
		}
		if j.failedFromCondition(p, n) {
			wedged[Hostname(n)] = "job failed"
		}
		return st, false
	}
	st.Evidence = append(st.Evidence, ev("job", jb.Key()))
	if c, failed := jb.Cond("Failed"); failed {
		st.Phase, st.Step = model.PhaseDraining, "job failed"
		if !n.Ready.True() {
			st.Phase = model.PhaseRebooting
		}
		wedged[Hostname(n)] = "job failed"
		j.jobFailed(p, n, jb, c)
		return st, false
	}
	if _, done := jb.Cond("Complete"); done {
		st.Phase, st.Step = model.PhaseRecovering, "job complete, waiting for the plan label"
		return st, false
	}
	switch {
	case n.Ready.Known() && !n.Ready.True():
		st.Phase, st.Step = model.PhaseRebooting, "job running, node not Ready"
	case n.Unschedulable:
		st.Phase, st.Step = model.PhaseDraining, "job running, node cordoned"
		j.drainBlocker(p, n, jb)
	default:
		st.Phase, st.Step = model.PhaseDraining, "job running"
	}
	return st, false
}

// jobFailed: a job of the plan's latest version failed on the node. SUC
// keeps the node in applying (its label is not the latest hash) and never
// uncordons it (it does only after a successful job).
func (j *judge) jobFailed(p *Plan, n *coord.Node, jb *Job, c Condition) {
	backoff, deadline := fmt.Sprint(DefaultBackoffLimit)+" (SUC's default)", fmt.Sprint(DefaultActiveDeadlineSeconds)+"s (SUC's default)"
	if jb.BackoffLimit != nil {
		backoff = fmt.Sprint(*jb.BackoffLimit)
	}
	if jb.ActiveDeadlineSeconds != nil {
		deadline = fmt.Sprintf("%ds", *jb.ActiveDeadlineSeconds)
	}
	last := strings.TrimSpace(c.Reason + ": " + c.Message)
	b := model.Blocker{Kind: BlockerJobFailed, Node: n.Name, Stalls: true,
		Reason: fmt.Sprintf("job %s of plan %s failed on %s: %s", jb.Key(), p.Key(), n.Name, last),
		Short:  "job failed: " + c.Reason,
		Clears: "fix the cause, then change the plan (a new latestHash makes system-upgrade-controller create a new job); rebootwatch never writes Plans or Jobs",
		Evidence: []model.Evidence{ev("plan", p.Key()), ev("job", jb.Key()), ev("failed", ts(c.LastTransition)),
			ev("last error", last), ev("failed pods", fmt.Sprint(jb.Failed)), ev("backoffLimit", backoff), ev("activeDeadlineSeconds", deadline)}}
	if pc, ok := p.Status.Cond(CondComplete); ok && pc.Reason == ReasonJobFailed {
		b.Evidence = append(b.Evidence, ev("plan "+CondComplete, pc.Message))
	}
	if n.Unschedulable && (p.Spec.Cordon || p.Spec.Drain) {
		if ok, why := OwnCordon(n, jb, c.LastTransition); !ok {
			b.Evidence = append(b.Evidence, ev("cordon", why))
			j.notOwned(n, why)
		} else {
			j.stuckCordon(n, jb, fmt.Sprintf("plan %s cordoned %s for job %s, which failed: system-upgrade-controller uncordons only after a successful job", p.Key(), n.Name, jb.Key()),
				why, ev("plan", p.Key()), ev("job", jb.Key()), ev("spec.cordon/drain", fmt.Sprintf("cordon %v, drain %v", p.Spec.Cordon, p.Spec.Drain)))
		}
	}
	j.add(b)
}

// OwnCordon says whether node n's cordon is the one job jb's drain or
// cordon init container wrote (job.go: kubectl drain|cordon <node>, run in
// the job's pod): the managedFields entry owning spec.unschedulable is an
// Update by kubectl's manager (KubectlManagers), not older than the job and, when the job ended (end, its Failed or Complete
// condition's time), not newer than that. A cordon written later — a
// person's kubectl cordon after the job failed, another controller's — is
// not SUC's, and one whose writer or time cannot be read is not provably
// SUC's. why says whose cordon it is (manager and time) either way
// (DESIGN §6 rule 9).
func OwnCordon(n *coord.Node, jb *Job, end time.Time) (bool, string) {
	if n.UnschedulableSetAt.IsZero() {
		return false, fmt.Sprintf("who cordoned %s cannot be read (no managedFields entry owns spec.unschedulable): not provably system-upgrade-controller's cordon", n.Name)
	}
	by := fmt.Sprintf("cordoned by %s at %s", n.UnschedulableSetBy, ts(n.UnschedulableSetAt))
	if n.UnschedulableSetOp != "" {
		by += " (" + n.UnschedulableSetOp + ")"
	}
	// managedFields and the job's times are recorded to the second.
	at := n.UnschedulableSetAt.Truncate(time.Second)
	switch {
	case !KubectlManagers[n.UnschedulableSetBy] || n.UnschedulableSetOp != "Update":
		// The job's init container is kubectl drain|cordon: a Patch with
		// no field manager, recorded as an Update by "kubectl" (its user
		// agent's name). Another manager, or an Apply, wrote this cordon
		// whatever its time.
		return false, by + "; system-upgrade-controller's jobs cordon with kubectl (an Update by the manager kubectl): not provably its cordon"
	case len(n.UnschedulableOthers) > 0:
		// An Apply of the same value shares the field: that cordon is
		// someone else's too.
		return false, by + "; spec.unschedulable is also owned by " + strings.Join(n.UnschedulableOthers, ", ") + ": not provably system-upgrade-controller's cordon alone"
	case jb.Created.IsZero():
		return false, by + fmt.Sprintf("; when job %s was created is not read: not provably its cordon", jb.Key())
	case at.Before(jb.Created.Truncate(time.Second)):
		return false, by + fmt.Sprintf(", before job %s was created (%s): not the job's cordon", jb.Key(), ts(jb.Created))
	case end.IsZero():
		return false, by + fmt.Sprintf(", while job %s runs: not finished, so not left cordoned", jb.Key())
	case at.After(end.Truncate(time.Second)):
		return false, by + fmt.Sprintf(", after job %s ended (%s): not system-upgrade-controller's cordon", jb.Key(), ts(end))
	}
	return true, by + fmt.Sprintf(", while job %s ran (created %s, ended %s): the job's drain or cordon", jb.Key(), ts(jb.Created), ts(end))
}

// end is when the job finished (its Failed or Complete condition), zero
// while it runs.
func (jb *Job) end() time.Time {
	if c, ok := jb.Cond("Failed"); ok {
		return c.LastTransition
	}
	if c, ok := jb.Cond("Complete"); ok {
		return c.LastTransition
	}
	return time.Time{}
}

func (j *judge) notOwned(n *coord.Node, why string) {
	if j.out.NotOwned == nil {
		j.out.NotOwned = map[string]string{}
	}
	if _, ok := j.out.NotOwned[n.Name]; !ok {
		j.out.NotOwned[n.Name] = why
	}
}

// failedFromCondition: the job is gone (SUC deletes a finished job after
// its ttlSecondsAfterFinished) but the plan's Complete condition still
// says a job failed on this node.
func (j *judge) failedFromCondition(p *Plan, n *coord.Node) bool {
	c, ok := p.Status.Cond(CondComplete)
	if !ok || c.Reason != ReasonJobFailed || !strings.Contains(c.Message, " failed on Node "+n.Name+":") {
		return false
	}
	j.add(model.Blocker{Kind: BlockerJobFailed, Node: n.Name, Stalls: true,
		Reason: fmt.Sprintf("plan %s: %s", p.Key(), c.Message),
		Short:  "job failed",
		Clears: "fix the cause, then change the plan (a new latestHash makes system-upgrade-controller create a new job); rebootwatch never writes Plans or Jobs",
		Evidence: []model.Evidence{ev("plan", p.Key()), ev("plan "+CondComplete, fmt.Sprintf("%s, reason %s, since %s", c.Status, c.Reason, ts(c.LastTransition))),
			ev("job", "not read (deleted after its ttlSecondsAfterFinished, or jobs unread)")}})
	if n.Unschedulable && (p.Spec.Cordon || p.Spec.Drain) {
		// Without the job nothing proves whose cordon this is: SUC deletes
		// a failed job after its TTL and then creates it again (its
		// generating handler), and that job cordons again; or the jobs are
		// not read. Never offered.
		why := fmt.Sprintf("no job of plan %s on %s is read (deleted after its TTL, and then created again by system-upgrade-controller): whose cordon this is cannot be told", p.Key(), n.Name)
		if j.in.JobsUnread != "" {
			why = fmt.Sprintf("system-upgrade-controller's jobs are not read (%s): which job cordoned %s, and whether one runs there now, cannot be told", j.in.JobsUnread, n.Name)
		}
		if n.UnschedulableSetBy != "" {
			why = fmt.Sprintf("cordoned by %s at %s; ", n.UnschedulableSetBy, ts(n.UnschedulableSetAt)) + why
		}
		j.notOwned(n, why)
	}
	return true
}

// stuckCordon names node n left cordoned by job jb and offers its uncordon,
// unless another job of SUC's runs on n now (one created again, or another
// plan's): SUC is then at work there and its cordon is that job's.
func (j *judge) stuckCordon(n *coord.Node, jb *Job, reason, whose string, evidence ...model.Evidence) {
	if j.uncordon[n.Name] {
		return
	}
	for i := range j.in.Jobs {
		o := &j.in.Jobs[i]
		if o != jb && o.Node == n.Name && o.Controller != "" && j.planNS[o.Namespace] && o.end().IsZero() {
			j.notOwned(n, fmt.Sprintf("job %s of plan %s runs on %s now: system-upgrade-controller is at work there (%s)", o.Key(), o.Plan, n.Name, whose))
			return
		}
	}
	j.uncordon[n.Name] = true
	e := append([]model.Evidence{}, evidence...)
	e = append(e, ev("spec.unschedulable", "true"), ev("cordon", whose))
	j.add(model.Blocker{Kind: model.BlockerCordon, Node: n.Name, Stalls: true, Reason: reason,
		Short: "left cordoned", Clears: "uncordon " + n.Name, Action: model.ActionUncordon, Evidence: e})
}

// orphanedJobs: jobs of a plan that no longer exists, on a node still
// cordoned: the plan was deleted mid-cycle (system-upgrade-controller#71)
// and nothing will uncordon the node.
//
// Only a job SUC itself would select counts: one carrying its controller
// label in the namespace SUC runs in (where its other Plans are); a Job
// anyone creates elsewhere with the plan and node labels is not SUC's. And
// only a cordon that job wrote (OwnCordon), once it finished.
func (j *judge) orphanedJobs() {
	if j.in.JobsUnread != "" {
		return
	}
	for i := range j.in.Jobs {
		jb := &j.in.Jobs[i]
		if _, ok := j.plans[jb.Namespace+"/"+jb.Plan]; ok || jb.Controller == "" || !j.planNS[jb.Namespace] {
			continue
		}
		n, ok := j.nodes[jb.Node]
		if !ok || !n.Unschedulable {
			continue
		}
		own, why := OwnCordon(n, jb, jb.end())
		if !own {
			j.notOwned(n, why)
			continue
		}
		j.stuckCordon(n, jb, fmt.Sprintf("%s is cordoned and its job %s belongs to plan %s/%s, which no longer exists: nothing will uncordon it", n.Name, jb.Key(), jb.Namespace, jb.Plan),
			why, ev("job", jb.Key()), ev("plan", jb.Namespace+"/"+jb.Plan+" (deleted)"))
	}
}

// drainBlocker: the plan's job runs on a cordoned node longer than the
// bound and a PodDisruptionBudget refuses to evict a pod still there (the
// drain init container waits on it: system-upgrade-controller#78, #103).
func (j *judge) drainBlocker(p *Plan, n *coord.Node, jb *Job) {
	if !p.Spec.Drain {
		return
	}
	since := jb.Started
	if since.IsZero() {
		since = jb.Created
	}
	if since.IsZero() || j.now.Sub(since) <= j.in.DrainBound {
		return
	}
	took := model.HumanDuration(j.now.Sub(since))
	b := model.Blocker{Kind: model.BlockerDrain, Node: n.Name, Stalls: true,
		Evidence: []model.Evidence{ev("plan", p.Key()), ev("job", jb.Key()), ev("job running since", ts(since)), ev("bound", model.HumanDuration(j.in.DrainBound))}}
	if p.Spec.DrainTimeout != "" {
		b.Evidence = append(b.Evidence, ev("spec.drain.timeout", p.Spec.DrainTimeout))
	}
	pods, known := j.in.Pods[n.Name]
	if !known {
		b.Reason = fmt.Sprintf("plan %s's job has run on cordoned %s for %s; cannot tell whether its drain is held (pods on the node not read)", p.Key(), n.Name, took)
		b.Short = "slow job " + took
		b.Clears = "look at the job's drain container log"
		j.add(b)
		return
	}
	var held []string
	var pdb *model.PDB
	for i := range pods {
		pod := &pods[i]
		if pod.DrainSkips() || pod.Terminal() || pod.Labels[LabelController] != "" || pod.Labels[LabelPlan] != "" {
			continue
		}
		for k := range j.in.PDBs {
			if b := &j.in.PDBs[k]; b.Covers(pod) && b.Refuses(pod) {
				held = append(held, pod.Key())
				if pdb == nil {
					pdb = b
				}
				break
			}
		}
	}
	if pdb == nil {
		return
	}
	b.Reason = fmt.Sprintf("plan %s's job has been draining %s for %s: PodDisruptionBudget %s allows 0 disruptions (%d/%d healthy) for %s still on it",
		p.Key(), n.Name, took, pdb.Key(), pdb.CurrentHealthy, pdb.DesiredHealthy, strings.Join(held, ", "))
	b.Short = "PDB " + pdb.Key()
	b.Clears = "scale up the workload behind " + pdb.Key() + " or relax the budget"
	b.Evidence = append(b.Evidence, ev("PodDisruptionBudget "+pdb.Key(), fmt.Sprintf("%d disruptions allowed, %d healthy of %d desired", pdb.DisruptionsAllowed, pdb.CurrentHealthy, pdb.DesiredHealthy)),
		ev("pods held", strings.Join(held, ", ")))
	if j.in.PDBsUnread != "" {
		b.Evidence = append(b.Evidence, ev("budgets", "may be out of date: "+j.in.PDBsUnread))
	}
	j.add(b)
}
