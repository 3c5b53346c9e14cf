package tui

import (
	"strings"
	"testing"

	"github.com/rebootwatch/rebootwatch/model"
)

// Issue 32 §1: the Locks panel lists the slots of every coordinator kind,
// not only lock objects: a SUC-like plan's slot with its capacity, holder
// and the coordinator's step, and a FLUO-like slot held by more nodes than
// its capacity (painted critical). Before, these kinds were only blockers
// and the panel said "no reboot lock found" beside a draining node.
func TestGoldenLocksPanelSlots(t *testing.T) {
	f := newFixture()
	plan := model.SlotGroup{Kind: "suc", Owner: "system-upgrade/agent-plan", Known: true, Capacity: 1,
		Holders: []model.SlotHolder{{Holder: "w-04", Node: "w-04", Step: "job failed"}}}
	f.c.Apply(model.CoordinatorRead{Kind: "suc", Known: true, Slots: []model.SlotGroup{plan},
		Nodes: []model.NodeCycle{{Kind: "suc", Owner: plan.Owner, Node: "w-04", Phase: model.PhaseDraining, Step: "job failed"}}}, t0)
	over := model.SlotGroup{Kind: "flatcar", Known: true, Capacity: 1}
	for _, n := range []string{"w-05", "w-06", "w-07"} {
		over.Holders = append(over.Holders, model.SlotHolder{Holder: n, Node: n, Step: "rebooting"})
	}
	f.c.Apply(model.CoordinatorRead{Kind: "flatcar", Known: true, Slots: []model.SlotGroup{over}}, t0)
	f.c.Recompute(t0)
	for _, sz := range []struct {
		name string
		w, h int
	}{{"200x60", 200, 60}, {"80x24", 80, 24}} {
		m := f.model(Options{})
		size(m, sz.w, sz.h)
		got := m.View().Content
		assertScreen(t, got, sz.w, sz.h)
		golden(t, "state-locks-slots-"+sz.name, got)
		if sz.name != "200x60" {
			continue
		}
		s := screen(m)
		for _, want := range []string{
			// Under the locks, KIND and SLOTS OF line up with KIND and LOCK.
			"suc       system-upgrade/agent-plan 1/1  w-04   job failed",
			"flatcar   —                         3/1  w-05   rebooting",
			"flatcar   —                         3/1  w-07   rebooting",
			"kured     kube-system/kured         w-03",
		} {
			if !strings.Contains(s, want) {
				t.Errorf("screen lacks %q:\n%s", want, s)
			}
		}
	}
}
