package locks

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/themes"
	"github.com/rebootwatch/rebootwatch/tui/pctx"
)

// TestReasonWrapsWhileRoomIsLeft (issue 34 §2): the wide panel shows a
// long reason whole, wrapped under the REASON column, when it has the
// lines (WrapLines says how many); with no line to spare it is cut as
// before. Columns are as wide as their widest cell.
func TestReasonWrapsWhileRoomIsLeft(t *testing.T) {
	ctx := pctx.New(themes.Dark(), false, false, false)
	ctx.Now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	reason := "held by worker-1, which rebooted (Ready since after the lock was taken) and has been Ready and still cordoned by its coordinator for 30m"
	sts := []model.LockStatus{
		{LockRef: model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-workers"}, Holder: "worker-1",
			Verdict: model.VerdictOrphaned, Reason: reason},
		{LockRef: model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured"}, Verdict: model.VerdictFree, Reason: "free"},
	}
	const w = 120
	n := WrapLines(ctx, sts, nil, w)
	if n != 5 {
		t.Fatalf("WrapLines = %d; want 5 (header, the reason on three lines, the free lock)", n)
	}
	plain := func(ls []string) string { return ansi.Strip(strings.Join(ls, "\n")) }
	got := plain(RenderWrapped(ctx, ctx.P, sts, nil, -1, w, n))
	if !strings.Contains(strings.Join(strings.Fields(got), " "), reason) || strings.Contains(got, "…") {
		t.Errorf("the reason is not whole:\n%s", got)
	}
	if !strings.HasPrefix(got, "KIND      LOCK                      HOLDER   HELD VERDICT  REASON") {
		t.Errorf("columns not sized to their content:\n%s", got)
	}
	cut := plain(RenderWrapped(ctx, ctx.P, sts, nil, -1, w, 4))
	lines := strings.Split(cut, "\n")
	if len(lines) != 4 || !strings.HasSuffix(strings.TrimRight(lines[2], " "), "…") || !strings.Contains(lines[3], "kube-system/kured") {
		t.Errorf("with one line to spare the reason takes it, its end cut, and every lock stays:\n%s", cut)
	}
}
