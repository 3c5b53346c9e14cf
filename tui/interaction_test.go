package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/themes"
)

func screen(m *Model) string { return ansi.Strip(m.View().Content) }

func rowNames(m *Model) []string {
	var out []string
	for _, r := range m.table.Rows() {
		out = append(out, r.Name)
	}
	return out
}

func TestCycleNodesSortFirst(t *testing.T) {
	m := newFixture().model(Options{})
	size(m, 100, 30)
	got := rowNames(m)
	want := []string{"w-03", "w-09", "w-04", "w-05", "w-06", "w-07", "w-08", "cp-1", "cp-2", "cp-3", "w-01", "w-02"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("default order = %v; want %v", got, want)
	}
}

func TestFilter(t *testing.T) {
	m := newFixture().model(Options{})
	size(m, 100, 30)
	press(m, "/", "p", "e", "n", "d")
	if got := rowNames(m); len(got) != 5 || got[0] != "w-04" {
		t.Fatalf("filter 'pend' rows = %v; want the 5 pending workers", got)
	}
	if s := screen(m); !strings.Contains(s, "/ pend█") || !strings.Contains(s, "5/12 nodes") {
		t.Fatalf("filter line or count missing:\n%s", s)
	}
	// Words must all match: role and name.
	press(m, "backspace", "backspace", "backspace", "backspace", "c", "o", "n", "t", "r", "o", "l", " ", "2")
	if got := rowNames(m); len(got) != 1 || got[0] != "cp-2" {
		t.Fatalf("filter 'control 2' rows = %v; want [cp-2]", got)
	}
	press(m, "enter")
	if m.filtering || m.table.Filter != "control 2" {
		t.Fatalf("enter should keep the filter and leave the input")
	}
	// q is a quit key outside the input, text inside it.
	press(m, "/")
	if cmd := press(m, "q"); cmd != nil {
		t.Fatal("q inside the filter must not quit")
	}
	press(m, "esc")
	if m.filtering || m.table.Filter != "" || len(m.table.Rows()) != 12 {
		t.Fatalf("esc should clear the filter: filtering=%v filter=%q rows=%d", m.filtering, m.table.Filter, len(m.table.Rows()))
	}
	press(m, "/", "z", "z", "z", "enter")
	if s := screen(m); !strings.Contains(s, `no node matches the filter "zzz"`) {
		t.Fatalf("empty filter result not explained:\n%s", s)
	}
}

func TestSortCycles(t *testing.T) {
	m := newFixture().model(Options{})
	size(m, 100, 30)
	press(m, "s")
	if m.table.Sort.String() != "name" || rowNames(m)[0] != "cp-1" {
		t.Fatalf("sort by name: %s %v", m.table.Sort, rowNames(m))
	}
	press(m, "s")
	if m.table.Sort.String() != "phase" || rowNames(m)[0] != "w-04" || rowNames(m)[len(rowNames(m))-1] != "w-09" {
		t.Fatalf("sort by phase: %v", rowNames(m))
	}
	press(m, "s") // time in phase: longest first, unknown times last
	rows := m.table.Rows()
	for i := 1; i < len(rows); i++ {
		if rows[i-1].Since.IsZero() && !rows[i].Since.IsZero() {
			t.Fatalf("sort by time: %s (known) after %s (unknown)", rows[i].Name, rows[i-1].Name)
		}
		if !rows[i].Since.IsZero() && rows[i].Since.Before(rows[i-1].Since) {
			t.Fatalf("sort by time: %s (%v) after %s (%v)", rows[i].Name, rows[i].Since, rows[i-1].Name, rows[i-1].Since)
		}
	}
	press(m, "s")
	if rowNames(m)[0] != "cp-1" || m.table.Sort.String() != "role" {
		t.Fatalf("sort by role: %v", rowNames(m))
	}
	press(m, "s")
	if m.table.Sort.String() != "cycle" || rowNames(m)[0] != "w-03" {
		t.Fatalf("sort back to cycle: %v", rowNames(m))
	}
	if !strings.Contains(screen(m), "sort: cycle") {
		t.Fatal("sort mode not shown")
	}
}

