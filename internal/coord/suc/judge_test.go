package suc_test

import (
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc/suctest"
	"github.com/rebootwatch/rebootwatch/model"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

const ns = "system-upgrade"

func node(name string, labels map[string]string, cordoned bool) coord.Node {
	l := map[string]string{suc.LabelHostname: name}
	for k, v := range labels {
		l[k] = v
	}
	return coord.Node{Name: name, Labels: l, Unschedulable: cordoned, Ready: coord.Ready{Status: "True", Since: now.Add(-time.Hour)}}
}

// cordonedBy is n cordoned by manager at: the managedFields entry that
// owns spec.unschedulable (coord.NodeFrom).
func cordonedBy(n coord.Node, manager string, at time.Time) coord.Node {
	n.Unschedulable, n.UnschedulableSetBy, n.UnschedulableSetAt, n.UnschedulableSetOp = true, manager, at, "Update"
	return n
}

func plan(t *testing.T, name string, spec suctest.PlanSpec, status map[string]any) suc.Plan {
	t.Helper()
	u := suctest.Plan(ns, name, spec)
	if status != nil {
		u.Object["status"] = status
	}
	p := suc.ParsePlan(u.Object)
	if len(p.Bad) > 0 && status != nil {
		t.Fatalf("fixture plan reads as bad: %v", p.Bad)
	}
	return p
}

func job(t *testing.T, planName, nodeName, version string, started, failed time.Time) suc.Job {
	t.Helper()
	latest := suctest.MungeVersion(version)
	j := suctest.Job(ns, planName, nodeName, latest, suctest.LatestHash(latest, ""), true, false)
	j.CreationTimestamp.Time = started
	out, ok := suc.JobFrom(j)
	if !ok {
		t.Fatal("fixture job not SUC's")
	}
	out.Started = started
	if failed.IsZero() {
		out.Active = 1
	} else {
		out.Failed = 3
		out.Conditions = []suc.Condition{{Type: "Failed", Status: "True", Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransition: failed}}
	}
	return out
}

func kinds(bs []model.Blocker, node string) []model.BlockerKind {
	var out []model.BlockerKind
	for _, b := range bs {
		if b.Node == node {
			out = append(out, b.Kind)
		}
	}
	return out
}

func find(t *testing.T, bs []model.Blocker, node string, k model.BlockerKind) model.Blocker {
	t.Helper()
	for _, b := range bs {
		if b.Node == node && b.Kind == k {
			return b
		}
	}
	t.Fatalf("no %s blocker for %q in %+v", k, node, bs)
	return model.Blocker{}
}

func evidence(b model.Blocker, key string) string {
	for _, e := range b.Evidence {
		if e.Key == key {
			return e.Value
		}
	}
	return ""
}

var drainPlan = suctest.PlanSpec{Concurrency: 1, Drain: true, Version: "v1.31.4+k3s1"}

// A job that failed on a node the plan drained: job-failed with the job's
// last error, and the node left cordoned (SUC uncordons only after a
// successful job) with the uncordon action; the next node waits on a slot
// that will not free itself, so its lock blocker stalls.
func TestJobFailedLeavesNodeCordoned(t *testing.T) {
	p := plan(t, "k3s-server", drainPlan, suctest.Synced(drainPlan.Version, "", []string{"n1"}, now.Add(-time.Hour)))
	in := suc.Input{
		Plans: []suc.Plan{p},
		Jobs:  []suc.Job{job(t, "k3s-server", "n1", drainPlan.Version, now.Add(-40*time.Minute), now.Add(-20*time.Minute))},
		Nodes: []coord.Node{cordonedBy(node("n1", nil, false), suctest.KubectlManager, now.Add(-39*time.Minute)), node("n2", nil, false)},
	}
	r := suc.Judge(in, now)
	if got := kinds(r.Blockers, "n1"); len(got) != 2 || got[0] != suc.BlockerJobFailed || got[1] != model.BlockerCordon {
		t.Fatalf("n1 blockers = %v, want job-failed then stuck-cordon", got)
	}
	if sc := find(t, r.Blockers, "n1", model.BlockerCordon); !strings.Contains(evidence(sc, "cordon"), "cordoned by kubectl at 2026-12-01T11:21:00Z (Update), while job") {
		t.Errorf("stuck-cordon does not say whose cordon: %v", sc.Evidence)
	}
	jf := find(t, r.Blockers, "n1", suc.BlockerJobFailed)
	if !strings.Contains(jf.Reason, "BackoffLimitExceeded: Job has reached the specified backoff limit") || evidence(jf, "backoffLimit") != "2" {
		t.Errorf("job-failed = %q, evidence %v", jf.Reason, jf.Evidence)
	}
	sc := find(t, r.Blockers, "n1", model.BlockerCordon)
	if sc.Action != model.ActionUncordon || len(r.Uncordon) != 1 || r.Uncordon[0] != "n1" {
		t.Errorf("stuck-cordon action %q, uncordon %v", sc.Action, r.Uncordon)
	}
	lk := find(t, r.Blockers, "n2", model.BlockerLock)
	if !lk.Stalls || !strings.Contains(lk.Reason, "n1 job failed") {
		t.Errorf("n2 lock blocker = %+v", lk)
	}
	if st := r.Plans[0].Nodes[0]; st.Step != "job failed" {
		t.Errorf("n1 step %q", st.Step)
	}
}

// The job was deleted after its TTL; the plan's Complete condition still
// says a job failed on the node.
func TestJobFailedFromPlanCondition(t *testing.T) {
	latest := suctest.MungeVersion(drainPlan.Version)
	msg := suctest.JobFailedMessage(ns, suctest.JobName("k3s-server", "n1", suctest.LatestHash(latest, "")), "n1", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
	st := suctest.StatusWith(drainPlan.Version, "", []string{"n1"},
		suctest.Cond("Validated", "True", "PlanIsValid", "", now), suctest.Cond("LatestResolved", "True", "Version", "", now),
		suctest.Cond("Complete", "False", "JobFailed", msg, now))
	in := suc.Input{Plans: []suc.Plan{plan(t, "k3s-server", drainPlan, st)}, Nodes: []coord.Node{cordonedBy(node("n1", nil, false), "kubectl-drain", now.Add(-time.Hour))}}
	r := suc.Judge(in, now)
	if got := kinds(r.Blockers, "n1"); len(got) != 1 || got[0] != suc.BlockerJobFailed {
		t.Fatalf("n1 blockers = %v, want job-failed only", got)
	}
	// Without the job nothing proves whose cordon it is: SUC creates the
	// job again once it deleted it, and that job cordons again.
	if len(r.Uncordon) != 0 || !strings.Contains(r.NotOwned["n1"], "cannot be told") || !strings.Contains(r.NotOwned["n1"], "kubectl-drain") {
		t.Errorf("uncordon %v, not owned %q", r.Uncordon, r.NotOwned["n1"])
	}
}

// Issue 32 §3: a node cordoned by hand, and a Job in another namespace
// (a tenant's) with SUC's plan and node labels but not its controller
// label, is not SUC's: no stuck-cordon, no uncordon. Before the fix it was
// "its plan no longer exists: stuck-cordon" with the uncordon offered.
func TestTenantJobIsNotSUCs(t *testing.T) {
	tenant := job(t, "k3s-agent", "n1", drainPlan.Version, now.Add(-time.Hour), now.Add(-30*time.Minute))
	tenant.Namespace, tenant.Controller = "tenant", ""
	in := suc.Input{
		Plans: []suc.Plan{plan(t, "k3s-server", drainPlan, suctest.Synced(drainPlan.Version, "", nil, now.Add(-time.Hour)))},
		Jobs:  []suc.Job{tenant},
		Nodes: []coord.Node{cordonedBy(node("n1", nil, false), "kubectl-cordon", now.Add(-50*time.Minute))},
	}
	r := suc.Judge(in, now)
	if len(r.Uncordon) != 0 || len(kinds(r.Blockers, "n1")) != 0 {
		t.Fatalf("a tenant's look-alike job made n1 SUC's: uncordon %v, blockers %v", r.Uncordon, kinds(r.Blockers, "n1"))
	}
	// With the controller label but outside SUC's namespace: still not.
	in.Jobs[0].Controller = suctest.ControllerName
	if r := suc.Judge(in, now); len(r.Uncordon) != 0 {
		t.Fatalf("a labelled job in another namespace made n1 SUC's: %v", r.Uncordon)
	}
}

// Issue 32 §3: a job failed; later someone cordoned the node by hand
// (kubectl cordon after an uncordon). That cordon is not SUC's and is not
// offered; the job-failed blocker says whose cordon it is.
func TestHandCordonAfterJobFailed(t *testing.T) {
	p := plan(t, "k3s-server", drainPlan, suctest.Synced(drainPlan.Version, "", []string{"n1"}, now.Add(-time.Hour)))
	in := suc.Input{
		Plans: []suc.Plan{p},
		Jobs:  []suc.Job{job(t, "k3s-server", "n1", drainPlan.Version, now.Add(-40*time.Minute), now.Add(-20*time.Minute))},
		Nodes: []coord.Node{cordonedBy(node("n1", nil, false), suctest.KubectlManager, now.Add(-5*time.Minute))},
	}
	r := suc.Judge(in, now)
	if len(r.Uncordon) != 0 {
		t.Fatalf("a later hand cordon offered for uncordon: %v", r.Uncordon)
	}
	why := r.NotOwned["n1"]
	if !strings.Contains(why, "cordoned by kubectl at 2026-12-01T11:55:00Z (Update), after job") {
		t.Errorf("not owned = %q", why)
	}
	if jf := find(t, r.Blockers, "n1", suc.BlockerJobFailed); evidence(jf, "cordon") != why {
		t.Errorf("job-failed evidence %v", jf.Evidence)
	}
	// A cordon older than the job (there before SUC came) is not the job's.
	in.Nodes[0] = cordonedBy(node("n1", nil, false), suctest.KubectlManager, now.Add(-2*time.Hour))
	if r := suc.Judge(in, now); len(r.Uncordon) != 0 || !strings.Contains(r.NotOwned["n1"], "before job") {
		t.Errorf("an older cordon: uncordon %v, %q", r.Uncordon, r.NotOwned["n1"])
	}
	// Whose cordon it is cannot be read: not offered.
	in.Nodes[0] = node("n1", nil, true)
	if r := suc.Judge(in, now); len(r.Uncordon) != 0 || !strings.Contains(r.NotOwned["n1"], "cannot be read") {
		t.Errorf("an unattributed cordon: uncordon %v, %q", r.Uncordon, r.NotOwned["n1"])
	}
}

// Issue 32 §3: Jobs not read (RBAC): SUC's reading is unknown (the
// snapshot lists it unread, exit 1), and no uncordon rests on it. Before
// the fix the kind was "ok" and the plan's JobFailed condition offered the
// uncordon of a node whose recreated job was running.
func TestJobsUnreadIsUnknown(t *testing.T) {
	latest := suctest.MungeVersion(drainPlan.Version)
	msg := suctest.JobFailedMessage(ns, suctest.JobName("k3s-server", "n1", suctest.LatestHash(latest, "")), "n1", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
	st := suctest.StatusWith(drainPlan.Version, "", []string{"n1"},
		suctest.Cond("Validated", "True", "PlanIsValid", "", now), suctest.Cond("LatestResolved", "True", "Version", "", now),
		suctest.Cond("Complete", "False", "JobFailed", msg, now.Add(-30*time.Minute)))
	in := suc.Input{Plans: []suc.Plan{plan(t, "k3s-server", drainPlan, st)}, JobsUnread: "forbidden: jobs.batch is forbidden",
		Nodes: []coord.Node{cordonedBy(node("n1", nil, false), "kubectl-drain", now.Add(-time.Minute))}}
	r := suc.Judge(in, now)
	if len(r.Uncordon) != 0 || !strings.Contains(r.Unknown, "jobs are not read (forbidden") {
		t.Fatalf("jobs unread: unknown %q, uncordon %v", r.Unknown, r.Uncordon)
	}
}

// A job of SUC's runs on the node now (another plan's, or one created
// again): SUC is at work there, so the failed job's cordon is not offered.
func TestOtherJobRunsOnNode(t *testing.T) {
	p := plan(t, "k3s-server", drainPlan, suctest.Synced(drainPlan.Version, "", []string{"n1"}, now.Add(-time.Hour)))
	q := plan(t, "k3s-agent", drainPlan, suctest.Synced(drainPlan.Version, "", []string{"n1"}, now.Add(-time.Hour)))
	in := suc.Input{
		Plans: []suc.Plan{p, q},
		Jobs: []suc.Job{job(t, "k3s-server", "n1", drainPlan.Version, now.Add(-40*time.Minute), now.Add(-20*time.Minute)),
			job(t, "k3s-agent", "n1", drainPlan.Version, now.Add(-2*time.Minute), time.Time{})},
		Nodes: []coord.Node{cordonedBy(node("n1", nil, false), suctest.KubectlManager, now.Add(-39*time.Minute))},
	}
	r := suc.Judge(in, now)
	if len(r.Uncordon) != 0 || !strings.Contains(r.NotOwned["n1"], "runs on n1 now") {
		t.Fatalf("uncordon %v, not owned %q", r.Uncordon, r.NotOwned["n1"])
	}
}

// A slot held by a hostname no node has: a ghost, named as a stalling
// lock blocker of the plan; never from a node list that was not read.
func TestGhostSlot(t *testing.T) {
	p := plan(t, "k3s-server", drainPlan, suctest.Synced(drainPlan.Version, "", []string{"gone"}, now))
	r := suc.Judge(suc.Input{Plans: []suc.Plan{p}, Nodes: []coord.Node{node("n1", nil, false)}}, now)
	g := find(t, r.Blockers, "", model.BlockerLock)
	if !g.Stalls || !strings.Contains(g.Reason, "gone, which matches no node") {
		t.Errorf("ghost = %+v", g)
	}
	if s := r.Plans[0].Slots; !s.Known || len(s.Held) != 1 || s.Held[0].Node != "" {
		t.Errorf("slots = %+v", s)
	}
	r = suc.Judge(suc.Input{Plans: []suc.Plan{p}, NodesUnread: "stale (no word from the server for 15s)"}, now)
	for _, b := range r.Blockers {
		if b.Kind == model.BlockerLock {
			t.Errorf("a ghost judged from unread nodes: %+v", b)
		}
	}
	if r.Plans[0].Slots.Known {
		t.Error("slots known from unread nodes")
	}
}

// A hostname that is the label, not the Node name, maps to its node.
func TestSlotMapsHostnameLabel(t *testing.T) {
	p := plan(t, "k3s-server", drainPlan, suctest.Synced(drainPlan.Version, "", []string{"host-a"}, now))
	n := node("ip-10-0-0-1.ec2.internal", nil, false)
	n.Labels[suc.LabelHostname] = "host-a"
	r := suc.Judge(suc.Input{Plans: []suc.Plan{p}, Nodes: []coord.Node{n}}, now)
	if s := r.Plans[0].Slots.Held; len(s) != 1 || s[0].Node != n.Name {
		t.Fatalf("slot = %+v", s)
	}
}

func TestPlanConditions(t *testing.T) {
	for _, c := range []struct {
		name   string
		status map[string]any
		want   model.BlockerKind
		reason string
	}{
		{"not validated", suctest.StatusWith(drainPlan.Version, "", nil,
			suctest.Cond("Validated", "False", "Error", "spec.window is invalid", now)), suc.BlockerNotValidated, "not validated: Error: spec.window is invalid"},
		{"not resolved", suctest.StatusWith(drainPlan.Version, "", nil,
			suctest.Cond("Validated", "True", "PlanIsValid", "", now),
			suctest.Cond("LatestResolved", "False", "Error", "cannot resolve plan: missing channel and version", now)), suc.BlockerNotResolved, "missing channel and version"},
		{"never processed", map[string]any{}, suc.BlockerNotValidated, "has not processed it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := suc.ParsePlan(func() map[string]any {
				u := suctest.Plan(ns, "p", drainPlan)
				u.Object["status"] = c.status
				return u.Object
			}())
			r := suc.Judge(suc.Input{Plans: []suc.Plan{p}, Nodes: []coord.Node{node("n1", nil, false)}}, now)
			b := find(t, r.Blockers, "", c.want)
			if !b.Stalls || !strings.Contains(b.Reason, c.reason) {
				t.Errorf("%s = %q", c.want, b.Reason)
			}
		})
	}
}

