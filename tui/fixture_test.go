package tui

import (
	"context"
	"fmt"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/rebootwatch/rebootwatch/internal/explain"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/model"
)

// t0 is the fixtures' epoch.
var t0 = time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)

// clock is a settable fake clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// fixSpec is the fixture's lock shape, read only by fakeJudge: the holder
// and when the lock was taken.
type fixSpec struct {
	kind   model.LockKind
	holder string
	at     time.Time
}

func (s *fixSpec) LockKind() model.LockKind { return s.kind }

// fakeJudge reads kured's annotation as the holder's node name and a Lease's
// holder as a machine-id-derived id from ids; holders matching no node are
// ghosts. verdicts overrides the verdict per holder.
type fakeJudge struct {
	ids      map[string]string // raw holder id -> node
	verdicts map[string]model.Verdict
}

func (f *fakeJudge) Judge(c *model.Cluster, now time.Time) []model.LockStatus {
	var out []model.LockStatus
	for _, l := range c.Locks() {
		s := model.LockStatus{LockRef: l.LockRef, UID: l.UID, ResourceVersion: l.ResourceVersion}
		if sp, ok := l.Spec.(*fixSpec); ok {
			s.Holder, s.Created = sp.holder, sp.at
		}
		node := s.Holder
		if n, ok := f.ids[s.Holder]; ok {
			node = n
		}
		_, exists := c.Node(node)
		switch {
		case s.Holder == "":
			s.Verdict, s.Reason = model.VerdictFree, "not held"
		case exists:
			s.HolderNodes = []string{node}
			s.Verdict, s.Reason = model.VerdictHeld, "holder "+node+" is in a normal reboot cycle"
		default:
			s.Verdict, s.Reason = model.VerdictGhost, "holder matches no current node"
			s.Actions = []model.Action{model.ActionReap}
		}
		if v, ok := f.verdicts[s.Holder]; ok {
			s.Verdict = v
			if v == model.VerdictOrphaned {
				s.Reason = "holder rebooted, is Ready and schedulable, steady for 12m"
				s.Actions = []model.Action{model.ActionRelease}
			}
		}
		s.Evidence = []model.Evidence{{Key: "holder", Value: s.Holder}}
		out = append(out, s)
	}
	return out
}

// fakeActions plans with fixed gates and records Do calls.
type fakeActions struct {
	mu       sync.Mutex
	failGate string // a gate name that fails, "" for none
	result   lock.Result
	calls    []lock.Plan
	unsafe   []bool
	block    chan struct{} // when set, Do waits for it (a hung API)
}

// PlanUncordon plans like the engine would for a done · still cordoned node.
func (f *fakeActions) PlanUncordon(c *model.Cluster, node string, now time.Time) (lock.Plan, error) {
	n, ok := c.Node(node)
	if !ok {
		return lock.Plan{}, fmt.Errorf("no node %q", node)
	}
	p := lock.Plan{Action: model.ActionUncordon, Allowed: true,
		Status: model.LockStatus{Holder: node, HolderNodes: []string{node}, Reason: "done · still cordoned"}}
	for _, g := range []string{lock.GateFreshData, lock.GateNode, lock.GateOtherNodes, lock.GateVolumes} {
		p.Gates = append(p.Gates, lock.Gate{Name: g, Passed: true, Reason: "ok"})
	}
	p.Write = lock.Write{Object: "Node " + node, UID: n.UID, Op: lock.OpUncordon, Node: node, BootID: n.BootID,
		Summary: "set spec.unschedulable true → false (uncordon " + node + ")"}
	return p, nil
}

func (f *fakeActions) Plan(c *model.Cluster, ref model.LockRef, holder string, _ int, a model.Action, now time.Time) (lock.Plan, error) {
	for _, s := range c.LockStatuses() {
		if s.LockRef != ref || s.Holder != holder {
			continue
		}
		p := lock.Plan{Status: s, Action: a, Allowed: true}
		for _, g := range []string{lock.GateFreshData, lock.GateVerdict, lock.GateOtherNodes, lock.GateVolumes} {
			gt := lock.Gate{Name: g, Passed: g != f.failGate, Reason: "ok"}
			if !gt.Passed {
				gt.Reason = "2 Longhorn volumes degraded"
				p.Allowed = false
				p.Refusal = fmt.Sprintf("%s refused: gate %s failed: %s", a, g, gt.Reason)
			}
			p.Gates = append(p.Gates, gt)
		}
		p.Write = lock.Write{Ref: ref, Object: "DaemonSet " + ref.Namespace + "/" + ref.Name, UID: s.UID, ResourceVersion: s.ResourceVersion,
			Op: kured.OpRemoveAnnotation, Field: "metadata.annotations", Holder: s.Holder,
			Summary: "remove annotation " + kured.Annotation + " (lock held by " + s.Holder + ")"}
		if ref.Kind == model.LockFleetlock {
			p.Write.Object = "Lease " + ref.Namespace + "/" + ref.Name
			p.Write.Op = fleetlock.OpClearHolder
			p.Write.Summary = fmt.Sprintf("set spec.holderIdentity %q → \"\" (leaseTransitions kept at 0)", s.Holder)
		}
		return p, nil
	}
	return lock.Plan{}, fmt.Errorf("no lock %s held by %q", ref, holder)
}

