package flatcar

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/model"
)

// Kind is FLUO's kind and Source the model source that reads it.
const (
	Kind   model.LockKind   = "flatcar"
	Source model.SourceName = "flatcar"
)

// The keys FLUO writes (pkg/constants).
const (
	Prefix                 = "flatcar-linux-update.v1.flatcar-linux.net/"
	AnnRebootNeeded        = Prefix + "reboot-needed"
	AnnRebootInProgress    = Prefix + "reboot-in-progress"
	AnnRebootOK            = Prefix + "reboot-ok"
	AnnRebootPaused        = Prefix + "reboot-paused"
	AnnStatus              = Prefix + "status"
	AnnNewVersion          = Prefix + "new-version"
	AnnAgentUnschedulable  = Prefix + "agent-made-unschedulable"
	LabelBeforeReboot      = Prefix + "before-reboot"
	LabelAfterReboot       = Prefix + "after-reboot"
	True                   = "true"
	DefaultMaxRebooting    = 1
	reconciliationPeriod   = 30 * time.Second
	defaultAgentGrace      = 5 * time.Minute
	defaultCheckBound      = 10 * time.Minute
	defaultLostBound       = 10 * time.Minute
	agentDaemonSetHint     = "the flatcar-linux-update-agent pod on "
	rebootInProgressWriter = "annotation:" + AnnRebootInProgress
	beforeLabelWriter      = "label:" + LabelBeforeReboot
	afterLabelWriter       = "label:" + LabelAfterReboot
	agentCordonWriter      = "annotation:" + AnnAgentUnschedulable
)

// NodeKeys are the keys whose writers the source keeps (coord.NodeFrom):
// when the agent set reboot-in-progress, when the operator set the
// before/after-reboot labels, and who wrote agent-made-unschedulable (the
// agent's cordon is the one its writer made: AgentCordon).
var NodeKeys = []string{rebootInProgressWriter, beforeLabelWriter, afterLabelWriter, agentCordonWriter}

// Blocker kinds FLUO adds to model's.
const (
	// BlockerAgentStopped: the node rebooted but still says
	// reboot-in-progress: its update-agent has not run since.
	BlockerAgentStopped model.BlockerKind = "agent-stopped"
	// BlockerRebootCheck: a before- or after-reboot check annotation is
	// not "true" yet.
	BlockerRebootCheck model.BlockerKind = "reboot-check"
	// BlockerPaused: reboot-paused=true keeps the node out of FLUO's cycle.
	BlockerPaused model.BlockerKind = "reboot-paused"
)

// Input is what the judging reads.
type Input struct {
	// Nodes must be a fresh and complete list, else NodesUnread says why:
	// nothing is judged then.
	Nodes       []coord.Node
	NodesUnread string
	// Settings are the operator's; SettingsUnread says why they are not
	// known (Deployment not found, forbidden, ambiguous): the checks and
	// the window are then unknown.
	Settings       Settings
	SettingsUnread string
	// Rebooted is the caller's own history: nodes whose boot id it saw
	// change since they set reboot-in-progress (may be nil).
	Rebooted map[string]bool
	// AgentPods is FLUO's update-agent pod on the nodes the judging asked
	// for (Report.NeedAgentPod); a node absent from it has its pods unread:
	// whether its agent runs is then unknown, and nothing rests on it.
	AgentPods map[string]AgentPod
	// AgentGrace is how long after a reboot the agent may take to clear
	// reboot-in-progress; CheckBound how long a check may stay unset
	// before it stalls the fleet; LostBound how long a slot holder's
	// kubelet may stay silent.
	AgentGrace, CheckBound, LostBound time.Duration
}

