package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/rebootwatch/rebootwatch/internal/fleet"
	"github.com/rebootwatch/rebootwatch/tui/fleetview"
)

// BenchmarkFleetDashboardFirstScreenScale is the fleet dashboard's first
// full screen at 300 clusters × 1,000 nodes: the view started, its first
// read run and answered, the 80x24 screen rendered. Issue 25 §4: ≤ 1.5 s.
func BenchmarkFleetDashboardFirstScreenScale(b *testing.B) {
	url, end, _ := fleet.ScaleProm(b)
	rd, err := fleet.NewReader(fleet.Options{URL: url, Timeout: 5 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	read := func(ctx context.Context) fleet.Fleet { return rd.Read(ctx, end) }
	read(context.Background()) // warm: the first read loads the blocks' index
	var screen string
	for b.Loop() {
		m := fleetview.New(fleetview.Options{Read: read, Endpoint: url})
		m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
		m.Update(m.Init()())
		screen = m.Render()
	}
	if !strings.Contains(screen, "fleet · 300 clusters") || !strings.Contains(screen, "ghost") {
		b.Fatalf("first screen:\n%s", screen)
	}
}