// TestCursorStaysOnTopUntilMoved: before the operator moves, the cursor
// follows the first row (the node that most needs eyes) as rows reorder.
func TestCursorStaysOnTopUntilMoved(t *testing.T) {
	f := newFixture()
	m := f.model(Options{})
	size(m, 100, 30)
	if r, _ := m.table.Selected(); r.Name != "w-03" {
		t.Fatalf("cursor starts on %s; want w-03", r.Name)
	}
	// The lock moves to w-04, which now drains and sorts first.
	kured := model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured"}
	m.Update(eventsMsg{model.LockUpserted{Lock: model.LockObject{LockRef: kured, UID: "ds-uid", ResourceVersion: "999", Spec: &fixSpec{kind: model.LockKured, holder: "w-04", at: t0}}}})
	if rowNames(m)[0] != "w-04" {
		t.Fatalf("rows = %v; want w-04 first", rowNames(m))
	}
	if r, _ := m.table.Selected(); r.Name != "w-04" {
		t.Fatalf("cursor on %s; want the new first row w-04", r.Name)
	}
	// Once moved, the cursor follows its node.
	press(m, "j", "j")
	sel, _ := m.table.Selected()
	m.Update(eventsMsg{model.LockUpserted{Lock: model.LockObject{LockRef: kured, UID: "ds-uid", ResourceVersion: "1000", Spec: &fixSpec{kind: model.LockKured, holder: "w-05", at: t0}}}})
	if r, _ := m.table.Selected(); r.Name != sel.Name {
		t.Fatalf("moved cursor jumped from %s to %s", sel.Name, r.Name)
	}
}

func TestCursorFollowsNodeAcrossSort(t *testing.T) {
	m := newFixture().model(Options{})
	size(m, 100, 30)
	press(m, "j", "j") // w-04
	press(m, "s")
	if r, _ := m.table.Selected(); r.Name != "w-04" {
		t.Fatalf("selected after sort = %s; want w-04", r.Name)
	}
}

func TestDetail(t *testing.T) {
	m := newFixture().model(Options{})
	size(m, 100, 30)
	press(m, "enter")
	s := screen(m)
	for _, want := range []string{"Node w-03", "draining for 7m", "no (cordoned)", "Conditions", "KubeletReady", "pending 1h53m → draining 7m", "kube-system/kured"} {
		if !strings.Contains(s, want) {
			t.Errorf("detail lacks %q", want)
		}
	}
	press(m, "j", "j", "j", "j", "j", "j", "j", "j", "j", "j", "j", "j", "j")
	s = screen(m)
	for _, want := range []string{"boot-a-w-03", "weave.works/kured-reboot-in-progress", "pvc-00"} {
		if !strings.Contains(s, want) {
			t.Errorf("scrolled detail lacks %q:\n%s", want, s)
		}
	}
	for i := 0; i < 100; i++ {
		press(m, "j")
	}
	bottom := m.detailOff
	press(m, "k")
	if m.detailOff != bottom-1 || bottom > 40 {
		t.Fatalf("detail scroll not clamped: offset %d after 100×j, %d after k", bottom, m.detailOff)
	}
	press(m, "esc")
	if m.mode != modeMain || !strings.Contains(screen(m), "Nodes") {
		t.Fatal("esc should return to the main screen")
	}
}

func TestDetailOfDeletedNode(t *testing.T) {
	f := newFixture()
	m := f.model(Options{})
	size(m, 100, 30)
	press(m, "enter")
	m.Update(eventsMsg{model.NodeDeleted{Name: "w-03"}})
	if s := screen(m); !strings.Contains(s, "node w-03 is gone") {
		t.Fatalf("deleted node not explained:\n%s", s)
	}
}

// openAfterIgnore opens a dialog with key k and waits out the ignore window.
func openAfterIgnore(t *testing.T, f *fixture, m *Model, k string) {
	t.Helper()
	press(m, k)
	if m.dialog == nil {
		t.Fatalf("%s did not open a dialog:\n%s", k, screen(m))
	}
	f.clock.Add(500 * time.Millisecond)
}

func TestConfirmIgnoresKeysRightAfterOpening(t *testing.T) {
	f := newFixture()
	m := f.model(Options{})
	size(m, 100, 30)
	press(m, "r", "right", "enter")
	if m.dialog == nil {
		t.Fatal("keys within 400ms of opening must be ignored (dialog closed)")
	}
	if m.dialog.Yes {
		t.Fatal("a key within the ignore window moved the focus to Yes")
	}
	if len(f.actions.calls) != 0 {
		t.Fatal("an action ran")
	}
}

func TestConfirmDefaultsToNo(t *testing.T) {
	f := newFixture()
	m := f.model(Options{})
	size(m, 100, 30)
	openAfterIgnore(t, f, m, "r")
	if !strings.Contains(screen(m), "Release lock?") {
		t.Fatal("dialog not shown")
	}
	cmd := press(m, "enter")
	if m.dialog != nil || cmd != nil {
		t.Fatal("enter on the default button must cancel without a command")
	}
	if s := screen(m); !strings.Contains(s, "release cancelled: nothing written") {
		t.Fatalf("cancel not reported:\n%s", s)
	}
	openAfterIgnore(t, f, m, "r")
	press(m, "esc")
	if m.dialog != nil {
		t.Fatal("esc must cancel")
	}
}

