package lock

import (
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

// The volume gate never passes on Longhorn data that was not read: not yet
// reported, errored, forbidden or stale gives "volumes unknown", not
// "Longhorn is not installed" or "no Longhorn volume is degraded" (issue 11 §2).
func TestVolumeGateFailsWhenLonghornUnread(t *testing.T) {
	ann := single(ent("n9", at(0), 0))
	now := at(time.Hour)
	nodes := model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusOK}}
	for _, tc := range []struct {
		name string
		lh   []model.Event
		want string
	}{
		{"never reported", nil, "volumes unknown: Longhorn has not been read yet"},
		{"forbidden", []model.Event{source(model.SourceLonghorn, model.StatusForbidden)}, "volumes unknown: Longhorn source forbidden"},
		{"error", []model.Event{source(model.SourceLonghorn, model.StatusError)}, "volumes unknown: Longhorn source error"},
		{"stale", []model.Event{source(model.SourceLonghorn, model.StatusStale)}, "volumes unknown: Longhorn source stale"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Options{})
			evs := append([]model.Event{nodes, up(node("n1")), lockEv(kuredLock(ann))}, tc.lh...)
			c := build(e, step{now, evs})
			p, err := e.Plan(c, kuredRef, "n9", model.ActionReap, now)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range p.Gates {
				if g.Name == GateVolumes && (g.Passed || !strings.Contains(g.Reason, tc.want)) {
					t.Fatalf("volumes gate %+v, want failed with %q", g, tc.want)
				}
			}
			if p.Allowed {
				t.Fatal("a reap was allowed on unread Longhorn data")
			}
		})
	}
}
