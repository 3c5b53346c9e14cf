package sim

import (
	"context"
	"maps"
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

// Clock maps wall time to scenario time: Start + Offset + Speed × elapsed.
type Clock struct {
	Start  time.Time // scenario time zero
	Offset time.Duration
	Speed  float64
	Wall   time.Time // wall time when the clock started
	// WallNow is the wall clock (time.Now when nil).
	WallNow func() time.Time
}

// Now returns the scenario time.
func (c Clock) Now() time.Time {
	now := time.Now
	if c.WallNow != nil {
		now = c.WallNow
	}
	elapsed := now().Sub(c.Wall)
	return c.Start.Add(c.Offset + time.Duration(float64(elapsed)*c.Speed))
}

// Run steps the scenario every tick (wall time) until ctx ends, and reports
// kured_reboot_required as the prometheus source would. Write errors are
// reported as the prometheus source's health, never silently dropped.
func (s *Sim) Run(ctx context.Context, now func() time.Time, tick time.Duration, sink func(model.Event)) {
	var last map[string]bool
	failed := false
	report := func(err error) {
		if err != nil {
			failed = true
			sink(model.SourceChanged{Health: model.SourceHealth{Name: model.SourcePrometheus, Status: model.StatusError,
				Message: "demo cluster: " + err.Error()}})
			return
		}
		if failed {
			failed = false
			sink(Health(now()))
		}
		rr := s.RebootRequired()
		if !maps.Equal(rr, last) {
			sink(model.RebootRequiredSet{Values: rr})
			last = rr
		}
	}
	report(s.Step(now()))
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			report(s.Step(now()))
		}
	}
}

// Health is the demo's stand-in for the Prometheus source's health.
func Health(now time.Time) model.SourceChanged {
	return model.SourceChanged{Health: model.SourceHealth{Name: model.SourcePrometheus, Status: model.StatusOK,
		Message: "simulated kured_reboot_required", LastSync: now}}
}