func TestConfirmAccept(t *testing.T) {
	f := newFixture()
	m := f.model(Options{})
	size(m, 100, 30)
	press(m, "tab") // locks panel: the ghost lease is first
	openAfterIgnore(t, f, m, "x")
	s := screen(m)
	for _, want := range []string{"Reap lock?", "ghost", "✓ volumes", `set spec.holderIdentity "978a225b3d7b40e9acd7ce9b62f68444"`, "resourceVersion 7"} {
		if !strings.Contains(s, want) {
			t.Errorf("dialog lacks %q", want)
		}
	}
	f.actions.result = lock.Result{Outcome: model.OutcomeDone, Message: "lease holder cleared"}
	cmd := press(m, "y")
	if cmd == nil || m.dialog != nil {
		t.Fatal("confirm should close the dialog and return the action command")
	}
	if len(f.actions.calls) != 0 {
		t.Fatal("Update ran the action itself; it must only return a command")
	}
	if !strings.Contains(screen(m), "in progress") {
		t.Fatal("no progress notice")
	}
	msg := cmd()
	if len(f.actions.calls) != 1 || f.actions.calls[0].Action != model.ActionReap || f.actions.unsafe[0] {
		t.Fatalf("calls = %+v unsafe=%v", f.actions.calls, f.actions.unsafe)
	}
	m.Update(msg)
	s = screen(m)
	if !strings.Contains(s, "✓ reap fleetlock:default/fleetlock-default: done — lease holder cleared") {
		t.Fatalf("toast missing:\n%s", s)
	}
	tl := m.c.Timeline()
	last := tl[len(tl)-1]
	if last.Kind != model.KindAction || !strings.Contains(last.Message, "reap") || !strings.Contains(last.Message, "done") {
		t.Fatalf("timeline entry = %+v", last)
	}
}

func TestConfirmOutcomesAsToasts(t *testing.T) {
	for _, oc := range []struct {
		outcome model.Outcome
		want    string
	}{
		{model.OutcomeConflict, "! reap fleetlock:default/fleetlock-default: conflict — lock changed"},
		{model.OutcomeForbidden, "✗ reap fleetlock:default/fleetlock-default: forbidden — lock changed"},
		{model.OutcomeDryRun, "▸ reap fleetlock:default/fleetlock-default: dry-run — lock changed"},
	} {
		f := newFixture()
		m := f.model(Options{DryRun: oc.outcome == model.OutcomeDryRun})
		size(m, 120, 40)
		press(m, "tab")
		openAfterIgnore(t, f, m, "x")
		if oc.outcome == model.OutcomeDryRun && !strings.Contains(screen(m), "DRY RUN, not written") {
			t.Fatal("dry-run dialog should say the write will not be made")
		}
		f.actions.result = lock.Result{Outcome: oc.outcome, Message: "lock changed"}
		cmd := press(m, "y")
		m.Update(cmd())
		if s := screen(m); !strings.Contains(s, oc.want) {
			t.Fatalf("%s: toast missing %q:\n%s", oc.outcome, oc.want, s)
		}
		if !strings.Contains(screen(m), "reap fleetlock:default/fleetlock-default (holder "+ghostID+"): "+string(oc.outcome)) {
			t.Fatalf("%s: timeline lacks the outcome", oc.outcome)
		}
	}
}

func TestConfirmRefusedByGate(t *testing.T) {
	f := newFixture()
	f.actions.failGate = lock.GateVolumes
	m := f.model(Options{})
	size(m, 100, 30)
	openAfterIgnore(t, f, m, "r")
	s := screen(m)
	for _, want := range []string{"✗ volumes", "2 Longhorn volumes degraded", "refused", "nothing will be written", "[ Yes, unsafe ]"} {
		if !strings.Contains(s, want) {
			t.Errorf("refused dialog lacks %q", want)
		}
	}
	press(m, "right")
	if m.dialog.Yes {
		t.Fatal("Yes must not be selectable when gates fail without --allow-unsafe")
	}
	cmd := press(m, "enter")
	if cmd != nil || m.dialog != nil || len(f.actions.calls) != 0 {
		t.Fatal("a refused plan must close without acting")
	}
	if s := screen(m); !strings.Contains(s, "refused — release refused: gate volumes failed") {
		t.Fatalf("refusal toast missing:\n%s", s)
	}
	tl := m.c.Timeline()
	if last := tl[len(tl)-1]; !strings.Contains(last.Message, "refused") {
		t.Fatalf("refusal not on the timeline: %+v", last)
	}
}

