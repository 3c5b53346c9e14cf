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