// Outside spec.window with no node applying, SUC creates no job: each
// waiting node is told when the window opens.
func TestWindow(t *testing.T) {
	spec := drainPlan
	spec.Window = []string{"sunday", "22:00", "23:59", "UTC"} // now is a Tuesday
	p := plan(t, "k3s-server", spec, suctest.Waiting(spec.Version, "", now))
	r := suc.Judge(suc.Input{Plans: []suc.Plan{p}, Nodes: []coord.Node{node("n1", nil, false)}}, now)
	b := find(t, r.Blockers, "n1", model.BlockerWindow)
	if want := time.Date(2026, 12, 6, 22, 0, 0, 0, time.UTC); !b.Until.Equal(want) {
		t.Errorf("until %v, want %v", b.Until, want)
	}
	if !strings.Contains(evidence(b, suc.CondComplete), "Waiting") {
		t.Errorf("evidence %v", b.Evidence)
	}
	spec.Window = []string{"tuesday", "00:00", "23:59", "UTC"}
	p = plan(t, "k3s-server", spec, suctest.Synced(spec.Version, "", nil, now))
	r = suc.Judge(suc.Input{Plans: []suc.Plan{p}, Nodes: []coord.Node{node("n1", nil, false)}}, now)
	for _, b := range r.Blockers {
		if b.Kind == model.BlockerWindow {
			t.Errorf("window blocker inside the window: %+v", b)
		}
	}
}