func TestUnsafeOverrideNeedsTypedHolder(t *testing.T) {
	f := newFixture()
	f.actions.failGate = lock.GateVolumes
	m := f.model(Options{AllowUnsafe: true})
	size(m, 100, 30)
	openAfterIgnore(t, f, m, "r")
	if !strings.Contains(screen(m), "type w-03 to override") {
		t.Fatalf("no typed confirmation prompt:\n%s", screen(m))
	}
	press(m, "tab")
	if m.dialog.Yes {
		t.Fatal("Yes enabled before the holder was typed")
	}
	press(m, "w", "-", "0")
	press(m, "tab")
	if m.dialog.Yes {
		t.Fatal("Yes enabled by a partial name")
	}
	if cmd := press(m, "enter"); cmd != nil || m.dialog != nil {
		t.Fatal("enter on No must cancel")
	}
	openAfterIgnore(t, f, m, "r")
	press(m, "w", "-", "0", "3", "tab")
	if !m.dialog.Yes {
		t.Fatal("Yes should be enabled after typing the holder")
	}
	cmd := press(m, "enter")
	if cmd == nil {
		t.Fatal("confirmed override should run")
	}
	m.Update(cmd())
	if len(f.actions.unsafe) != 1 || !f.actions.unsafe[0] {
		t.Fatalf("Do not called with AllowUnsafe: %v", f.actions.unsafe)
	}
	tl := m.c.Timeline()
	if last := tl[len(tl)-1]; !strings.Contains(last.Message, "UNSAFE") {
		t.Fatalf("override not marked on the timeline: %+v", last)
	}
}

func TestReadOnlyHidesActions(t *testing.T) {
	f := newFixture()
	m := f.model(Options{ReadOnly: true})
	size(m, 120, 40)
	s := screen(m)
	for _, hint := range []string{"release lock", "reap lock", "r release", "x reap"} {
		if strings.Contains(s, hint) {
			t.Fatalf("read-only screen shows the action hint %q:\n%s", hint, s)
		}
	}
	if !strings.Contains(s, "[read-only]") {
		t.Fatal("read-only mode not shown")
	}
	press(m, "r")
	press(m, "x")
	if m.dialog != nil {
		t.Fatal("r/x opened a dialog in read-only mode")
	}
	press(m, "?")
	if s := screen(m); strings.Contains(s, "release lock") || strings.Contains(s, "reap lock") {
		t.Fatalf("full help lists actions in read-only mode:\n%s", s)
	}
}

func TestNoActionsMeansReadOnly(t *testing.T) {
	f := newFixture()
	m := New(Options{Cluster: f.c, Clock: f.clock.Now, WallClock: f.clock.Now})
	size(m, 100, 30)
	press(m, "r")
	if m.dialog != nil || !strings.Contains(screen(m), "[read-only]") {
		t.Fatal("without Actions the dashboard must be read-only")
	}
}

func TestResize(t *testing.T) {
	m := newFixture().model(Options{})
	size(m, 200, 60)
	if !strings.Contains(screen(m), "Timeline") || !strings.Contains(screen(m), "PROGRESS") {
		t.Fatal("wide layout lacks timeline or stepper column")
	}
	press(m, "G")
	size(m, 60, 15)
	s := screen(m)
	if strings.Contains(s, "PROGRESS") || !strings.Contains(s, "PHASE") || !strings.Contains(s, "WAITING FOR") {
		t.Fatalf("the condensed layout gives way with the stepper, never PHASE or WAITING FOR:\n%s", s)
	}
	// The cursor (last row) must still be visible after shrinking.
	if !strings.Contains(s, "w-02") {
		t.Fatalf("selected row scrolled out of view:\n%s", s)
	}
	size(m, 59, 15)
	if s := screen(m); !strings.Contains(s, "terminal too small") || !strings.Contains(s, "need 60×15, have 59×15") {
		t.Fatalf("too-small notice missing:\n%s", s)
	}
	size(m, 60, 14)
	if !strings.Contains(screen(m), "terminal too small") {
		t.Fatal("too-small notice missing at 60×14")
	}
}

// TestEverySize renders every size from 1×1 to 220×70 in steps, in every
// mode, and checks the frame is exactly the terminal's size.
//
// A line's width is ansi.StringWidth's, asked once per distinct line: the
// frames of one width share most of their lines (borders, the header, the
// padding), and measuring them again was half of this test's own CPU.
func TestEverySize(t *testing.T) {
	widths := map[string]int{}
	widthOf := func(l string) int {
		n, ok := widths[l]
		if !ok {
			n = ansi.StringWidth(l)
			widths[l] = n
		}
		return n
	}
	f := newFixture()
	f.actions.failGate = lock.GateVolumes
	m := f.model(Options{AllowUnsafe: true})
	modes := []func(){
		func() { m.mode, m.dialog = modeMain, nil },
		func() { m.mode = modeDetail; m.detailIsLock = false; m.detailNode = "w-03" },
		func() { m.mode = modeDetail; m.detailIsLock = true; m.detailLock = keyOf(m.c.LockStatuses()[0]) },
		func() { m.mode = modeHelp },
		func() {
			m.mode = modeMain
			p, _ := f.actions.Plan(m.c, m.c.LockStatuses()[1].LockRef, "w-03", 0, model.ActionRelease, t0)
			m.dialog = newTestDialog(p)
		},
	}
	for w := 1; w <= 220; w += 7 {
		for h := 1; h <= 70; h += 3 {
			for i, set := range modes {
				set()
				m.Update(tea.WindowSizeMsg{Width: w, Height: h})
				got := m.View().Content
				lines := strings.Split(got, "\n")
				if len(lines) != h {
					t.Fatalf("%d×%d mode %d: %d lines", w, h, i, len(lines))
				}
				for j, l := range lines {
					if n := widthOf(l); n != w {
						t.Fatalf("%d×%d mode %d: line %d is %d wide: %q", w, h, i, j+1, n, ansi.Strip(l))
					}
				}
			}
		}
	}
}