func (f *fakeActions) Do(ctx context.Context, p lock.Plan, o lock.DoOptions) lock.Result {
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return lock.Result{Outcome: model.OutcomeError, Message: ctx.Err().Error()}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, p)
	f.unsafe = append(f.unsafe, o.AllowUnsafe)
	return f.result
}

func ready(status string, since time.Time) []model.Condition {
	return []model.Condition{
		{Type: "MemoryPressure", Status: "False", Reason: "KubeletHasSufficientMemory", LastTransition: t0.Add(-72 * time.Hour)},
		{Type: "Ready", Status: status, Reason: "KubeletReady", LastTransition: since},
	}
}

const (
	oldOS, oldKernel = "Ubuntu 22.04.4 LTS", "5.15.0-105-generic"
	newOS, newKernel = "Ubuntu 22.04.5 LTS", "5.15.0-125-generic"
	ghostID          = "978a225b3d7b40e9acd7ce9b62f68444"
)

func node(name string, roles []string, upgraded bool, boot string) model.Node {
	n := model.Node{Name: name, UID: "uid-" + name, Roles: roles, Conditions: ready("True", t0.Add(-48*time.Hour)),
		BootID: boot, MachineID: "mid-" + name, OSImage: oldOS, KernelVersion: oldKernel, Created: t0.Add(-90 * 24 * time.Hour)}
	if upgraded {
		n.OSImage, n.KernelVersion = newOS, newKernel
	}
	return n
}

// fixture is a hand-built maintenance window: control planes and two workers
// done, w-03 draining under kured's lock with its volumes degraded, five
// workers pending, w-09 down, and a fleetlock Lease held by a ghost.
type fixture struct {
	c       *model.Cluster
	clock   *clock
	judge   *fakeJudge
	actions *fakeActions
}

// kured's node annotations (the fixture's local kured is its lock).
var kuredMark, kuredNeeded = kured.MarkAnnotation, kured.RebootNeededAnnotation

