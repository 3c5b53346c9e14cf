package nodes

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/themes"
	"github.com/rebootwatch/rebootwatch/tui/pctx"
)

// TestWaitingForColumn: the table shows the first blocker's short form
// and how many more whole as long as NAME, PHASE, WAITING FOR and READY
// fit (other columns give way first), cut only below that; the text is
// sanitised.
func TestWaitingForColumn(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	c := model.NewCluster("t", model.Options{})
	for _, n := range []string{"w1", "w2"} {
		c.Apply(model.NodeUpserted{Node: model.Node{Name: n, Conditions: []model.Condition{{Type: "Ready", Status: "True"}}}}, now)
	}
	c.Explain = func(*model.Cluster, time.Time) model.Blockers {
		return model.Blockers{Nodes: map[string][]model.Blocker{"w1": {
			{Kind: model.BlockerWindow, Node: "w1", Short: "window: opens in 9h\x1b[2J", Stalls: true},
			{Kind: model.BlockerLock, Node: "w1", Short: "lock: w0"}}}}
	}
	c.Recompute(now)
	var tb Table
	tb.Rebuild(c, model.OS{}, now)
	ctx := pctx.New(themes.Dark(), false, false, false)
	ctx.Now = now
	for _, tc := range []struct {
		w           int
		title, want string
	}{{170, "WAITING FOR", "window: opens in 9h\\e[2J +1"}, {60, "WAITING FOR", "window: opens in 9h\\e[2J +1"}, {38, "WAITING FOR", "window: opens in 9h… +1"}} {
		lines := Render(ctx, &tb, tc.w, 4, false)
		head, row := ansi.Strip(lines[0]), ansi.Strip(lines[1])
		if !strings.Contains(head, tc.title) || !strings.Contains(row, tc.want) || !strings.HasPrefix(row, "w1") {
			t.Errorf("width %d:\n%s\n%s\nwant %q under %q", tc.w, head, row, tc.want, tc.title)
		}
		if strings.Contains(lines[1], "\x1b[2J") {
			t.Fatalf("width %d: a control sequence from the cluster reached the table", tc.w)
		}
		if w := pctx.Width(lines[1]); w != tc.w {
			t.Errorf("width %d: row is %d wide", tc.w, w)
		}
	}
}