// Report is FLUO's state as judged at one time.
type Report struct {
	// Unknown says why nothing could be judged.
	Unknown  string
	Slots    coord.Slots
	Nodes    []coord.NodeState
	Blockers []model.Blocker
	// Uncordon lists the nodes the agent made unschedulable that finished
	// their reboot: the uncordon action may be offered (behind the gates).
	// The newest cordon is the agent's own (AgentCordon), and its agent pod
	// was read and does not run (it would uncordon the node itself).
	Uncordon []string
	// NotOwned maps a cordoned node of FLUO's cycle that is not offered to
	// why: whose cordon it is (manager and time), or that its agent pod
	// runs or could not be read.
	NotOwned map[string]string
	// NeedAgentPod lists the nodes whose update-agent pod the judging
	// needs (Input.AgentPods): the caller reads them and judges again.
	NeedAgentPod []string
}

// AgentPod is what was read of FLUO's update-agent pod on a node (the pod
// of the agent's DaemonSet: a container whose command is update-agent,
// examples/deploy/update-agent.yaml).
type AgentPod struct {
	// Known: the node's pods were read; Why says why not.
	Known bool
	Why   string
	// Name is namespace/name; "" when no agent pod is on the node.
	Name string
	// Running: phase Running, its containers running and not being
	// deleted; Since is when its container (re)started.
	Running bool
	Since   time.Time
	// Ready and ReadySince are its Ready condition.
	Ready      bool
	ReadySince time.Time
	// Waiting is a waiting container's reason (CrashLoopBackOff), and
	// Restarts its restart count.
	Waiting  string
	Restarts int
}

// Describe says what was read of the agent pod on node.
func (p AgentPod) Describe(node string) string {
	switch {
	case !p.Known:
		return "the update-agent pod on " + node + " is not read (" + p.Why + ")"
	case p.Name == "":
		return "no update-agent pod runs on " + node
	case p.Running && p.Ready:
		return fmt.Sprintf("update-agent pod %s is Running and Ready since %s", p.Name, ts(p.ReadySince))
	case p.Running:
		return fmt.Sprintf("update-agent pod %s is Running (since %s), not Ready", p.Name, ts(p.Since))
	case p.Waiting != "":
		return fmt.Sprintf("update-agent pod %s is waiting: %s (%d restarts)", p.Name, p.Waiting, p.Restarts)
	}
	return fmt.Sprintf("update-agent pod %s is not running", p.Name)
}

// AgentCordon says whether n's cordon is the one FLUO's agent made: it
// set agent-made-unschedulable=true before it cordoned (agent.go process:
// only when the node was schedulable), both with its own Updates, so the
// managedFields entry that owns spec.unschedulable is the one that wrote
// that annotation. A cordon written since by anyone else — an
// administrator's kubectl cordon after the agent (or rebootwatch)
// uncordoned the node, leaving a stale annotation behind — is owned by
// another manager and is not the agent's; nor is one whose writer cannot
// be read. why says whose cordon it is (DESIGN §6 rule 9).
func AgentCordon(n *coord.Node) (bool, string) {
	w, wrote := n.Writes[agentCordonWriter]
	switch {
	case !n.Unschedulable:
		return false, n.Name + " is not cordoned"
	case n.Annotations[AnnAgentUnschedulable] != True:
		return false, fmt.Sprintf("%s is cordoned but not annotated %s=true: FLUO's agent did not cordon it", n.Name, AnnAgentUnschedulable)
	case n.UnschedulableSetBy == "":
		return false, fmt.Sprintf("who cordoned %s cannot be read (no managedFields entry owns spec.unschedulable): not provably FLUO's agent's cordon", n.Name)
	case !wrote || w.Manager == "":
		return false, fmt.Sprintf("cordoned by %s at %s; who wrote %s=true cannot be read: not provably FLUO's agent's cordon", n.UnschedulableSetBy, ts(n.UnschedulableSetAt), AnnAgentUnschedulable)
	case w.Manager != n.UnschedulableSetBy:
		return false, fmt.Sprintf("cordoned by %s at %s, not by %s, which wrote %s=true (last at %s): a later cordon, not FLUO's agent's", n.UnschedulableSetBy, ts(n.UnschedulableSetAt), w.Manager, AnnAgentUnschedulable, ts(w.At))
	case len(n.UnschedulableOthers) > 0:
		// An Apply of the same value shares the field: someone else holds
		// this cordon too, and the agent's undoing it would undo theirs.
		return false, fmt.Sprintf("cordoned by %s at %s, and spec.unschedulable is also owned by %s: not FLUO's agent's cordon alone", n.UnschedulableSetBy, ts(n.UnschedulableSetAt), strings.Join(n.UnschedulableOthers, ", "))
	}
	return true, fmt.Sprintf("cordoned by %s (FLUO's agent, which also wrote %s=true) at %s", n.UnschedulableSetBy, AnnAgentUnschedulable, ts(n.UnschedulableSetAt))
}

