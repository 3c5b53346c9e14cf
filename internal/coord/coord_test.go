package coord_test

import (
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/model"
)

// Merge keeps the engine's blockers first and its fleet blocker; when the
// engine named none, the first stalling coordinator blocker of a node
// stops the fleet, counting the other stalled nodes.
func TestMerge(t *testing.T) {
	engine := model.Blockers{Nodes: map[string][]model.Blocker{"n1": {{Kind: model.BlockerWindow, Node: "n1"}}}}
	extra := []model.Blocker{
		{Kind: "plan-not-validated", Reason: "plan", Stalls: true},
		{Kind: "job-failed", Node: "n1", Stalls: true},
		{Kind: model.BlockerLock, Node: "n2", Stalls: true},
		{Kind: model.BlockerWindow, Node: "n3"},
	}
	got := coord.Merge(engine, extra)
	if n1 := got.Nodes["n1"]; len(n1) != 2 || n1[0].Kind != model.BlockerWindow || n1[1].Kind != "job-failed" {
		t.Errorf("n1 = %+v", n1)
	}
	if len(got.General) != 1 || got.Fleet == nil || got.Fleet.Kind != "job-failed" || got.Fleet.Others != 1 {
		t.Errorf("general %+v fleet %+v", got.General, got.Fleet)
	}
	if len(engine.Nodes["n1"]) != 1 {
		t.Error("Merge changed its input")
	}
	engine.Fleet = &model.FleetBlocker{Blocker: model.Blocker{Kind: model.BlockerLock, Node: "n9", Stalls: true}}
	if got := coord.Merge(engine, extra); got.Fleet.Node != "n9" {
		t.Errorf("the engine's fleet blocker replaced: %+v", got.Fleet)
	}
	if got := coord.Merge(model.Blockers{}, extra[:1]); got.Fleet == nil || got.Fleet.Kind != "plan-not-validated" || got.Fleet.Others != 0 {
		t.Errorf("fleet-wide only: %+v", got.Fleet)
	}
}

// Issue 32 §1: once a SUC node draining under its plan is in the model's
// draining phase, the engine's generic drain reading of it ("draining
// (0s)") came beside SUC's own (the job's 11m): one node had two drain
// blockers. The kind's own replaces the engine's of the same kind, and an
// engine fleet blocker that was the replaced one goes with it.
func TestMergeKindReplacesEngineBlockerOfSameKind(t *testing.T) {
	generic := model.Blocker{Kind: model.BlockerDrain, Node: "n1", Stalls: true, Reason: "n1 is draining (0s)"}
	engine := model.Blockers{Fleet: &model.FleetBlocker{Blocker: generic},
		Nodes: map[string][]model.Blocker{"n1": {generic, {Kind: model.BlockerLonghorn, Node: "n1"}}}}
	own := model.Blocker{Kind: model.BlockerDrain, Node: "n1", Stalls: true, Reason: "plan p's job has been draining n1 for 11m"}
	got := coord.Merge(engine, []model.Blocker{own})
	n1 := got.Nodes["n1"]
	if len(n1) != 2 || n1[0].Kind != model.BlockerLonghorn || n1[1].Reason != own.Reason {
		t.Errorf("n1 = %+v", n1)
	}
	if got.Fleet == nil || got.Fleet.Reason != own.Reason {
		t.Errorf("fleet %+v, want the kind's own drain blocker", got.Fleet)
	}
}
