package live

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/internal/coord/flatcar"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/model"
)

// waitFor waits (bounded) until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func hasBlocker(bs []model.Blocker, kind model.BlockerKind, node, text string) bool {
	for _, b := range bs {
		if b.Kind == kind && b.Node == node && strings.Contains(b.Reason, text) {
			return true
		}
	}
	return false
}

// Issue 24 §4: the coordinator demos are read again while the dashboard
// runs (from the demo cluster), and within the first minute at the default
// speed their headline wedge is named and the node the coordinator left
// cordoned is uncordoned behind the same gates as every action.
func TestCoordinatorDemosFirstMinute(t *testing.T) {
	for _, tc := range []struct {
		scenario, node string
		first          func([]model.Blocker) bool
		then           model.BlockerKind
		at             time.Duration // wall time, at --speed 10
	}{
		{suc.DemoName, suc.DemoNode, func(bs []model.Blocker) bool {
			return hasBlocker(bs, model.BlockerDrain, suc.DemoNode, "PodDisruptionBudget shop/postgres allows 0 disruptions")
		}, suc.BlockerJobFailed, suc.DemoJobFailsAt / 10},
		{flatcar.DemoName, flatcar.DemoNode, func(bs []model.Blocker) bool {
			return !hasBlocker(bs, flatcar.BlockerAgentStopped, flatcar.DemoNode, "")
		}, flatcar.BlockerAgentStopped, (flatcar.DemoBackAt + 5*time.Minute + time.Second) / 10},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			if tc.at >= time.Minute {
				t.Fatalf("the wedge is named %v in: not within the first minute", tc.at)
			}
			start := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
			var wall atomic.Pointer[time.Time]
			set := func(d time.Duration) { w := start.Add(d); wall.Store(&w) }
			set(0)
			s, err := Open(context.Background(), Options{Demo: true, DemoScenario: tc.scenario, DemoSeed: 1, DemoSpeed: 10,
				DemoStart: start, WallNow: func() time.Time { return *wall.Load() }, CoordinatorInterval: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := s.Collect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.first(c.Blockers().Nodes[tc.node]) {
				t.Fatalf("time zero: %+v", c.Blockers().Nodes[tc.node])
			}
			if _, left := s.Engine().LeftCordoned(tc.node); left {
				t.Fatal("uncordon offered before the wedge")
			}
			set(tc.at)
			// The coordinator's read and the model's node events arrive
			// apart: wait for both (the node Ready in the model too).
			waitFor(t, "the wedge read again from the demo cluster", func() bool {
				_, left := s.Engine().LeftCordoned(tc.node)
				s.Drain(c)
				c.Recompute(s.Clock())
				n, ok := c.Node(tc.node)
				ready := false
				if ok {
					ready, _, _ = n.Ready()
				}
				return left && ready && hasBlocker(s.coordinatorBlockers(), tc.then, tc.node, "")
			})
			if !hasBlocker(c.Blockers().Nodes[tc.node], tc.then, tc.node, "") {
				t.Fatalf("the model does not show %s: %+v", tc.then, c.Blockers().Nodes[tc.node])
			}
			p, err := s.Engine().PlanUncordon(c, tc.node, s.Clock())
			if err != nil || !p.Allowed {
				t.Fatalf("uncordon %s: %s %v %+v", tc.node, p.Refusal, err, p.Gates)
			}
			r := (&lock.Actor{Client: s.Client, Who: "newcomer", Fresh: s.FreshReaders()}).Do(ctx, p, lock.DoOptions{})
			if !r.Complete() {
				t.Fatalf("uncordon: %+v", r)
			}
			if n, _ := s.Client.CoreV1().Nodes().Get(ctx, tc.node, metav1.GetOptions{}); n.Spec.Unschedulable {
				t.Fatal("still cordoned")
			}
			waitFor(t, "the uncordon no longer offered once read again", func() bool {
				_, left := s.Engine().LeftCordoned(tc.node)
				return !left
			})
		})
	}
}