type node struct {
	*coord.Node
	ok, needed, inProgress, paused, before, after, agentCordoned bool
}

func (n node) holds() bool { return (n.ok && n.needed) || n.before || n.after }

// rebootable is operator.go's rebootableSelector and notBeforeRebootReq.
func (n node) rebootable() bool { return n.needed && !n.paused && !n.ok && !n.inProgress && !n.before }

func ev(k, v string) model.Evidence { return coord.Ev(k, v) }

// with is a copy of base with more appended.
func with(base []model.Evidence, more ...model.Evidence) []model.Evidence {
	return append(append([]model.Evidence{}, base...), more...)
}

func ts(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format(time.RFC3339)
}

// Judge reads FLUO's state from the nodes and the operator's settings.
func Judge(in Input, now time.Time) Report {
	var r Report
	if in.NodesUnread != "" {
		r.Unknown = "nodes not read: " + in.NodesUnread
		r.Slots = coord.Slots{Unknown: r.Unknown}
		return r
	}
	if in.AgentGrace <= 0 {
		in.AgentGrace = defaultAgentGrace
	}
	if in.CheckBound <= 0 {
		in.CheckBound = defaultCheckBound
	}
	if in.LostBound <= 0 {
		in.LostBound = defaultLostBound
	}
	nodes := make([]node, len(in.Nodes))
	for i := range in.Nodes {
		n := &in.Nodes[i]
		a, l := n.Annotations, n.Labels
		nodes[i] = node{Node: n, ok: a[AnnRebootOK] == True, needed: a[AnnRebootNeeded] == True,
			inProgress: a[AnnRebootInProgress] == True, paused: a[AnnRebootPaused] == True,
			before: l[LabelBeforeReboot] == True, after: l[LabelAfterReboot] == True,
			agentCordoned: a[AnnAgentUnschedulable] == True}
	}
	sort.Slice(nodes, func(a, b int) bool { return nodes[a].Name < nodes[b].Name })

	r.Slots = coord.Slots{Known: true, Capacity: DefaultMaxRebooting}
	wedged := map[string]string{}
	uncordon := map[string]bool{}
	var podsUnread []string
	// offer offers the uncordon of n, the agent's own cordon, when its agent
	// pod was read and does not run; else says why not. It returns what
	// was read of the cordon and the pod, for the evidence.
	offer := func(n node) []model.Evidence {
		own, whose := AgentCordon(n.Node)
		e := []model.Evidence{ev("cordon", whose)}
		if !own {
			r.notOwned(n.Name, whose)
			return e
		}
		pod, read := in.AgentPods[n.Name]
		if !read {
			r.NeedAgentPod = append(r.NeedAgentPod, n.Name)
			pod = AgentPod{Why: "not read"}
		}
		e = append(e, ev("agent pod", pod.Describe(n.Name)))
		switch {
		case !pod.Known:
			if read {
				podsUnread = append(podsUnread, n.Name+": "+pod.Why)
			}
			r.notOwned(n.Name, whose+"; "+pod.Describe(n.Name)+": whether FLUO's agent runs there, and will uncordon it itself, is unknown")
		case pod.Running:
			r.notOwned(n.Name, whose+"; "+pod.Describe(n.Name)+": the agent runs and uncordons the node itself")
		default:
			uncordon[n.Name] = true
		}
		return e
	}
	add := func(b model.Blocker) { r.Blockers = append(r.Blockers, b) }
	for _, n := range nodes {
		st := coord.NodeState{Node: n.Name, Cordoned: n.Unschedulable, Evidence: annotations(n)}
		if n.holds() {
			s := coord.Slot{Holder: n.Name, Node: n.Name, Evidence: st.Evidence}
			switch {
			case n.before:
				s.Since = n.Writes[beforeLabelWriter].At
			case n.after:
				s.Since = n.Writes[afterLabelWriter].At
			case n.inProgress:
				s.Since = n.Writes[rebootInProgressWriter].At
			}
			r.Slots.Held = append(r.Slots.Held, s)
		}
		switch {
		case n.before:
			st.Phase, st.Step = model.PhaseDraining, "before-reboot check"
			if b, stalls := checkBlocker(in, now, n, "before", LabelBeforeReboot, in.Settings.Before, beforeLabelWriter); b != nil {
				add(*b)
				if stalls {
					wedged[n.Name] = "before-reboot check unset"
				}
			}
		case n.after:
			st.Phase, st.Step = model.PhaseRecovering, "after-reboot check"
			if b, stalls := checkBlocker(in, now, n, "after", LabelAfterReboot, in.Settings.After, afterLabelWriter); b != nil {
				add(*b)
				if stalls {
					wedged[n.Name] = "after-reboot check unset"
				}
			}
		case n.ok && n.needed && n.inProgress:
			rebooted, why := rebootSeen(in, n)
			switch {
			case n.Ready.Known() && !n.Ready.True():
				st.Phase, st.Step = model.PhaseRebooting, "rebooting"
				if n.Ready.Status == "Unknown" && now.Sub(n.Ready.Since) > in.LostBound {
					wedged[n.Name] = "kubelet silent"
					add(model.Blocker{Kind: model.BlockerSlowReboot, Node: n.Name, Stalls: true,
						Reason: fmt.Sprintf("%s holds FLUO's reboot slot and its kubelet stopped posting status %s ago: FLUO keeps the slot until the node comes back or its Node is deleted", n.Name, model.HumanDuration(now.Sub(n.Ready.Since))),
						Short:  "kubelet silent " + model.HumanDuration(now.Sub(n.Ready.Since)),
						Clears: "bring the machine back, or delete the Node if it is gone for good (its slot goes with it)",
						Evidence: with(st.Evidence, ev("Ready", fmt.Sprintf("Unknown since %s (%s)", ts(n.Ready.Since), n.Ready.Reason)),
							ev("bound", model.HumanDuration(in.LostBound)))})
				}
			case rebooted && n.Ready.True() && now.Sub(n.Ready.Since) > in.AgentGrace:
				st.Phase, st.Step = model.PhaseRecovering, "rebooted, agent not running"
				wedged[n.Name] = "its agent did not run after the reboot"
				b := model.Blocker{Kind: BlockerAgentStopped, Node: n.Name, Stalls: true,
					Reason: fmt.Sprintf("%s rebooted (%s) but still says reboot-in-progress=true: its update-agent has not run since the reboot, so FLUO's slot stays taken", n.Name, why),
					Short:  "agent not running",
					Clears: "look at " + agentDaemonSetHint + n.Name + " (a crash-looping agent: flatcar/Flatcar#2421)",
					Evidence: with(st.Evidence, ev("reboot-in-progress set", ts(n.Writes[rebootInProgressWriter].At)+" by "+n.Writes[rebootInProgressWriter].Manager),
						ev("Ready since", ts(n.Ready.Since)), ev("agent grace", model.HumanDuration(in.AgentGrace)))}
				pod, read := in.AgentPods[n.Name]
				switch {
				case !read:
					r.NeedAgentPod = append(r.NeedAgentPod, n.Name)
					b.Reason = fmt.Sprintf("%s rebooted (%s) but still says reboot-in-progress=true past the agent's grace; whether its update-agent runs is not known (its pod not read), and FLUO's slot stays taken", n.Name, why)
					b.Short = "agent ?"
				case !pod.Known:
					b.Reason = fmt.Sprintf("%s rebooted (%s) but still says reboot-in-progress=true past the agent's grace; whether its update-agent runs is unknown (%s), and FLUO's slot stays taken", n.Name, why, pod.Describe(n.Name))
					b.Short = "agent ?"
				case pod.Running && !pod.Since.Before(n.Writes[rebootInProgressWriter].At.Truncate(time.Second)):
					// Its agent has run since the reboot: it is stuck
					// before it clears reboot-in-progress, not stopped.
					st.Step = "rebooted, agent running but stuck"
					wedged[n.Name] = "its agent runs but has not cleared reboot-in-progress"
					b.Reason = fmt.Sprintf("%s rebooted (%s) and %s, yet reboot-in-progress is still true: the agent is stuck before it clears it, so FLUO's slot stays taken", n.Name, why, pod.Describe(n.Name))
					b.Short = "agent stuck"
					b.Clears = "look at the log of " + pod.Name + " (it clears reboot-in-progress on start, then waits for the operator)"
				}
				if n.Unschedulable {
					b.Evidence = append(b.Evidence, offer(n)...)
				}
				add(b)
			case rebooted:
				st.Phase, st.Step = model.PhaseRecovering, "rebooted, waiting for the agent"
			default:
				st.Phase, st.Step = model.PhaseDraining, "draining"
				if why != "" {
					st.Step += " (" + why + ")"
				}
			}
		case n.ok && n.needed:
			st.Phase, st.Step = model.PhaseDraining, "reboot allowed, agent not started"
		case n.ok && !n.needed && !n.inProgress:
			st.Phase, st.Step = model.PhaseRecovering, "rebooted, waiting for the operator"
		case n.needed && n.paused:
			st.Phase, st.Step = model.PhasePending, "paused"
			add(model.Blocker{Kind: BlockerPaused, Node: n.Name, Stalls: true,
				Reason: fmt.Sprintf("%s needs a reboot but is annotated %s=true: FLUO does not consider it", n.Name, AnnRebootPaused),
				Short:  "reboot paused", Clears: "remove " + AnnRebootPaused + " from " + n.Name + " when it may reboot",
				Evidence: st.Evidence})
		case n.needed:
			st.Phase, st.Step = model.PhasePending, "waiting for a slot"
		case n.Unschedulable && n.agentCordoned:
			st.Phase, st.Step = model.PhaseDone, "done, still cordoned"
			e := offer(n)
			if uncordon[n.Name] {
				add(model.Blocker{Kind: model.BlockerCordon, Node: n.Name, Stalls: true, Action: model.ActionUncordon,
					Reason: fmt.Sprintf("%s finished its reboot but is still cordoned by FLUO's agent (%s=true), and its agent does not run: the agent uncordons only after the operator clears reboot-ok, when it runs", n.Name, AnnAgentUnschedulable),
					Short:  "left cordoned", Clears: "uncordon " + n.Name, Evidence: with(st.Evidence, e...)})
			} else if own, _ := AgentCordon(n.Node); !own {
				// Someone else's cordon, after a finished cycle: not FLUO's.
				st.Phase, st.Step = model.PhaseIdle, "idle, cordoned (not by FLUO's agent)"
			} else {
				st.Step = "done, still cordoned by its agent"
			}
		default:
			st.Phase, st.Step = model.PhaseIdle, "idle"
		}
		r.Nodes = append(r.Nodes, st)
	}

	// Waiting nodes: the window, then the slot.
	free, _ := r.Slots.Free()
	var holders, why []string
	for _, s := range r.Slots.Held {
		holders = append(holders, s.Holder)
		if w, ok := wedged[s.Holder]; ok {
			why = append(why, s.Holder+": "+w)
		}
	}
	for _, n := range nodes {
		if !n.rebootable() {
			continue
		}
		// operator.go markBeforeReboot: outside the window it labels no
		// node, whatever the capacity.
		if in.SettingsUnread == "" && in.Settings.Unknown == "" && in.Settings.Window != nil {
			w := in.Settings.Window
			at := now.UTC()
			if !w.Inside(at) {
				next := w.NextStart(at)
				r.Blockers = append(r.Blockers, model.Blocker{Kind: model.BlockerWindow, Node: n.Name,
					Reason: fmt.Sprintf("FLUO starts no reboot outside its window (%s, operator time UTC): opens %s, in %s", w, next.Format("Mon 15:04"), model.HumanDuration(next.Sub(at))),
					Short:  "window: opens in " + model.HumanDuration(next.Sub(at)),
					Clears: "wait: opens " + next.Format("Mon 15:04") + " UTC", Until: next,
					Evidence: []model.Evidence{ev("operator", in.Settings.Deployment), ev("--reboot-window-start", in.Settings.WindowStart),
						ev("--reboot-window-length", in.Settings.WindowLength)}})
				continue
			}
		}
		if free == 0 {
			b := model.Blocker{Kind: model.BlockerLock, Node: n.Name, Stalls: len(why) > 0,
				Reason: fmt.Sprintf("FLUO reboots %d node at a time and %s holds the slot", DefaultMaxRebooting, strings.Join(holders, ", ")),
				Short:  "slot: " + strings.Join(holders, ","),
				Clears: "wait for " + strings.Join(holders, ", ") + " to finish",
				Evidence: []model.Evidence{ev("capacity", fmt.Sprintf("%d (operator.go defaultMaxRebootingNodes)", DefaultMaxRebooting)),
					ev("held by", strings.Join(holders, ","))}}
			if len(why) > 0 {
				b.Reason += " (" + strings.Join(why, "; ") + ")"
				b.Clears = "clear what stops " + strings.Join(holders, ", ")
			}
			r.Blockers = append(r.Blockers, b)
		}
	}
	for n := range uncordon {
		r.Uncordon = append(r.Uncordon, n)
	}
	sort.Strings(r.Uncordon)
	r.NeedAgentPod = dedupe(r.NeedAgentPod)
	if len(podsUnread) > 0 {
		// The uncordon decision needed them: FLUO's reading is unknown
		// (the snapshot lists it unread), never "agent not running".
		r.Unknown = "update-agent pods not read (" + strings.Join(podsUnread, "; ") + "): whether FLUO's agent runs there, and will uncordon its node itself, is unknown"
	}
	sort.SliceStable(r.Blockers, func(a, b int) bool { return r.Blockers[a].Node < r.Blockers[b].Node })
	return r
}

