package longhorn

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/themes"
	"github.com/rebootwatch/rebootwatch/tui/pctx"
)

// A Longhorn that was not read (forbidden here) shows no counts, no
// "not installed" and no ✓ gate: it says volumes are unknown and why.
func TestUnreadLonghornClaimsNothing(t *testing.T) {
	p := pctx.New(themes.Dark(), false, false, false).P
	d := Data{Summary: &model.VolumeSummary{NotHealthy: []string{}}, Unread: "Longhorn source forbidden: cannot list volumes.longhorn.io (RBAC)"}
	out := ansi.Strip(strings.Join(Render(p, d, 60, 4), "\n") + "\n" + Short(p, d.Summary, d.Unread))
	for _, bad := range []string{"✓", "not installed", "healthy"} {
		if strings.Contains(out, bad) {
			t.Errorf("panel says %q about volumes it did not read:\n%s", bad, out)
		}
	}
	for _, want := range []string{"forbidden", "gate ✗ volumes unknown"} {
		if !strings.Contains(out, want) {
			t.Errorf("panel lacks %q:\n%s", want, out)
		}
	}
}