// A job draining a cordoned node longer than the bound, held by a budget.
func TestDrainHeldByPDB(t *testing.T) {
	p := plan(t, "k3s-server", drainPlan, suctest.Synced(drainPlan.Version, "", []string{"n1"}, now))
	pod := model.Pod{Namespace: "shop", Name: "web-0", Node: "n1", Phase: model.PodRunning, Ready: true,
		Labels: map[string]string{"app": "web"}, OwnerKind: "ReplicaSet"}
	pdb := model.PDB{Namespace: "shop", Name: "web", Selector: &model.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		MinAvailable: "1", CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1, Observed: true}
	in := suc.Input{Plans: []suc.Plan{p},
		Jobs:  []suc.Job{job(t, "k3s-server", "n1", drainPlan.Version, now.Add(-25*time.Minute), time.Time{})},
		Nodes: []coord.Node{node("n1", nil, true)},
		Pods:  map[string][]model.Pod{"n1": {pod}}, PDBs: []model.PDB{pdb}}
	r := suc.Judge(in, now)
	b := find(t, r.Blockers, "n1", model.BlockerDrain)
	if b.Short != "PDB shop/web" || !strings.Contains(b.Reason, "shop/web-0") {
		t.Errorf("drain = %+v", b)
	}
	in.Pods = nil
	r = suc.Judge(in, now)
	if b := find(t, r.Blockers, "n1", model.BlockerDrain); !strings.Contains(b.Reason, "cannot tell") {
		t.Errorf("drain with pods unread = %q", b.Reason)
	}
	in.Jobs[0].Started = now.Add(-time.Minute)
	if r := suc.Judge(in, now); len(kinds(r.Blockers, "n1")) != 0 {
		t.Errorf("drain blocker within the bound: %v", r.Blockers)
	}
}

