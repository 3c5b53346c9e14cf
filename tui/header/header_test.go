package header

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/themes"
	"github.com/rebootwatch/rebootwatch/tui/pctx"
)

// TestAttentionLineLeadsWithTheFleetsBlocker: a node's blocker leads the
// attention line (with how many others are blocked), the most urgent item
// follows; a fleet-wide blocker (it stops no node) follows the items; the
// blocker's text is sanitised.
func TestAttentionLineLeadsWithTheFleetsBlocker(t *testing.T) {
	ctx := pctx.New(themes.Dark(), false, false, false)
	ghost := model.Attention{Severity: model.SeverityCritical, Message: "fleetlock lock default/fleetlock-default held by x is ghost"}
	node := &model.FleetBlocker{Blocker: model.Blocker{Kind: model.BlockerLock, Node: "w3", Reason: "w3 waits for the kured lock\x1b[2J, held by w1 for 2h, orphaned: release it"}, Others: 2}
	fleetWide := &model.FleetBlocker{Blocker: model.Blocker{Kind: model.BlockerUnknown, Reason: "whether 3 nodes need a reboot is unknown"}}
	for _, tc := range []struct {
		items []model.Attention
		b     *model.FleetBlocker
		want  string
	}{
		{[]model.Attention{ghost, ghost}, node, "■ w3 waits for the kured lock\\e[2J, held by w1 for 2h, orphaned: release it (+2 more blocked) · (+1 more) ✗ fleetlock lock"},
		{nil, node, "■ w3 waits for the kured lock\\e[2J, held by w1 for 2h, orphaned: release it (+2 more blocked)"},
		{nil, fleetWide, "✓ nothing needs attention · ■ whether 3 nodes need a reboot is unknown"},
		{[]model.Attention{ghost}, nil, "✗ fleetlock lock default/fleetlock-default held by x is ghost"},
	} {
		lines := Render(ctx, Data{Context: "c", Attention: tc.items, Blocker: tc.b}, 400, 3)
		got := strings.TrimRight(ansi.Strip(lines[2]), " ")
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("attention line\n%q\nwant it to start\n%q", got, tc.want)
		}
		if strings.Contains(lines[2], "\x1b[2J") {
			t.Fatal("a control sequence from the cluster reached the header")
		}
	}
}
