package dialog

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/themes"
	"github.com/rebootwatch/rebootwatch/tui/pctx"
)

var t0 = time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)

func plan(allowed bool) lock.Plan {
	st := model.LockStatus{LockRef: model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured"},
		Holder: "worker-1", HolderNodes: []string{"worker-1"}, Verdict: model.VerdictOrphaned, Reason: "rebooted and steady"}
	p := lock.Plan{Status: st, Action: model.ActionRelease, Allowed: allowed,
		Gates: []lock.Gate{{Name: "volumes", Passed: allowed, Reason: "2 volumes degraded"}},
		Write: lock.Write{Ref: st.LockRef, Object: "DaemonSet kube-system/kured", UID: "aa1278af0b70baa1-0000-4000-8000-000000000001",
			ResourceVersion: "34", Op: kured.OpRemoveAnnotation, Holder: "worker-1"}}
	if !allowed {
		p.Refusal = "release refused: volumes: 2 volumes degraded"
	}
	return p
}

func TestRenderFitsAndWrapsLongWrites(t *testing.T) {
	ctx := pctx.New(themes.Dark(), false, false, false)
	for _, w := range []int{30, 60, 92, 140} {
		d := New(plan(false), t0, true, true)
		lines := d.Render(ctx, w, 40)
		for i, l := range lines {
			if strings.Contains(l, "\n") || ansi.StringWidth(l) != min(w, 92) {
				t.Fatalf("w=%d: line %d is %d wide (or has a newline): %q", w, i, ansi.StringWidth(l), ansi.Strip(l))
			}
		}
		all := ansi.Strip(strings.Join(lines, ""))
		if w >= 60 && !strings.Contains(all, "DRY RUN") {
			t.Errorf("w=%d: dry-run not shown", w)
		}
	}
}

func TestKeys(t *testing.T) {
	d := New(plan(true), t0, false, false)
	if r := d.Key("y", "y", t0.Add(100*time.Millisecond)); r != None || d.Yes {
		t.Fatal("key inside the ignore window was handled")
	}
	later := t0.Add(IgnoreFor)
	if r := d.Key("enter", "", later); r != Cancel {
		t.Fatalf("enter on the default (No) = %v; want Cancel", r)
	}
	d = New(plan(true), t0, false, false)
	d.Key("tab", "", later)
	if r := d.Key("enter", "", later); r != Confirm {
		t.Fatalf("enter on Yes = %v; want Confirm", r)
	}
	d = New(plan(false), t0, false, false)
	if r := d.Key("y", "y", later); r != Refused {
		t.Fatalf("y on a refused plan = %v; want Refused", r)
	}
	d = New(plan(false), t0, false, true)
	for _, k := range []string{"w", "o", "r", "k", "e", "r", "-", "1"} {
		d.Key(k, k, later)
	}
	if d.Typed != "worker-1" {
		t.Fatalf("typed %q", d.Typed)
	}
	d.Key("tab", "", later)
	if r := d.Key("enter", "", later); r != Confirm || !d.Unsafe() {
		t.Fatalf("typed override = %v", r)
	}
	// An unattended plan can never be overridden.
	p := plan(false)
	p.Unattended = true
	d = New(p, t0, false, true)
	if r := d.Key("enter", "", later); r != Refused {
		t.Fatalf("unattended override = %v; want Refused", r)
	}
}

// TestShortScreenKeepsTheWrites: at the smallest supported size the
// dialog cannot show everything, but what Yes would write (a fleetlock
// release's Lease update and the holder's uncordon) must stay on screen,
// and hidden lines are said to be hidden, never dropped silently.
func TestShortScreenKeepsTheWrites(t *testing.T) {
	ctx := pctx.New(themes.Dark(), false, false, false)
	p := plan(true)
	for _, g := range []string{"fresh-data", "verdict", "holder", "other-nodes", "alerts"} {
		p.Gates = append(p.Gates, lock.Gate{Name: g, Passed: true, Reason: "passes, with a reason long enough to wrap onto a second line here"})
	}
	p.Uncordon = lock.Write{Object: "Node worker-1", UID: "node-95041b1d49d4", Op: lock.OpUncordon, Holder: "worker-1"}
	for _, sz := range [][2]int{{60, 15}} {
		lines := New(p, t0, false, false).Render(ctx, sz[0], sz[1])
		if len(lines) > sz[1] {
			t.Fatalf("%dx%d: %d lines", sz[0], sz[1], len(lines))
		}
		all := ansi.Strip(strings.Join(lines, "\n"))
		for _, want := range []string{"write", "then", "uncordon", "[ No ]", "lines hidden"} {
			if !strings.Contains(all, want) {
				t.Errorf("%dx%d: %q not shown:\n%s", sz[0], sz[1], want, all)
			}
		}
	}
}