// A plan deleted mid-cycle (system-upgrade-controller#71): its job is
// still there and the node is cordoned.
func TestDeletedPlanLeavesCordon(t *testing.T) {
	in := suc.Input{
		// SUC's namespace still holds another plan.
		Plans: []suc.Plan{plan(t, "k3s-server", drainPlan, suctest.Synced(drainPlan.Version, "", nil, now.Add(-2*time.Hour)))},
		Jobs:  []suc.Job{job(t, "k3s-agent", "n1", drainPlan.Version, now.Add(-time.Hour), now.Add(-30*time.Minute))},
		Nodes: []coord.Node{cordonedBy(node("n1", nil, false), suctest.KubectlManager, now.Add(-59*time.Minute))},
	}
	r := suc.Judge(in, now)
	b := find(t, r.Blockers, "n1", model.BlockerCordon)
	if b.Action != model.ActionUncordon || !strings.Contains(b.Reason, "no longer exists") {
		t.Errorf("stuck-cordon = %+v", b)
	}
	in.JobsUnread = "forbidden"
	if r := suc.Judge(in, now); len(r.Uncordon) != 0 {
		t.Errorf("uncordon offered with jobs unread: %v", r.Uncordon)
	}
}

// Hostile plans: a field of another type than SUC writes makes the slots
// unknown, never free.
func TestHostilePlan(t *testing.T) {
	for name, mutate := range map[string]func(map[string]any){
		"concurrency string": func(o map[string]any) { o["spec"].(map[string]any)["concurrency"] = "2" },
		"applying string":    func(o map[string]any) { o["status"].(map[string]any)["applying"] = "n1" },
		"applying numbers":   func(o map[string]any) { o["status"].(map[string]any)["applying"] = []any{int64(1)} },
		"spec not an object": func(o map[string]any) { o["spec"] = "x" },
		"selector bad":       func(o map[string]any) { o["spec"].(map[string]any)["nodeSelector"] = []any{} },
	} {
		t.Run(name, func(t *testing.T) {
			u := suctest.Plan(ns, "p", drainPlan)
			u.Object["status"] = suctest.Synced(drainPlan.Version, "", []string{"n1"}, now)
			mutate(u.Object)
			p := suc.ParsePlan(u.Object)
			r := suc.Judge(suc.Input{Plans: []suc.Plan{p}, Nodes: []coord.Node{node("n1", nil, false)}}, now)
			s := r.Plans[0].Slots
			if s.Known || s.Unknown == "" {
				t.Errorf("slots = %+v, want unknown", s)
			}
			if _, ok := s.Free(); ok {
				t.Error("free slots told from a bad plan")
			}
		})
	}
}