// annotations is a node's FLUO keys as evidence.
func annotations(n node) []model.Evidence {
	var out []model.Evidence
	for _, k := range []string{AnnRebootNeeded, AnnRebootOK, AnnRebootInProgress, AnnRebootPaused, AnnAgentUnschedulable, AnnStatus, AnnNewVersion} {
		if v, ok := n.Annotations[k]; ok {
			out = append(out, ev(strings.TrimPrefix(k, Prefix), v))
		}
	}
	for _, k := range []string{LabelBeforeReboot, LabelAfterReboot} {
		if v, ok := n.Labels[k]; ok {
			out = append(out, ev("label "+strings.TrimPrefix(k, Prefix), v))
		}
	}
	return out
}

// rebootSeen says whether the node rebooted since its agent set
// reboot-in-progress: the caller saw its boot id change, or its Ready
// condition turned True after the agent's write (a reboot passes through
// NotReady).
func rebootSeen(in Input, n node) (bool, string) {
	if in.Rebooted[n.Name] {
		return true, "its boot id changed since it set reboot-in-progress"
	}
	w, ok := n.Writes[rebootInProgressWriter]
	if !ok {
		return false, "cannot tell whether it rebooted: no record of when reboot-in-progress was set"
	}
	if n.Ready.True() && n.Ready.Since.After(w.At) {
		return true, fmt.Sprintf("Ready again since %s, after %s set reboot-in-progress at %s", ts(n.Ready.Since), w.Manager, ts(w.At))
	}
	return false, ""
}

