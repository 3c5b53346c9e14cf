package detail

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
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

// TestNodeDetailListsEveryBlocker: every blocker of the node, first first,
// with what clears it and all its evidence, wrapped inside the box.
func TestNodeDetailListsEveryBlocker(t *testing.T) {
	ctx := pctx.New(themes.Dark(), false, false, false)
	c := model.NewCluster("t", model.Options{})
	c.Apply(model.NodeUpserted{Node: model.Node{Name: "w3", Conditions: []model.Condition{{Type: "Ready", Status: "True"}}}}, ctx.Now)
	win := model.Blocker{Kind: model.BlockerWindow, Node: "w3", Stalls: true,
		Reason:   "w3 waits for kured's reboot window (su 22:00–04:00 Europe/Berlin), which opens Sun 22:00 Europe/Berlin, in 9h",
		Clears:   "wait: it opens Sun 22:00 Europe/Berlin, in 9h",
		Evidence: []model.Evidence{{Key: "kured --reboot-days", Value: "su (arg)"}, {Key: "now", Value: "Sun 13:00 CET"}}}
	pdb := model.Blocker{Kind: model.BlockerLock, Node: "w3", Reason: "w3 waits for the kured lock, held by w1 for 2m (draining), held",
		Clears: "wait for w1 to finish its cycle", Evidence: []model.Evidence{{Key: "verdict", Value: "held: holder w1 is in a normal reboot cycle and has been for a while now, nothing to do"}}}
	c.Explain = func(*model.Cluster, time.Time) model.Blockers {
		return model.Blockers{Nodes: map[string][]model.Blocker{"w3": {win, pdb}}}
	}
	c.Recompute(ctx.Now)
	for _, width := range []int{60, 116} {
		lines := Lines(ctx, c, "w3", width)
		var words []string
		in := false
		for _, l := range lines {
			s := ansi.Strip(l)
			in = in || s == "Waiting for"
			if s == "Cycle" {
				break
			}
			if w := pctx.Width(l); in && w > width-1 {
				t.Errorf("width %d: a line is %d wide: %q", width, w, s)
			}
			if in {
				words = append(words, strings.Fields(s)...)
			}
		}
		all := strings.Join(words, " ")
		for _, want := range []string{"1. reboot-window", "which opens Sun 22:00 Europe/Berlin, in 9h", "clears wait: it opens",
			"kured --reboot-days su (arg)", "now Sun 13:00 CET", "2. lock-held", "held by w1 for 2m (draining), held", "nothing to do"} {
			if !strings.Contains(all, want) {
				t.Errorf("width %d: %q not shown in %q", width, want, all)
			}
		}
	}
}

// kured's --prometheus-url may carry a password or a token: the lock
// detail shows its settings with the one masking function the snapshot,
// watch and the agent use (issue 22 §6), never the secret.
func TestLockDetailMasksKuredPrometheusURL(t *testing.T) {
	ctx := pctx.New(themes.Dark(), false, false, false)
	cfg := kured.ParseConfig([]string{"/usr/bin/kured", "--prometheus-url=https://admin:hunter2@prom:9090/?token=s3cret"}, nil, nil)
	st := model.LockStatus{LockRef: model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured"},
		Verdict: model.VerdictFree, Reason: "free", Settings: cfg.Settings()}
	all := ansi.Strip(strings.Join(LockLines(ctx, st, 200), "\n"))
	if strings.Contains(all, "hunter2") || strings.Contains(all, "s3cret") ||
		!strings.Contains(all, "https://admin:xxxxx@prom:9090/?token=xxxxx") {
		t.Fatalf("lock detail:\n%s", all)
	}
}
