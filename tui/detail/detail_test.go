package detail

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/themes"
	"github.com/rebootwatch/rebootwatch/tui/pctx"
)

// TestLockLinesWrapInsideTheBox: the lock detail promises the whole
// reason and its evidence; the view puts each line, indented by one cell,
// in a box whose inside is width cells, so no line may be wider than
// width-1 (the box would cut it: "… Ready and sti…" lost a word).
func TestLockLinesWrapInsideTheBox(t *testing.T) {
	ctx := pctx.New(themes.Dark(), false, false, false)
	st := model.LockStatus{LockRef: model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-workers"},
		Holder: "0433d3b194bb44ebafcc990a900f972a", HolderNodes: []string{"worker-1"}, Verdict: model.VerdictOrphaned,
		Reason:   "held by worker-1, which rebooted (Ready since after the lock was taken) and has been Ready and still cordoned by its coordinator for 31m",
		Evidence: []model.Evidence{{Key: "cordon", Value: "fleetlock cordons the holder on lock and uncordons it only when the holder itself unlocks: a release from here also uncordons it"}}}
	for _, width := range []int{60, 80, 116} {
		lines := LockLines(ctx, st, width)
		var words []string
		wrapped := false // from the reason on: the reason, the evidence, the actions
		for _, l := range lines {
			wrapped = wrapped || strings.HasPrefix(ansi.Strip(l), "reason")
			if w := pctx.Width(l); wrapped && w > width-1 {
				t.Errorf("width %d: a line is %d wide: %q", width, w, l)
			}
			words = append(words, strings.Fields(ansi.Strip(l))...)
		}
		all := strings.Join(words, " ")
		for _, want := range []string{"Ready and still cordoned by its coordinator for 31m", "a release from here also uncordons it"} {
			if !strings.Contains(all, want) {
				t.Errorf("width %d: %q not all shown", width, want)
			}
		}
	}
}