// checkBlocker names the before- or after-reboot annotations a node with
// that label still waits for (checkReboot: every one must be "true").
func checkBlocker(in Input, now time.Time, n node, which, label string, want []string, writer string) (*model.Blocker, bool) {
	since := n.Writes[writer].At
	stalls := !since.IsZero() && now.Sub(since) > in.CheckBound
	ev0 := []model.Evidence{ev("label "+strings.TrimPrefix(label, Prefix), "true since "+ts(since))}
	if why := settingsUnknown(in); why != "" {
		return &model.Blocker{Kind: BlockerRebootCheck, Node: n.Name, Stalls: stalls,
			Reason: fmt.Sprintf("%s waits for FLUO's %s-reboot checks; which annotations they are is unknown (%s)", n.Name, which, why),
			Short:  which + "-reboot check ?", Clears: "read the operator's --" + which + "-reboot-annotations", Evidence: with(ev0)}, stalls
	}
	var missing []string
	for _, a := range want {
		if n.Annotations[a] != True {
			v, ok := n.Annotations[a]
			switch {
			case a == "":
				missing = append(missing, `"" (an empty name in --`+which+`-reboot-annotations: never satisfied)`)
			case !ok:
				missing = append(missing, a+" (unset)")
			default:
				missing = append(missing, fmt.Sprintf("%s=%q", a, v))
			}
		}
	}
	if len(missing) == 0 {
		if len(want) == 0 && stalls {
			// Nothing to wait for: the operator removes the label on its
			// next pass (every 30s); one that stays means it is not running.
			return &model.Blocker{Kind: BlockerRebootCheck, Node: n.Name, Stalls: true,
				Reason: fmt.Sprintf("%s has carried the %s-reboot label since %s with no check configured: the operator, which clears it every %s, is not running", n.Name, which, ts(since), reconciliationPeriod),
				Short:  "operator not running", Clears: "look at the operator " + in.Settings.Deployment, Evidence: with(ev0)}, true
		}
		return nil, false
	}
	b := &model.Blocker{Kind: BlockerRebootCheck, Node: n.Name, Stalls: stalls,
		Reason: fmt.Sprintf("%s waits for its %s-reboot check: %s", n.Name, which, strings.Join(missing, ", ")),
		Short:  which + "-reboot: " + strings.TrimPrefix(strings.SplitN(missing[0], " ", 2)[0], Prefix),
		Clears: "make the " + which + "-reboot check set " + strings.Join(want, ", ") + " to \"true\" on " + n.Name,
		Evidence: with(ev0, ev("operator", in.Settings.Deployment),
			ev("--"+which+"-reboot-annotations", strings.Join(want, ",")))}
	return b, stalls
}

func settingsUnknown(in Input) string {
	if in.SettingsUnread != "" {
		return in.SettingsUnread
	}
	return in.Settings.Unknown
}

func (r *Report) notOwned(node, why string) {
	if r.NotOwned == nil {
		r.NotOwned = map[string]string{}
	}
	r.NotOwned[node] = why
}

func dedupe(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	sort.Strings(s)
	out := s[:1]
	for _, x := range s[1:] {
		if x != out[len(out)-1] {
			out = append(out, x)
		}
	}
	return out
}
