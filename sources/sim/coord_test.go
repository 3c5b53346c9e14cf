package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/internal/coord/flatcar"
	"github.com/rebootwatch/rebootwatch/internal/coord/kinds"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources/kube"
)

// observe plays the scenario to at and reads every coordinator kind from
// the demo cluster as the dashboard does.
func observe(t *testing.T, s *Sim, at time.Duration) []kinds.Result {
	t.Helper()
	now := s.cfg.Start.Add(at)
	if err := s.Step(now); err != nil {
		t.Fatal(err)
	}
	return kinds.ReadAll(context.Background(), coord.Clients{Kube: s.Client, Dynamic: s.Dynamic, Drain: kube.DrainRead(s.Client)}, now)
}

func blocker(rs []kinds.Result, k model.LockKind, kind model.BlockerKind, node string) (model.Blocker, bool) {
	for _, r := range rs {
		if r.Kind != k || !r.Installed {
			continue
		}
		for _, b := range r.Blockers {
			if b.Kind == kind && b.Node == node {
				return b, true
			}
		}
	}
	return model.Blocker{}, false
}

func uncordon(rs []kinds.Result, k model.LockKind) []string {
	for _, r := range rs {
		if r.Kind == k {
			return r.Uncordon
		}
	}
	return nil
}

// --demo=suc plays SUC's headline wedge within its first minute at the
// default speed (10 scenario minutes): a drain the PodDisruptionBudget
// shop/postgres holds, named by the drain explainer at time zero; then the
// job failed past its deadline, with its last error, and the node it left
// cordoned, whose uncordon SUC's reading allows (issue 24 §4).
func TestSUCScenario(t *testing.T) {
	s, err := New(Config{Seed: 1, Scenario: suc.DemoName})
	if err != nil {
		t.Fatal(err)
	}
	rs := observe(t, s, 0)
	b, ok := blocker(rs, suc.Kind, model.BlockerDrain, suc.DemoNode)
	if !ok || !strings.Contains(b.Reason, "PodDisruptionBudget shop/postgres allows 0 disruptions") || !strings.Contains(b.Reason, "shop/postgres-0") {
		t.Fatalf("time zero: no drain blocker naming the budget: %+v", rs)
	}
	if _, ok := blocker(rs, suc.Kind, suc.BlockerJobFailed, suc.DemoNode); ok || len(uncordon(rs, suc.Kind)) > 0 {
		t.Errorf("time zero: the job has not failed yet: %+v", rs)
	}
	rs = observe(t, s, suc.DemoJobFailsAt)
	jf, ok := blocker(rs, suc.Kind, suc.BlockerJobFailed, suc.DemoNode)
	if !ok || !strings.Contains(jf.Reason, "DeadlineExceeded: Job was active longer than specified deadline") {
		t.Fatalf("no job-failed blocker with the job's last error: %+v", rs)
	}
	sc, ok := blocker(rs, suc.Kind, model.BlockerCordon, suc.DemoNode)
	if !ok || sc.Action != model.ActionUncordon || !strings.Contains(sc.Reason, "uncordons only after a successful job") {
		t.Errorf("no stuck-cordon blocker: %+v", rs)
	}
	if u := uncordon(rs, suc.Kind); len(u) != 1 || u[0] != suc.DemoNode {
		t.Errorf("uncordon allowed for %v, want %s", u, suc.DemoNode)
	}
	if _, ok := blocker(rs, suc.Kind, model.BlockerDrain, suc.DemoNode); ok {
		t.Errorf("the failed job's drain is still named: %+v", rs)
	}
	for _, r := range rs {
		if r.Kind != suc.Kind && r.Installed {
			t.Errorf("%s reads as installed in the suc demo: %+v", r.Kind, r)
		}
	}
}

// --demo=flatcar plays FLUO's headline wedge within its first minute at
// the default speed: the node rebooting in FLUO's slot comes back with a
// new boot id, its agent never runs, and once the agent's grace passed it
// is named (agent-stopped) and its uncordon allowed.
func TestFlatcarScenario(t *testing.T) {
	s, err := New(Config{Seed: 1, Scenario: flatcar.DemoName})
	if err != nil {
		t.Fatal(err)
	}
	rs := observe(t, s, 0)
	if _, ok := blocker(rs, flatcar.Kind, flatcar.BlockerAgentStopped, flatcar.DemoNode); ok || len(uncordon(rs, flatcar.Kind)) > 0 {
		t.Errorf("time zero: the node is still rebooting: %+v", rs)
	}
	rs = observe(t, s, flatcar.DemoBackAt+5*time.Minute+time.Second)
	b, ok := blocker(rs, flatcar.Kind, flatcar.BlockerAgentStopped, flatcar.DemoNode)
	if !ok || !strings.Contains(b.Reason, "still says reboot-in-progress=true") {
		t.Fatalf("no agent-stopped blocker: %+v", rs)
	}
	if u := uncordon(rs, flatcar.Kind); len(u) != 1 || u[0] != flatcar.DemoNode {
		t.Errorf("uncordon allowed for %v, want %s", u, flatcar.DemoNode)
	}
	if _, ok := blocker(rs, flatcar.Kind, model.BlockerLock, "flatcar-worker-2"); !ok {
		t.Errorf("the waiting worker does not name the slot its agent holds: %+v", rs)
	}
}

// Every registered kind's scenario is a --demo value; an unknown one is
// refused naming them all.
func TestScenarioNames(t *testing.T) {
	names := strings.Join(ScenarioNames(), ",")
	if names != "fleetlock,kured,suc,flatcar" {
		t.Errorf("scenarios %s", names)
	}
	if _, err := New(Config{Scenario: "nope"}); err == nil || !strings.Contains(err.Error(), "suc, flatcar") {
		t.Errorf("unknown scenario: %v", err)
	}
}