func TestThemeCycleAndBackground(t *testing.T) {
	f := newFixture()
	m := f.model(Options{})
	size(m, 100, 30)
	if m.Theme() != themes.NameDark {
		t.Fatalf("start theme %s", m.Theme())
	}
	m.Update(tea.BackgroundColorMsg{Color: whiteColor{}})
	if m.Theme() != themes.NameLight {
		t.Fatalf("light background should choose the light theme, got %s", m.Theme())
	}
	for _, want := range []string{themes.NameHighContrast, themes.NameColorBlind, themes.NameDark, themes.NameLight} {
		press(m, "t")
		if m.Theme() != want {
			t.Fatalf("t → %s; want %s", m.Theme(), want)
		}
	}
	// Once the operator chose a theme, background answers are ignored.
	m.Update(tea.BackgroundColorMsg{Color: blackColor{}})
	if m.Theme() != themes.NameLight {
		t.Fatalf("background detection overrode the operator's choice: %s", m.Theme())
	}
	// A fixed theme (--theme) is never replaced by detection.
	m2 := f.model(Options{Theme: themes.HighContrast(), FixedTheme: true})
	m2.Update(tea.BackgroundColorMsg{Color: whiteColor{}})
	if m2.Theme() != themes.NameHighContrast {
		t.Fatalf("fixed theme replaced: %s", m2.Theme())
	}
	// A user theme joins the cycle.
	ut := themes.Dark()
	ut.Name = "mine"
	m3 := f.model(Options{UserTheme: ut})
	press(m3, "t", "t", "t", "t")
	if m3.Theme() != "mine" {
		t.Fatalf("user theme not in the cycle: %s", m3.Theme())
	}
}

type whiteColor struct{}

func (whiteColor) RGBA() (r, g, b, a uint32) { return 0xffff, 0xffff, 0xffff, 0xffff }

type blackColor struct{}

func (blackColor) RGBA() (r, g, b, a uint32) { return 0, 0, 0, 0xffff }

func TestNoColor(t *testing.T) {
	m := newFixture().model(Options{NoColor: true})
	size(m, 200, 60)
	c := m.View().Content
	if strings.Contains(c, "38;2;") || strings.Contains(c, "48;2;") || strings.Contains(c, "38;5;") {
		t.Fatal("NO_COLOR output contains colour sequences")
	}
	if !strings.Contains(c, "\x1b[1") {
		t.Fatal("NO_COLOR output should still emphasise with bold")
	}
	press(m, "t")
	if m.Theme() != themes.NameNoColor || !strings.Contains(screen(m), "NO_COLOR is set") {
		t.Fatal("t must keep the colourless theme under NO_COLOR")
	}
}

func TestStaleSourceDimsPanel(t *testing.T) {
	f := newFixture()
	m := f.model(Options{})
	size(m, 200, 60)
	m.Update(eventsMsg{model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusStale,
		LastSync: t0.Add(-45 * time.Second)}}})
	s := screen(m)
	if !strings.Contains(s, "Nodes · nodes stale · updated 45s ago") {
		t.Fatalf("stale nodes panel not marked:\n%s", s)
	}
	if !strings.Contains(m.View().Content, "\x1b[2;") {
		t.Fatal("stale panel is not dimmed")
	}
	m.Update(eventsMsg{model.SourceChanged{Health: model.SourceHealth{Name: model.SourceLonghorn, Status: model.StatusError,
		Message: "connection refused"}}})
	if s := screen(m); !strings.Contains(s, "longhorn error · never updated") {
		t.Fatalf("failed Longhorn panel not marked:\n%s", s)
	}
}