func newFixture() *fixture {
	f := &fixture{clock: &clock{now: t0}, judge: &fakeJudge{ids: map[string]string{}, verdicts: map[string]model.Verdict{}}, actions: &fakeActions{
		result: lock.Result{Outcome: model.OutcomeDone, Message: "released"}}}
	c := model.NewCluster("prod-eu-1", model.Options{})
	c.LockSources = []model.SourceName{model.SourceKured, model.SourceFleetlock}
	c.Judge, c.Explain = f.judge.Judge, explain.For(explain.Options{})
	f.c = c
	now := t0.Add(-2 * time.Hour)
	at := func(d time.Duration) time.Time { return now.Add(d) }
	healthy := func(name string) model.SourceChanged {
		return model.SourceChanged{Health: model.SourceHealth{Name: model.SourceName(name), Status: model.StatusOK, LastSync: at(0)}}
	}
	c.Apply(model.Batch{healthy("nodes"), healthy("kured"), healthy("fleetlock"), healthy("longhorn"), healthy("prometheus")}, at(0))
	var names []string
	for i := 1; i <= 3; i++ {
		names = append(names, fmt.Sprintf("cp-%d", i))
	}
	for i := 1; i <= 9; i++ {
		names = append(names, fmt.Sprintf("w-%02d", i))
	}
	req := map[string]bool{}
	for _, n := range names {
		role := []string{"worker"}
		if n[:2] == "cp" {
			role = []string{"control-plane"}
		}
		c.Apply(model.NodeUpserted{Node: node(n, role, false, "boot-a-"+n)}, at(0))
		req[n] = true
	}
	req["w-09"] = false
	c.Apply(model.RebootRequiredSet{Values: req}, at(0))
	kured := model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured"}
	lease := model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-default"}
	c.Apply(model.LockUpserted{Lock: model.LockObject{LockRef: kured, UID: "ds-uid", ResourceVersion: "100"}}, at(0))
	c.Apply(model.LockUpserted{Lock: model.LockObject{LockRef: lease, UID: "lease-uid", ResourceVersion: "7",
		Spec: &fixSpec{kind: model.LockFleetlock, holder: ghostID, at: t0.Add(-19 * 24 * time.Hour)}}}, at(0))
	for i := 0; i < 12; i++ {
		c.Apply(model.VolumeUpserted{Volume: model.Volume{Namespace: "longhorn-system", Name: fmt.Sprintf("pvc-%02d", i),
			Robustness: model.RobustnessHealthy, State: "attached", Replicas: 3, Node: names[3+i%6]}}, at(0))
	}
	c.Recompute(at(0))
	// Five nodes go through a whole cycle, 20 minutes each.
	step := at(time.Minute)
	rv := 100
	for _, n := range []string{"cp-1", "cp-2", "cp-3", "w-01", "w-02"} {
		rv++
		c.Apply(model.LockUpserted{Lock: model.LockObject{LockRef: kured, UID: "ds-uid", ResourceVersion: fmt.Sprint(rv), Spec: &fixSpec{kind: model.LockKured, holder: n, at: step}}}, step)
		nd, _ := c.Node(n)
		cp := *nd
		cp.Unschedulable = true
		c.Apply(model.NodeUpserted{Node: cp}, step)
		c.Recompute(step)
		step = step.Add(6 * time.Minute)
		cp.Conditions = ready("False", step)
		c.Apply(model.NodeUpserted{Node: cp}, step)
		c.Recompute(step)
		step = step.Add(5 * time.Minute)
		up := node(n, cp.Roles, true, "boot-b-"+n)
		up.Conditions = ready("True", step)
		up.Unschedulable = true
		c.Apply(model.NodeUpserted{Node: up}, step)
		req[n] = false
		c.Apply(model.RebootRequiredSet{Values: req}, step)
		c.Recompute(step)
		step = step.Add(4 * time.Minute)
		up.Unschedulable = false
		c.Apply(model.NodeUpserted{Node: up}, step)
		rv++
		c.Apply(model.LockUpserted{Lock: model.LockObject{LockRef: kured, UID: "ds-uid", ResourceVersion: fmt.Sprint(rv)}}, step)
		c.Recompute(step)
		step = step.Add(5 * time.Minute)
	}
	// w-09 goes down outside any cycle.
	nd, _ := c.Node("w-09")
	down := *nd
	down.Conditions = ready("False", step)
	c.Apply(model.NodeUpserted{Node: down}, step)
	c.Recompute(step)
	// w-03 takes the lock and drains; its volumes degrade.
	step = t0.Add(-7 * time.Minute)
	rv++
	c.Apply(model.LockUpserted{Lock: model.LockObject{LockRef: kured, UID: "ds-uid", ResourceVersion: fmt.Sprint(rv), Spec: &fixSpec{kind: model.LockKured, holder: "w-03", at: step}}}, step)
	nd, _ = c.Node("w-03")
	dr := *nd
	dr.Unschedulable = true
	dr.Annotations = map[string]string{kuredMark: "true", kuredNeeded: step.Format(time.RFC3339)}
	c.Apply(model.NodeUpserted{Node: dr}, step)
	c.Recompute(step)
	step = t0.Add(-3 * time.Minute)
	for _, i := range []int{0, 6} {
		c.Apply(model.VolumeUpserted{Volume: model.Volume{Namespace: "longhorn-system", Name: fmt.Sprintf("pvc-%02d", i),
			Robustness: model.RobustnessDegraded, State: "attached", Replicas: 3, Node: "w-03"}}, step)
	}
	// Prometheus went stale two minutes ago.
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourcePrometheus, Status: model.StatusStale,
		Message: "query timed out", LastSync: t0.Add(-2 * time.Minute)}}, step)
	c.Recompute(step)
	c.Recompute(t0)
	return f
}

// model builds the root model over the fixture.
func (f *fixture) model(o Options) *Model {
	o.Cluster = f.c
	o.Clock = f.clock.Now
	o.WallClock = f.clock.Now
	if o.Actions == nil && !o.ReadOnly {
		o.Actions = f.actions
	}
	return New(o)
}

func size(m *Model, w, h int) {
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
}

func press(m *Model, keys ...string) tea.Cmd {
	var last tea.Cmd
	for _, k := range keys {
		_, last = m.Update(keyMsg(k))
	}
	return last
}

func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	r := []rune(k)
	return tea.KeyPressMsg{Code: r[0], Text: k}
}