// demoPlan is the default demo's release of worker-1's orphaned fleetlock
// Lease, with the texts the engine writes: six gates, a long reason, the
// Lease write and the uncordon after it.
func demoPlan() lock.Plan {
	st := model.LockStatus{LockRef: model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-workers"},
		Holder: "0433d3b194bb44ebafcc990a900f972a", HolderNodes: []string{"worker-1"}, Verdict: model.VerdictOrphaned,
		Reason: "held by worker-1, which rebooted (Ready since after the lock was taken) and has been Ready and still cordoned by its coordinator for 30m"}
	p := lock.Plan{Status: st, Action: model.ActionRelease, Allowed: true,
		Write: lock.Write{Ref: st.LockRef, Object: "Lease default/fleetlock-workers", UID: "6be075f6c04c85e2-0000-4000-8000-000000000001",
			ResourceVersion: "9", Op: fleetlock.OpClearHolder, Holder: st.Holder,
			Summary: `set spec.holderIdentity "0433d3b194bb44ebafcc990a900f972a" → "" (leaseTransitions kept at 9, as fleetlock's own unlock does)`},
		Uncordon: lock.Write{Object: "Node worker-1", UID: "node-95041b1d49d4", Op: lock.OpUncordon, Node: "worker-1", BootID: "738dd7a9",
			Summary: "set spec.unschedulable true → false (uncordon worker-1, as its coordinator does when the holder unlocks itself)"}}
	for _, g := range [][2]string{{"fresh-data", "nodes and lock data are fresh"}, {"verdict", "verdict orphaned allows release"},
		{"holder", "holder node worker-1 is Ready (cordoned by its coordinator until the holder unlocks)"},
		{"other-nodes", "every other node is Ready and not mid-cycle"}, {"volumes", "no Longhorn volume is degraded or faulted"},
		{"alerts", "no blocking-alert filter configured"}} {
		p.Gates = append(p.Gates, lock.Gate{Name: g[0], Passed: true, Reason: g[1]})
	}
	return p
}

// TestEightyByTwentyFourShowsEveryGate: on an 80x24 terminal the release
// dialog is compact (one line per gate, a one-line reason) and hides
// nothing: all six gates, the write, the uncordon and the buttons.
func TestEightyByTwentyFourShowsEveryGate(t *testing.T) {
	ctx := pctx.New(themes.Dark(), false, false, false)
	for _, dry := range []bool{false, true} {
		lines := New(demoPlan(), t0, dry, false).Render(ctx, 80, 24)
		all := ansi.Strip(strings.Join(lines, "\n"))
		if len(lines) > 24 {
			t.Fatalf("dry-run %v: %d lines:\n%s", dry, len(lines), all)
		}
		for _, want := range []string{"✓ fresh-data", "✓ verdict", "✓ holder", "✓ other-nodes", "✓ volumes", "✓ alerts",
			"write", "then", "uncordon worker-1", "[ No ]", "[ Yes ]", "y confirm"} {
			if !strings.Contains(all, want) {
				t.Errorf("dry-run %v: %q not shown:\n%s", dry, want, all)
			}
		}
		if strings.Contains(all, "hidden") {
			t.Errorf("dry-run %v: lines hidden at 80x24:\n%s", dry, all)
		}
	}
	// A tall screen keeps the full layout (gate reasons wrapped).
	all := ansi.Strip(strings.Join(New(demoPlan(), t0, false, false).Render(ctx, 80, 40), "\n"))
	if !strings.Contains(all, "holder unlocks)") {
		t.Errorf("a tall dialog cut a gate's reason:\n%s", all)
	}
}

