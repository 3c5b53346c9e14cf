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
		{[]model.Attention{ghost, ghost}, node, "■ w3 waits for the kured lock\\e[2J, held by w1 for 2h, orphaned: release it (+2 more blocked) · ✗ fleetlock lock default/fleetlock-default held by x is ghost (+1 more)"},
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

// TestAttentionLineCutsAtItemBoundaries: on a narrow line every "(+N more)"
// stays behind the item it counts, the line never starts with a count, and
// an item that does not fit is left out whole (its count said in words)
// rather than cut to its mark and count.
func TestAttentionLineCutsAtItemBoundaries(t *testing.T) {
	ctx := pctx.New(themes.Dark(), false, false, false)
	ghost := model.Attention{Severity: model.SeverityCritical, Message: "fleetlock lock default/fleetlock-default held by 6f5b3af6de0374366c4719e43a1b067d is ghost: holder matches no node"}
	window := &model.FleetBlocker{Blocker: model.Blocker{Kind: model.BlockerWindow, Node: "worker-3",
		Reason: "worker-3 waits for kured's reboot window: opens in 17h38m (su,mo,tu,we,th,fr,sa 09:37–15:47 Europe/Berlin)"}, Others: 1}
	short := &model.FleetBlocker{Blocker: model.Blocker{Kind: model.BlockerLock, Node: "w3", Reason: "w3 waits for the lock"}, Others: 2}
	for _, tc := range []struct {
		items []model.Attention
		b     *model.FleetBlocker
		w     int
		want  string
	}{
		// The blocker leads, cut inside its own text; its count stays; the
		// ghost item does not fit and is counted in words.
		{[]model.Attention{ghost, ghost}, window, 80, "■ worker-3 waits for kured's reboot window: opens in 17h38m (… (+1 more blocked)"},
		// Room for both: the second item is cut inside its text, its count kept.
		{[]model.Attention{ghost, ghost}, short, 80, "■ w3 waits for the lock (+2 more blocked) · ✗ fleetlock lock default/… (+1 more)"},
		// Room for the first item and a word about the second.
		{[]model.Attention{ghost, ghost}, short, 62, "■ w3 waits for the lock (+2 more blocked) · ✗ 2 need attention"},
		{[]model.Attention{ghost, ghost}, short, 60, "■ w3 waits for the lock (+2 more blocked)"},
		// On a wider line a first item that is cut anyway leaves room for
		// the second's count in words.
		{[]model.Attention{ghost, ghost}, window, 110, "■ worker-3 waits for kured's reboot window: opens in 17h38m (su,mo,tu,… (+1 more blocked) · ✗ 2 need attention"},
		// One item alone keeps its count.
		{[]model.Attention{ghost, ghost}, nil, 60, "✗ fleetlock lock default/fleetlock-default held b… (+1 more)"},
	} {
		lines := Render(ctx, Data{Context: "c", Attention: tc.items, Blocker: tc.b}, tc.w, 3)
		got := strings.TrimRight(ansi.Strip(lines[2]), " ")
		if got != tc.want {
			t.Errorf("attention line at %d columns\n%q\nwant\n%q", tc.w, got, tc.want)
		}
		if strings.HasPrefix(got, "(+") || strings.Contains(got, "· (+") || strings.Contains(got, "… ·") {
			t.Errorf("a count or a cut dangles: %q", got)
		}
	}
}
