package live

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

// The demo session goes through the same sources as a real cluster and
// delivers a complete first picture, then keeps playing.
func TestDemoSessionCollectsThenPlays(t *testing.T) {
	start := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	// The wall clock is read by the demo's goroutines while the test moves
	// it: it must be guarded (a plain variable is a data race).
	var wall atomic.Pointer[time.Time]
	wall.Store(&start)
	s, err := Open(context.Background(), Options{Demo: true, DemoSeed: 1, DemoSpeed: 60, DemoStart: start,
		WallNow: func() time.Time { return *wall.Load() }})
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
	if c.NodeCount() != 7 || len(c.LockStatuses()) != 2 || c.VolumeCount() != 12 || !c.Synced() {
		t.Fatalf("first picture: %d nodes, %d locks, %d volumes, synced %v", c.NodeCount(), len(c.LockStatuses()), c.VolumeCount(), c.Synced())
	}
	for _, src := range []model.SourceName{model.SourceNodes, model.SourceKured, model.SourceFleetlock, model.SourceLonghorn, model.SourcePrometheus} {
		if h, ok := c.Source(src); !ok || h.Status != model.StatusOK {
			t.Fatalf("source %s: %+v", src, h)
		}
	}
	if c.Phase("cp-2") != model.PhaseDraining {
		t.Fatalf("cp-2 is %s at the start, want draining", c.Phase("cp-2"))
	}
	// Ten wall seconds at 60× later, cp-2 has rebooted: the change arrives
	// through the informers, not by reading the sim.
	later := start.Add(10 * time.Second)
	wall.Store(&later)
	deadline := time.Now().Add(20 * time.Second)
	for c.Phase("cp-2") == model.PhaseDraining {
		if time.Now().After(deadline) {
			t.Fatalf("cp-2 still %s", c.Phase("cp-2"))
		}
		select {
		case ev := <-s.Events:
			c.Apply(ev, s.Clock())
		case <-time.After(100 * time.Millisecond):
		}
		s.Drain(c)
		c.Recompute(s.Clock())
	}
}

func TestEngineIsShared(t *testing.T) {
	s, err := Open(context.Background(), Options{Demo: true, DemoSeed: 1, DemoSpeed: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, again := s.Engine(), s.Engine()
	if first == nil || first != again || s.NewCluster().Judge == nil || !s.NewCluster().AwaitSync {
		t.Fatal("a session judges and plans with one engine, and its models await the first sync")
	}
}

// TestSeedVolumesOnlyForAPaintedPicture (issue 35 §1): the dashboard and
// watch (a session that neither reads once nor acts) start the Longhorn
// informer with the snapshot's read of the volumes; --snapshot (which has
// no informer) and an action's session do not.
func TestSeedVolumesOnlyForAPaintedPicture(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want bool
	}{{"dashboard", Options{}, true}, {"snapshot", Options{Once: true}, false}, {"action", Options{Action: true}, false}} {
		s := &Session{opts: tc.o}
		if got := s.sourceOptions().SeedVolumes; got != tc.want {
			t.Errorf("%s: SeedVolumes %v, want %v", tc.name, got, tc.want)
		}
	}
}
