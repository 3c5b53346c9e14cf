package timeline

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/themes"
	"github.com/rebootwatch/rebootwatch/tui/pctx"
)

// A time more than a day away carries its date; today's only the time.
func TestOldEntriesCarryTheirDate(t *testing.T) {
	now := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	es := []model.TimelineEntry{
		{Time: now.Add(-37 * 24 * time.Hour), Kind: model.KindLock, Message: "old"},
		{Time: now.Add(-time.Hour), Kind: model.KindLock, Message: "new"},
	}
	out := Render(pctx.NewPainter(themes.NoColor()), es, now, 80, 2)
	if got := ansi.Strip(out[0]); !strings.HasPrefix(got, "13:00:00 ") {
		t.Errorf("recent entry %q", got)
	}
	if got := ansi.Strip(out[1]); !strings.HasPrefix(got, "2026-10-23 14:00:00 ") {
		t.Errorf("old entry %q", got)
	}
}