// TestYConfirms: y confirms an allowed plan at once (as crush's dialogs and
// the CLI's [y/N] prompt do), but only after the ignore window, and never
// a refused plan; with an override pending y is typed text.
func TestYConfirms(t *testing.T) {
	later := t0.Add(IgnoreFor)
	d := New(plan(true), t0, false, false)
	if r := d.Key("y", "y", t0.Add(IgnoreFor-time.Millisecond)); r != None || d.Yes {
		t.Fatalf("y inside the ignore window = %v (yes %v); want ignored", r, d.Yes)
	}
	if r := d.Key("y", "y", later); r != Confirm {
		t.Fatalf("y on an allowed plan = %v; want Confirm", r)
	}
	if r := New(plan(false), t0, false, false).Key("y", "y", later); r != Refused {
		t.Fatalf("y on a refused plan = %v; want Refused", r)
	}
	d = New(plan(false), t0, false, true)
	if r := d.Key("y", "y", later); r != None || d.Typed != "y" {
		t.Fatalf("y during an override = %v, typed %q; want it typed", r, d.Typed)
	}
}

// flatcarUncordonPlan is the uncordon of --demo=flatcar's flatcar-worker-1
// with the texts the engine and FLUO's package write: a long state, a node
// gate saying whose cordon it is, and the write in FLUO's words.
func flatcarUncordonPlan() lock.Plan {
	why := "flatcar: flatcar-worker-1 rebooted (its boot id changed since it set reboot-in-progress) but still says " +
		"reboot-in-progress=true: its update-agent has not run since the reboot, so FLUO's slot stays taken"
	st := model.LockStatus{Holder: "flatcar-worker-1", HolderNodes: []string{"flatcar-worker-1"}, Reason: "left cordoned: " + why}
	p := lock.Plan{Status: st, Action: model.ActionUncordon, Allowed: true, LeftBy: why,
		Write: lock.Write{Object: "Node flatcar-worker-1", UID: "node-5c1f", Op: lock.OpUncordon, Node: "flatcar-worker-1", BootID: "9d2e41c07a",
			CordonBy: "update-agent", CordonAt: t0,
			Summary: "set spec.unschedulable true → false (uncordon flatcar-worker-1, as FLUO's update-agent does after the operator's after-reboot checks, when it made the node unschedulable)"}}
	for _, g := range [][2]string{{"fresh-data", "nodes and lock data are fresh"},
		{"node", "flatcar-worker-1 is Ready, holds no lock and is still cordoned (cordoned by update-agent at 2026-12-01T11:52:30Z): " + why},
		{"other-nodes", "every other node is Ready and not mid-cycle"}, {"volumes", "no Longhorn volume is degraded or faulted"},
		{"alerts", "no blocking-alert filter configured"}} {
		p.Gates = append(p.Gates, lock.Gate{Name: g[0], Passed: true, Reason: g[1]})
	}
	return p
}

// Issue 32 §4: at 100 columns and wider the uncordon dialog wraps its
// state, its gates and its write whole: nothing is cut with "…" (at 160x44
// it cut the state).
func TestUncordonDialogWrapsAtWideScreens(t *testing.T) {
	ctx := pctx.New(themes.Dark(), false, false, false)
	p := flatcarUncordonPlan()
	for _, sz := range [][2]int{{100, 44}, {160, 44}} {
		lines := New(p, t0, false, false).Render(ctx, sz[0], sz[1])
		all := ansi.Strip(strings.Join(lines, "\n"))
		if strings.Contains(all, "…") || len(lines) > sz[1] {
			t.Errorf("%dx%d: cut (%d lines):\n%s", sz[0], sz[1], len(lines), all)
		}
		// Lines break after a hyphen too ("update-" / "agent").
		flat := strings.ReplaceAll(strings.Join(strings.Fields(strings.ReplaceAll(all, "│", "")), " "), "- ", "-")
		for _, want := range []string{"so FLUO's slot stays taken", "cordoned by update-agent at 2026-12-01T11:52:30Z",
			"after the operator's after-reboot checks, when it made the node unschedulable)"} {
			if !strings.Contains(flat, want) {
				t.Errorf("%dx%d: %q not shown whole:\n%s", sz[0], sz[1], want, all)
			}
		}
	}
}