// TestKeysStayInstantWhileAnActionHangs: the action's API call blocks; the
// program still handles keys because Update only returned a command.
func TestKeysStayInstantWhileAnActionHangs(t *testing.T) {
	f := newFixture()
	f.actions.block = make(chan struct{})
	defer close(f.actions.block)
	m := f.model(Options{})
	size(m, 100, 30)
	press(m, "tab")
	openAfterIgnore(t, f, m, "x")
	cmd := press(m, "y")
	if cmd == nil {
		t.Fatal("no command")
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	press(m, "tab", "j", "s", "/", "w", "esc")
	if m.table.Sort.String() != "name" {
		t.Fatal("keys were not handled while the action hung")
	}
	press(m, "x")
	if m.dialog != nil || !strings.Contains(screen(m), "an action is still running") {
		t.Fatal("a second action must wait for the first")
	}
	select {
	case <-done:
		t.Fatal("the hung action finished early")
	default:
	}
}

func TestEventsAndTicks(t *testing.T) {
	f := newFixture()
	ch := make(chan model.Event, 4)
	m := f.model(Options{Events: ch})
	size(m, 100, 30)
	if m.Init() == nil {
		t.Fatal("Init returned no command")
	}
	nd, _ := f.c.Node("w-03")
	n := *nd
	n.Conditions = ready("False", t0)
	ch <- model.NodeUpserted{Node: n}
	ch <- model.VolumeDeleted{Namespace: "longhorn-system", Name: "pvc-00"}
	msg := waitEvents(ch)()
	batch, ok := msg.(eventsMsg)
	if !ok || len(batch) != 2 {
		t.Fatalf("waitEvents = %#v; want a batch of 2", msg)
	}
	_, cmd := m.Update(msg)
	if cmd == nil {
		t.Fatal("after a batch the model must wait for the next one")
	}
	if got := m.c.Phase("w-03"); got != model.PhaseRebooting {
		t.Fatalf("w-03 phase = %s; want rebooting", got)
	}
	if !strings.Contains(screen(m), "rebooting") {
		t.Fatal("screen not refreshed after events")
	}
	f.clock.Add(90 * time.Second)
	m.Update(tickMsg(f.clock.Now()))
	if !strings.Contains(screen(m), "rebooting 1m30s") {
		t.Fatalf("tick did not advance the time in phase:\n%s", screen(m))
	}
	close(ch)
	m.Update(waitEvents(ch)())
	if !strings.Contains(screen(m), "[stream closed]") {
		t.Fatal("closed stream not shown")
	}
}

func TestQuit(t *testing.T) {
	m := newFixture().model(Options{})
	size(m, 100, 30)
	for _, k := range []string{"q", "ctrl+c"} {
		cmd := press(m, k)
		if cmd == nil {
			t.Fatalf("%s: no command", k)
		}
		if _, ok := cmd().(tea.QuitMsg); !ok {
			t.Fatalf("%s did not quit", k)
		}
	}
}

func newTestDialog(p lock.Plan) *dialogT { return dialogNew(p, t0, false, true) }

// TestFrozenClusterClockKeepsTheDialogUsable: with the demo frozen
// (--speed 0) the cluster clock never moves; the dialog's ignore window and
// toasts run on the wall clock, so keys are accepted after 400ms of it.
func TestFrozenClusterClockKeepsTheDialogUsable(t *testing.T) {
	f := newFixture()
	frozen := f.clock.Now()
	wall := &clock{now: frozen}
	m := New(Options{Cluster: f.c, Clock: func() time.Time { return frozen }, WallClock: wall.Now, Actions: f.actions})
	size(m, 100, 30)
	press(m, "r")
	press(m, "esc")
	if m.dialog == nil {
		t.Fatal("esc within the ignore window closed the dialog")
	}
	wall.Add(500 * time.Millisecond)
	press(m, "esc")
	if m.dialog != nil {
		t.Fatal("with a frozen cluster clock the dialog never accepts keys")
	}
	if m.toast == nil {
		t.Fatal("no toast")
	}
	wall.Add(7 * time.Second)
	m.Update(tickMsg(wall.Now()))
	if m.toast != nil {
		t.Fatal("toast did not expire on the wall clock")
	}
}

func TestLockDetail(t *testing.T) {
	f := newFixture()
	m := f.model(Options{})
	size(m, 100, 30)
	press(m, "tab", "enter")
	s := screen(m)
	for _, want := range []string{"Lock fleetlock:default/fleetlock-default", ghostID + " (matches no node)", "holder matches no current node", "Evidence", "x reap"} {
		if !strings.Contains(s, want) {
			t.Errorf("lock detail lacks %q:\n%s", want, s)
		}
	}
	// r/x from the lock detail act on that lock.
	openAfterIgnore(t, f, m, "x")
	if m.dialog.Plan.Status.Kind != model.LockFleetlock {
		t.Fatalf("x in the lock detail planned on %s", m.dialog.Plan.Status.LockRef)
	}
	press(m, "esc", "esc")
	if m.mode != modeMain {
		t.Fatal("esc should leave the detail")
	}
}

// What is written is what the operator saw: when a gate changes while the
// dialog is open (another node starts its cycle), confirming reopens the
// dialog on the new gates instead of acting on the old ones.
func TestConfirmReplansOnTheClusterAsItIsNow(t *testing.T) {
	f := newFixture()
	m := f.model(Options{})
	size(m, 100, 30)
	press(m, "tab")
	openAfterIgnore(t, f, m, "x")
	if !m.dialog.Plan.Allowed {
		t.Fatal("the reap should be allowed when the dialog opens")
	}
	f.actions.failGate = lock.GateOtherNodes // the cluster changed meanwhile
	if cmd := press(m, "y"); cmd != nil {
		t.Fatal("confirm ran the stale plan")
	}
	if m.dialog == nil || m.dialog.Plan.Allowed || len(f.actions.calls) != 0 {
		t.Fatalf("dialog %+v, calls %d: want it reopened on the refused plan, nothing run", m.dialog, len(f.actions.calls))
	}
	if s := screen(m); !strings.Contains(s, "review the gates again") || !strings.Contains(s, "✗ other-nodes") {
		t.Fatalf("no notice of the change:\n%s", s)
	}
	// The same happens on a tick while the dialog just sits open.
	f.actions.failGate = ""
	m.Update(tickMsg{})
	if m.dialog == nil || !m.dialog.Plan.Allowed {
		t.Fatal("an open dialog should follow the cluster on every tick")
	}
}

// Issue 10 §2: w-03 reboots and its lock goes away while it stays cordoned
// (as fleetlock leaves a holder whose Lease someone else freed): the node
// list shows it done · still cordoned, and u opens the uncordon dialog with
// both the gates and the write; on any other node u does nothing but say why.
func TestUncordonStillCordonedNode(t *testing.T) {
	f := newFixture()
	m := f.model(Options{})
	size(m, 120, 34)
	kured := model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured"}
	n, _ := f.c.Node("w-03")
	up := *n
	up.BootID = "boot-b-w-03"
	up.Conditions = ready("True", t0)
	m.Update(eventsMsg{model.NodeUpserted{Node: up}})
	m.Update(eventsMsg{model.LockUpserted{Lock: model.LockObject{LockRef: kured, UID: "ds-uid", ResourceVersion: "2000"}}})
	if !f.c.StillCordoned("w-03") {
		t.Fatalf("w-03: phase %s, not still cordoned", f.c.Phase("w-03"))
	}
	if s := screen(m); !strings.Contains(s, "done · cordoned") && !strings.Contains(s, "done · still cordoned") {
		t.Fatalf("node list does not say done · still cordoned:\n%s", s)
	}
	// On a node that is not done · still cordoned: a toast, no dialog.
	if r, _ := m.table.Selected(); r.Name == "w-03" {
		t.Fatal("cursor starts on w-03")
	}
	press(m, "u")
	if m.dialog != nil || !strings.Contains(screen(m), "select one in the node list") {
		t.Fatalf("u on another node opened %v:\n%s", m.dialog, screen(m))
	}
	for i := 0; i < 20; i++ {
		if r, _ := m.table.Selected(); r.Name == "w-03" {
			break
		}
		press(m, "j")
	}
	openAfterIgnore(t, f, m, "u")
	s := screen(m)
	for _, want := range []string{"Uncordon node?", "w-03", "✓ node", "set spec.unschedulable true → false"} {
		if !strings.Contains(s, want) {
			t.Errorf("dialog lacks %q:\n%s", want, s)
		}
	}
}

// r or x on a node that holds no lock does nothing and says why: it never
// opens a dialog for some other lock (issue 11 §4).
func TestReleaseOnANodeWithoutLockSaysWhy(t *testing.T) {
	f := newFixture()
	m := f.model(Options{})
	size(m, 120, 40)
	holders := map[string]bool{}
	for _, s := range m.c.LockStatuses() {
		holders[s.HolderNode()] = true
		holders[s.Holder] = true
	}
	// Move the cursor to a node that holds no lock.
	for i := 0; i < 20; i++ {
		if r, ok := m.table.Selected(); ok && !holders[r.Name] {
			break
		}
		press(m, "down")
	}
	r, ok := m.table.Selected()
	if !ok || holders[r.Name] {
		t.Fatalf("no lock-free node selected:\n%s", screen(m))
	}
	for _, k := range []string{"r", "x"} {
		press(m, k)
		if m.dialog != nil {
			t.Fatalf("%s on %s (no lock) opened a dialog for %s", k, r.Name, m.dialog.Plan.Status.LockRef)
		}
		if s := screen(m); !strings.Contains(s, "node "+r.Name+" holds no lock") {
			t.Fatalf("%s on %s does not say why:\n%s", k, r.Name, s)
		}
	}
	if len(f.actions.calls) != 0 {
		t.Fatal("an action ran")
	}
}

// Esc pressed twice quickly arrives as alt+esc: it closes the filter (the
// next q is not typed into it) and cancels a dialog, like esc.
func TestAltEscActsAsEsc(t *testing.T) {
	f := newFixture()
	m := f.model(Options{})
	size(m, 120, 40)
	altEsc := tea.KeyPressMsg{Code: tea.KeyEscape, Mod: tea.ModAlt}
	if altEsc.String() != "alt+esc" {
		t.Fatalf("the key reads %q", altEsc.String())
	}
	press(m, "/", "w")
	if !m.filtering {
		t.Fatal("/ did not open the filter")
	}
	m.Update(altEsc)
	if m.filtering || m.table.Filter != "" {
		t.Fatalf("alt+esc left the filter open (%q)", m.table.Filter)
	}
	press(m, "tab")
	openAfterIgnore(t, f, m, "x")
	m.Update(altEsc)
	if m.dialog != nil {
		t.Fatal("alt+esc did not cancel the dialog")
	}
	if len(f.actions.calls) != 0 {
		t.Fatal("an action ran")
	}
}

// The selected lock and the open lock detail follow the lock's identity,
// not its row: a new Lease sorting before it does not switch them (and x)
// to the new lock; when the lock disappears the detail says so and x acts
// on nothing (issue 11 §4).
func TestLockSelectionFollowsIdentity(t *testing.T) {
	f := newFixture()
	m := f.model(Options{})
	size(m, 140, 44)
	press(m, "tab")
	first := m.c.LockStatuses()[0]
	press(m, "enter")
	if m.mode != modeDetail || !m.detailIsLock {
		t.Fatal("enter did not open the lock detail")
	}
	title := first.LockRef.String()
	// A new Lease arrives and sorts first.
	newRef := model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-aaa"}
	m.Update(eventsMsg{model.LockUpserted{Lock: model.LockObject{LockRef: newRef, UID: "aaa-uid", ResourceVersion: "1",
		Spec: &fixSpec{kind: model.LockFleetlock, holder: "someone-else", at: t0}}}})
	if sts := m.c.LockStatuses(); lockIndex(sts, keyOf(first)) == 0 {
		t.Fatalf("the new Lease did not sort first: %v", sts)
	}
	if s := screen(m); !strings.Contains(s, "Lock "+title) {
		t.Fatalf("the detail switched away from %s:\n%s", title, s)
	}
	openAfterIgnore(t, f, m, "x")
	if got := m.dialog.Plan.Status.LockRef; got != first.LockRef {
		t.Fatalf("x in the detail targets %s, want %s", got, first.LockRef)
	}
	press(m, "esc")
	// The selection in the locks panel follows it too.
	press(m, "esc")
	if m.mode != modeMain {
		t.Fatal("esc did not leave the detail")
	}
	if got := m.c.LockStatuses()[m.lockSel].LockRef; got != first.LockRef {
		t.Fatalf("the locks panel selects %s, want %s", got, first.LockRef)
	}
	// The lock disappears: the detail says so, and x acts on nothing.
	press(m, "enter")
	m.Update(eventsMsg{model.LockDeleted{Ref: first.LockRef}})
	if s := screen(m); !strings.Contains(s, "the lock is gone") {
		t.Fatalf("the detail does not say the lock is gone:\n%s", s)
	}
	press(m, "x")
	if m.dialog != nil {
		t.Fatalf("x on a gone lock opened a dialog for %s", m.dialog.Plan.Status.LockRef)
	}
	if s := screen(m); !strings.Contains(s, "the lock shown is gone: nothing to reap") {
		t.Fatalf("x does not say why nothing happens:\n%s", s)
	}
	press(m, "esc")
	press(m, "x")
	if m.dialog != nil {
		t.Fatalf("x on the gone selection opened a dialog for %s", m.dialog.Plan.Status.LockRef)
	}
	if len(f.actions.calls) != 0 {
		t.Fatal("an action ran")
	}
}

// The operator's own reap frees the selected lock: when the Lease update
// (holder cleared) arrives, that is the action's effect, not a lock gone
// from under the operator. The done toast stays and the selection follows
// the Lease to its free row.
func TestOwnReapKeepsItsToastWhenTheLockUpdateArrives(t *testing.T) {
	f := newFixture()
	m := f.model(Options{})
	size(m, 140, 44)
	press(m, "tab") // locks panel: the ghost lease is first
	ghost := m.c.LockStatuses()[m.lockSel]
	openAfterIgnore(t, f, m, "x")
	f.actions.result = lock.Result{Outcome: model.OutcomeDone, Message: "lease holder cleared"}
	cmd := press(m, "y")
	if cmd == nil {
		t.Fatal("confirm returned no command")
	}
	m.Update(cmd())
	m.Update(eventsMsg{model.LockUpserted{Lock: model.LockObject{LockRef: ghost.LockRef, UID: "lease-uid", ResourceVersion: "8",
		Spec: &fixSpec{kind: model.LockFleetlock, holder: ""}}}})
	s := screen(m)
	if strings.Contains(s, "is gone") {
		t.Fatalf("the reap's own effect was reported as a lock gone:\n%s", s)
	}
	if !strings.Contains(s, "reap fleetlock:default/fleetlock-default: done") {
		t.Fatalf("the done toast was replaced:\n%s", s)
	}
	sts := m.c.LockStatuses()
	if m.lockSelGone || sts[m.lockSel].LockRef != ghost.LockRef || sts[m.lockSel].Holder != "" {
		t.Fatalf("selection = %+v (gone %v), want the freed %s", sts[m.lockSel], m.lockSelGone, ghost.LockRef)
	}
}
