package agent

import (
	"strings"
	"testing"

	"github.com/rebootwatch/rebootwatch/model"
)

// Issue 32 §1: the agent's metrics carry every kind's slots: capacity and
// held per group (a SUC Plan's, FLUO's), held absent when the slots could
// not be read (unknown, not 0), and the holders of kinds without a lock
// object in rebootwatch_lock_holder (what rebootwatch fleet reads), the
// lock objects' own groups not twice.
func TestMetricsSlots(t *testing.T) {
	m := NewMetrics()
	groups := []model.SlotGroup{
		{Kind: "kured", Owner: "kube-system/kured", Known: true, Capacity: 1, Lock: true,
			Holders: []model.SlotHolder{{Holder: "w1", Node: "w1"}}},
		{Kind: "suc", Owner: "system-upgrade/agent-plan", Known: true, Capacity: 1,
			Holders: []model.SlotHolder{{Holder: "k3s-agent-1", Node: "k3s-agent-1", Step: "job failed"}}},
		{Kind: "flatcar", Known: true, Capacity: 1,
			Holders: []model.SlotHolder{{Holder: "a", Node: "a"}, {Holder: "b", Node: "b"}, {Holder: "c", Node: "c"}}},
		{Kind: "suc", Owner: "system-upgrade/server-plan", Capacity: 1, Unknown: "forbidden"},
	}
	m.SetSlots(groups)
	m.SetHolders(nil, groups...)
	_, body := serve(m.Handler())
	for _, want := range []string{
		`rebootwatch_slots_capacity{kind="suc",owner="system-upgrade/agent-plan"} 1`,
		`rebootwatch_slots_held{kind="suc",owner="system-upgrade/agent-plan"} 1`,
		`rebootwatch_slots_held{kind="flatcar",owner=""} 3`,
		`rebootwatch_slots_capacity{kind="flatcar",owner=""} 1`,
		`rebootwatch_slots_held{kind="kured",owner="kube-system/kured"} 1`,
		`rebootwatch_slots_capacity{kind="suc",owner="system-upgrade/server-plan"} 1`,
		`kind="suc",lock="system-upgrade/agent-plan"`,
		`holder="k3s-agent-1",holder_node="k3s-agent-1"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(body, "rebootwatch_slots"))
		}
	}
	if strings.Contains(body, `rebootwatch_slots_held{kind="suc",owner="system-upgrade/server-plan"}`) {
		t.Error("an unread group exports a held count")
	}
	if h := grepLines(body, "rebootwatch_lock_holder{"); strings.Contains(h, `kind="kured"`) {
		t.Errorf("a lock object's group is exported as a holder from its slots too (its statuses do that):\n%s", h)
	}
}