func TestNodePhases(t *testing.T) {
	latest := suctest.MungeVersion(drainPlan.Version)
	hash := suctest.LatestHash(latest, "")
	spec := drainPlan
	spec.Concurrency = 2
	spec.NodeSelector = map[string]string{"os": "linux"}
	p := plan(t, "p", spec, suctest.Synced(spec.Version, "", []string{"run"}, now))
	in := suc.Input{Plans: []suc.Plan{p},
		Jobs: []suc.Job{job(t, "p", "run", spec.Version, now.Add(-time.Minute), time.Time{})},
		Nodes: []coord.Node{
			node("done", map[string]string{"os": "linux", "plan.upgrade.cattle.io/p": hash}, false),
			node("optout", map[string]string{"os": "linux", "plan.upgrade.cattle.io/p": "disabled"}, false),
			node("other", map[string]string{"os": "windows"}, false),
			node("run", map[string]string{"os": "linux"}, true),
			node("wait", map[string]string{"os": "linux"}, false),
		}}
	r := suc.Judge(in, now)
	got := map[string]model.Phase{}
	for _, st := range r.Plans[0].Nodes {
		got[st.Node] = st.Phase
	}
	want := map[string]model.Phase{"done": model.PhaseDone, "optout": model.PhaseIdle, "run": model.PhaseDraining, "wait": model.PhasePending}
	if len(got) != len(want) {
		t.Fatalf("phases %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
	if len(r.Blockers) != 0 {
		t.Errorf("blockers with a free slot: %+v", r.Blockers)
	}
}

func TestPlansUnread(t *testing.T) {
	r := suc.Judge(suc.Input{PlansUnread: "forbidden: plans.upgrade.cattle.io"}, now)
	if r.Unknown == "" || len(r.Blockers) != 0 || len(r.Uncordon) != 0 {
		t.Errorf("report from unread plans = %+v", r)
	}
}

// Issue 32 §3 (review): the cordon's time alone does not make it SUC's.
// SUC's job cordons with kubectl (its drain or cordon init container runs
// rancher/kubectl: kubectl drain|cordon, a strategic-merge Patch with no
// field manager), which the apiserver records as an Update by the manager
// "kubectl". A cordon written while the job ran by another writer — a
// maintenance controller after an uncordon, an administrator's
// server-side apply of the node (an Apply, even under the manager
// kubectl) — is not the job's and is never offered. Before the fix each
// was "while job … ran: the job's drain or cordon", with the uncordon.
func TestCordonWhileJobRanByAnotherWriter(t *testing.T) {
	p := plan(t, "k3s-server", drainPlan, suctest.Synced(drainPlan.Version, "", []string{"n1"}, now.Add(-time.Hour)))
	in := suc.Input{
		Plans: []suc.Plan{p},
		Jobs:  []suc.Job{job(t, "k3s-server", "n1", drainPlan.Version, now.Add(-40*time.Minute), now.Add(-20*time.Minute))},
	}
	for _, c := range []struct {
		manager, op, want string
	}{
		{"node-maintenance-operator", "Update", "cordoned by node-maintenance-operator at 2026-12-01T11:30:00Z (Update)"},
		{"kubectl", "Apply", "cordoned by kubectl at 2026-12-01T11:30:00Z (Apply)"},
		{"kubectl", "", "cordoned by kubectl at 2026-12-01T11:30:00Z"},
	} {
		n := cordonedBy(node("n1", nil, false), c.manager, now.Add(-30*time.Minute))
		n.UnschedulableSetOp = c.op
		in.Nodes = []coord.Node{n}
		r := suc.Judge(in, now)
		if len(r.Uncordon) != 0 {
			t.Errorf("%s %s: a cordon SUC's kubectl did not write offered for uncordon: %v", c.manager, c.op, r.Uncordon)
		}
		if why := r.NotOwned["n1"]; !strings.Contains(why, c.want) || !strings.Contains(why, "not provably") {
			t.Errorf("%s %s: not owned = %q", c.manager, c.op, why)
		}
	}
	// kubectl's Update, with an administrator's Apply of the same value
	// beside it: theirs too.
	n := cordonedBy(node("n1", nil, false), suctest.KubectlManager, now.Add(-30*time.Minute))
	n.UnschedulableOthers = []string{"ops-apply (Apply)"}
	in.Nodes = []coord.Node{n}
	if r := suc.Judge(in, now); len(r.Uncordon) != 0 || !strings.Contains(r.NotOwned["n1"], "also owned by ops-apply (Apply)") {
		t.Errorf("a cordon an administrator also applied: uncordon %v, not owned %q", r.Uncordon, r.NotOwned["n1"])
	}
	// kubectl's own Update within the job's life: the job's.
	in.Nodes = []coord.Node{cordonedBy(node("n1", nil, false), suctest.KubectlManager, now.Add(-30*time.Minute))}
	if r := suc.Judge(in, now); len(r.Uncordon) != 1 {
		t.Errorf("the job's kubectl cordon: uncordon %v, not owned %q", r.Uncordon, r.NotOwned["n1"])
	}
}
