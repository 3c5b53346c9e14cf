package tui

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/themes"
	"github.com/rebootwatch/rebootwatch/tui/dialog"
	"github.com/rebootwatch/rebootwatch/tui/nodes"
	"github.com/rebootwatch/rebootwatch/tui/pctx"
	"github.com/rebootwatch/rebootwatch/tui/toast"
)

// Actions plans and performs lock actions. *lock.Engine plus *lock.Actor
// satisfy it through LockActions; tests use fakes.
type Actions interface {
	// Plan is pure: it judges the cluster and must not do I/O. entry is
	// the holder's entry position (model.LockStatus.Entry): a kured
	// multi-lock may list one holder more than once.
	Plan(c *model.Cluster, ref model.LockRef, holder string, entry int, a model.Action, now time.Time) (lock.Plan, error)
	// PlanUncordon plans the uncordon of a node that is done · still
	// cordoned; pure like Plan.
	PlanUncordon(c *model.Cluster, node string, now time.Time) (lock.Plan, error)
	// Do performs the plan's write; it runs in a command, never in Update.
	Do(ctx context.Context, p lock.Plan, o lock.DoOptions) lock.Result
}

// LockActions adapts the lock engine and an actor to Actions.
type LockActions struct {
	Engine *lock.Engine
	Actor  *lock.Actor
}

// Plan implements Actions.
func (a LockActions) Plan(c *model.Cluster, ref model.LockRef, holder string, entry int, act model.Action, now time.Time) (lock.Plan, error) {
	return a.Engine.PlanEntry(c, ref, holder, entry, act, now)
}

// PlanUncordon implements Actions.
func (a LockActions) PlanUncordon(c *model.Cluster, node string, now time.Time) (lock.Plan, error) {
	return a.Engine.PlanUncordon(c, node, now)
}

// LeftCordoned implements CoordinatorCordons.
func (a LockActions) LeftCordoned(node string) bool {
	_, ok := a.Engine.LeftCordoned(node)
	return ok
}

// CoordinatorCordons is what Actions may also say: whether a coordinator
// kind of internal/coord (system-upgrade-controller, the Flatcar update
// operator) left a node cordoned, so its uncordon is offered (behind the
// same gates and dialog) though the model's phases know nothing of it.
type CoordinatorCordons interface {
	LeftCordoned(node string) bool
}

// Do implements Actions.
func (a LockActions) Do(ctx context.Context, p lock.Plan, o lock.DoOptions) lock.Result {
	return a.Actor.Do(ctx, p, o)
}

// Options configure the dashboard.
type Options struct {
	// Cluster is the state the dashboard shows and applies events to; its
	// Judge must be wired (live.Session.NewCluster does).
	Cluster *model.Cluster
	// Events are the sources' events; nil for a static cluster.
	Events <-chan model.Event
	// Clock is the cluster's time: phases, ages and the timeline use it
	// (the demo's clock runs faster, or stands still with --speed 0).
	Clock func() time.Time
	// WallClock times the interface itself: the confirm dialog's ignore
	// window and toast lifetimes (default time.Now).
	WallClock func() time.Time
	// Actions plans and performs release/reap; nil hides the actions.
	Actions Actions
	// Context bounds actions; canceled when the program ends.
	Context context.Context
	// ActionTimeout bounds one action (default 30s).
	ActionTimeout time.Duration

	ReadOnly, DryRun, AllowUnsafe, Demo bool

	// Theme is the starting theme; nil means dark until the terminal's
	// background is known. FixedTheme disables background detection (the
	// operator chose a theme).
	Theme      *themes.Theme
	FixedTheme bool
	// UserTheme joins the `t` cycle after the built-ins.
	UserTheme *themes.Theme
	// NoColor forces the colourless theme (NO_COLOR).
	NoColor bool

	// Bell rings the terminal bell (a BEL written by the program, through a
	// command) when a new critical attention item appears (--bell).
	Bell bool

	// Clusters, when set, makes NewMulti open a cluster list over several
	// clusters; Cluster, Events, Clock, Actions and Demo above are then
	// taken from each entry.
	Clusters []ClusterOptions
}

type mode int

const (
	modeMain mode = iota
	modeDetail
	modeHelp
	modeTimeline // the timeline on the whole body (l), for screens that have no room for its panel
)

type focus int

const (
	focusNodes focus = iota
	focusLocks
)

// Messages.
type (
	eventsMsg       []model.Event
	streamClosedMsg struct{}
	tickMsg         time.Time
	actionDoneMsg   struct {
		plan   lock.Plan
		res    lock.Result
		unsafe bool
	}
)

// Model is the root model.
type Model struct {
	opts Options
	ctx  *pctx.Context
	c    *model.Cluster
	now  time.Time // cluster time of this update
	wall time.Time // wall time of this update (dialog, toasts)

	table nodes.Table
	focus focus
	// lockSel is the row of the selected lock, found again by its identity
	// (lockSelKey) whenever the locks change: a lock arriving or leaving
	// never moves the selection onto another lock. lockSelGone says the
	// selected lock disappeared: nothing is acted on until the operator
	// moves the cursor.
	lockSel     int
	lockSelKey  lockKey
	lockSelGone bool
	// lockFreed says this dashboard's own action freed the selected lock:
	// when its identity disappears, that is the action's effect (its toast
	// says so), not a lock gone from under the operator.
	lockFreed bool
	mode      mode

	detailNode   string
	detailLock   lockKey // the lock shown when detailIsLock
	detailIsLock bool
	detailOff    int
	timelineOff  int // entries scrolled past, newest first (modeTimeline)

	filtering   bool
	filterDraft string

	dialog *dialog.Dialog
	toast  *toast.Toast
	busy   bool

	themes      []*themes.Theme
	themeIdx    int
	themeChosen bool

	streamClosed bool
	derived      derived

	// footerKey/footerLine cache the short help line (width/theme).
	footerKey, footerLine string

	// critSeen holds the critical attention items present at the last
	// refresh (criticalKeys); bellDue is set when one appeared that was not
	// there before, and cleared by takeBell.
	critSeen map[string]bool
	bellDue  bool
	// rang counts the bells this model emitted (tests read it).
	rang int

	// inList is set when the model is one cluster of a cluster list: esc at
	// the top level goes back to the list (the header says so).
	inList bool
}

// New returns the root model.
func New(o Options) *Model {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.WallClock == nil {
		o.WallClock = time.Now
	}
	if o.Context == nil {
		o.Context = context.Background()
	}
	if o.ActionTimeout <= 0 {
		o.ActionTimeout = 30 * time.Second
	}
	if o.Cluster == nil {
		o.Cluster = model.NewCluster("", model.Options{})
	}
	if o.Actions == nil {
		o.ReadOnly = true
	}
	m := &Model{opts: o, c: o.Cluster}
	if o.NoColor {
		m.themes = []*themes.Theme{themes.NoColor()}
		m.themeChosen = true
	} else {
		for _, n := range themes.Names() {
			t, _ := themes.Builtin(n)
			m.themes = append(m.themes, t)
		}
		if o.UserTheme != nil {
			m.themes = append(m.themes, o.UserTheme)
		}
	}
	start := m.themes[0]
	if o.Theme != nil && !o.NoColor {
		start = o.Theme
		m.themeIdx = -1
		for i, t := range m.themes {
			if t.Name == o.Theme.Name {
				m.themeIdx = i
			}
		}
		if m.themeIdx < 0 {
			m.themes = append(m.themes, o.Theme)
			m.themeIdx = len(m.themes) - 1
		}
	}
	m.themeChosen = m.themeChosen || o.FixedTheme
	m.ctx = pctx.New(start, o.ReadOnly, o.DryRun, o.AllowUnsafe)
	m.ctx.Demo = o.Demo
	m.now = o.Clock()
	m.wall = o.WallClock()
	m.ctx.Now = m.now
	m.c.Recompute(m.now)
	m.refresh()
	return m
}

// Init starts waiting for events, the tick and the background query; with
// --bell it rings for critical items already present.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{tick()}
	if m.opts.Events != nil {
		cmds = append(cmds, waitEvents(m.opts.Events))
	}
	if !m.themeChosen {
		cmds = append(cmds, tea.RequestBackgroundColor)
	}
	return tea.Batch(append(cmds, m.bell())...) // the bell last: see Update
}

func tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// maxBatch bounds how many queued events one message carries.
const maxBatch = 1024

// waitEvents blocks (in its command goroutine) for the next event, then
// takes whatever else is already queued so a burst costs one recompute.
func waitEvents(ch <-chan model.Event) tea.Cmd {
	return func() tea.Msg {
		ev, ok := <-ch
		if !ok {
			return streamClosedMsg{}
		}
		batch := eventsMsg{ev}
		for len(batch) < maxBatch {
			select {
			case ev, ok := <-ch:
				if !ok {
					return batch
				}
				batch = append(batch, ev)
			default:
				return batch
			}
		}
		return batch
	}
}

// Update applies one message. It never blocks and does no I/O. When a new
// critical item calls for the bell, the bell's command comes last in the
// returned batch.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := m.update(msg)
	if b := m.bell(); b != nil {
		return m, tea.Batch(cmd, b)
	}
	return m, cmd
}

// bellMsg asks the root model to ring the terminal's bell.
type bellMsg struct{}

// ringBell is the bell's command: an ordinary message, which the root model
// (Model alone, or Multi) turns into BEL on the program's output.
func ringBell() tea.Msg { return bellMsg{} }

// bellOut writes BEL to the terminal through the program's output.
func bellOut() tea.Cmd { return tea.Raw("\a") }

// bell returns the bell command when --bell is on and a new critical item
// appeared since the last call, else nil.
func (m *Model) bell() tea.Cmd {
	// Without --bell the due flag is left alone: a cluster list over this
	// model takes it and rings once for all its clusters.
	if !m.opts.Bell || !m.takeBell() {
		return nil
	}
	m.rang++
	return ringBell
}

// takeBell reports (once) whether a new critical item appeared.
func (m *Model) takeBell() bool {
	due := m.bellDue
	m.bellDue = false
	return due
}

// criticalKeys names the critical attention items by their keys (what
// they are about, not their text, which carries ages that change every
// second).
func criticalKeys(att []model.Attention) map[string]bool {
	var keys map[string]bool
	for _, a := range att {
		if a.Severity == model.SeverityCritical {
			if keys == nil {
				keys = map[string]bool{}
			}
			keys[a.Key] = true
		}
	}
	return keys
}

// noteCriticals records the critical items and marks the bell due when one
// is new.
func (m *Model) noteCriticals() {
	keys := criticalKeys(m.derived.attention)
	for k := range keys {
		if !m.critSeen[k] {
			m.bellDue = true
		}
	}
	m.critSeen = keys
}

func (m *Model) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m.now = m.opts.Clock()
	m.wall = m.opts.WallClock()
	m.ctx.Now = m.now
	switch msg := msg.(type) {
	case bellMsg:
		return m, bellOut()
	case tea.WindowSizeMsg:
		m.ctx.Width, m.ctx.Height = msg.Width, msg.Height
		m.ctx.Help.SetWidth(msg.Width)
		m.scroll()
		return m, nil
	case tea.BackgroundColorMsg:
		if !m.themeChosen {
			name := themes.NameDark
			if !msg.IsDark() {
				name = themes.NameLight
			}
			m.setThemeByName(name)
		}
		return m, nil
	case eventsMsg:
		for _, ev := range msg {
			m.c.Apply(ev, m.now)
		}
		m.c.Recompute(m.now)
		m.refresh()
		m.replanDialog()
		return m, waitEvents(m.opts.Events)
	case streamClosedMsg:
		m.streamClosed = true
		m.toast = toast.New("the event stream closed: the screen no longer updates", toast.Error, m.wall)
		return m, nil
	case tickMsg:
		m.c.Recompute(m.now)
		m.refresh()
		m.replanDialog()
		if m.toast.Expired(m.wall) && !m.busy {
			m.toast = nil
		}
		return m, tick()
	case actionDoneMsg:
		m.busy = false
		rec := msg.res.Recorded(msg.plan)
		if msg.unsafe && msg.res.Outcome == model.OutcomeDone {
			rec.Message = "UNSAFE override of failed gates; " + rec.Message
		}
		if msg.res.Outcome == model.OutcomeDone && msg.plan.Action != model.ActionUncordon && keyOf(msg.plan.Status) == m.lockSelKey {
			m.lockFreed = true
		}
		m.c.Apply(rec, m.now)
		m.c.Recompute(m.now)
		m.refresh()
		subject := msg.plan.Status.LockRef.String()
		if msg.plan.Action == model.ActionUncordon {
			subject = model.ActionSubject(msg.plan.Action, msg.plan.Status.LockRef, msg.plan.Status.Holder)
		}
		text := fmt.Sprintf("%s %s: %s", msg.plan.Action, subject, msg.res.Outcome)
		if msg.res.Message != "" {
			text += " — " + msg.res.Message
		}
		m.toast = toast.New(text, toast.ForOutcome(msg.res.Outcome), m.wall)
		return m, nil
	case tea.KeyPressMsg:
		return m, m.key(msg)
	case tea.PasteMsg:
		m.paste(msg)
		return m, nil
	}
	return m, nil
}

func (m *Model) setThemeByName(name string) {
	for i, t := range m.themes {
		if t.Name == name {
			m.themeIdx = i
			m.ctx.SetTheme(t)
			return
		}
	}
}

// Theme returns the current theme's name.
func (m *Model) Theme() string { return m.ctx.Theme.Name }

func (m *Model) key(msg tea.KeyPressMsg) tea.Cmd {
	k := m.ctx.Keys
	s := msg.String()
	if s == "ctrl+c" {
		return tea.Quit
	}
	if m.dialog != nil {
		return m.dialogKey(msg)
	}
	if m.filtering {
		m.filterKey(msg)
		return nil
	}
	if m.mode == modeHelp {
		if key.Matches(msg, k.Help, k.Back) {
			m.mode = modeMain
		} else if key.Matches(msg, k.Quit) {
			return tea.Quit
		}
		return nil
	}
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Help):
		m.mode = modeHelp
	case m.mode == modeTimeline:
		switch {
		case key.Matches(msg, k.Back, k.Timeline):
			m.mode = modeMain
		case key.Matches(msg, k.Down):
			if g := m.geometry(); !g.small {
				m.timelineOff = min(m.timelineOff+1, max(len(m.c.Timeline())-(g.bodyH-2), 0))
			}
		case key.Matches(msg, k.Up):
			m.timelineOff = max(m.timelineOff-1, 0)
		case key.Matches(msg, k.Top):
			m.timelineOff = 0
		case key.Matches(msg, k.Theme):
			m.nextTheme()
		}
	case key.Matches(msg, k.Timeline):
		m.mode, m.timelineOff = modeTimeline, 0
	case key.Matches(msg, k.Theme):
		m.nextTheme()
	case key.Matches(msg, k.Release):
		m.openDialog(model.ActionRelease)
	case key.Matches(msg, k.Reap):
		m.openDialog(model.ActionReap)
	case key.Matches(msg, k.Uncordon):
		m.openUncordon()
	case m.mode == modeDetail:
		switch {
		case key.Matches(msg, k.Back):
			m.mode = modeMain
		case key.Matches(msg, k.Down):
			// Stop where the last line is at the bottom of the box.
			n := len(m.detailLines(m.ctx.Width))
			if g := m.geometry(); !g.small {
				m.detailOff = min(m.detailOff+1, max(n-(g.bodyH-2), 0))
			}
		case key.Matches(msg, k.Up):
			m.detailOff = max(m.detailOff-1, 0)
		case key.Matches(msg, k.Top):
			m.detailOff = 0
		}
	case key.Matches(msg, k.Focus):
		if m.focus == focusNodes && len(m.c.LockStatuses()) > 0 {
			m.focus = focusLocks
			if m.lockSelGone {
				m.selectLock(m.lockSel) // entering the panel is a fresh, visible choice
			}
		} else {
			m.focus = focusNodes
		}
	case key.Matches(msg, k.Filter):
		m.filtering = true
		m.filterDraft = m.table.Filter
		m.focus = focusNodes
	case key.Matches(msg, k.Sort):
		m.table.CycleSort(m.now)
	case key.Matches(msg, k.Back):
		if m.table.Filter != "" {
			m.table.SetFilter("", m.now)
		}
		m.focus = focusNodes
	case key.Matches(msg, k.Detail):
		if m.focus == focusLocks {
			if sts := m.c.LockStatuses(); m.lockSel < len(sts) && !m.lockSelGone {
				m.mode = modeDetail
				m.detailIsLock, m.detailLock, m.detailOff = true, keyOf(sts[m.lockSel]), 0
			}
			break
		}
		if r, ok := m.table.Selected(); ok {
			m.mode = modeDetail
			m.detailIsLock = false
			m.detailNode = r.Name
			m.detailOff = 0
		}
	case key.Matches(msg, k.Up):
		m.move(-1)
	case key.Matches(msg, k.Down):
		m.move(1)
	case key.Matches(msg, k.PageUp):
		m.move(-max(m.tableRows(), 1))
	case key.Matches(msg, k.PageDown):
		m.move(max(m.tableRows(), 1))
	case key.Matches(msg, k.Top):
		if m.focus == focusLocks {
			m.selectLock(0)
		} else {
			m.table.Top()
		}
	case key.Matches(msg, k.Bottom):
		if m.focus == focusLocks {
			m.selectLock(len(m.c.LockStatuses()) - 1)
		} else {
			m.table.Bottom()
		}
	}
	m.scroll()
	return nil
}

func (m *Model) move(d int) {
	if m.focus == focusLocks {
		m.selectLock(m.lockSel + d)
		return
	}
	m.table.Move(d)
}

// MaxFilter is the most runes the filter holds: node names, phases and
// roles are short, and a longer filter (a stray paste) would only cost time.
const MaxFilter = 200

// addFilter appends typed or pasted text to the filter, up to MaxFilter
// runes; line breaks, tabs and other controls become spaces (word breaks).
func (m *Model) addFilter(s string) {
	n := utf8.RuneCountInString(m.filterDraft)
	if n >= MaxFilter || s == "" {
		return
	}
	var b strings.Builder
	b.WriteString(m.filterDraft)
	for _, r := range s {
		if n >= MaxFilter {
			break
		}
		if unicode.IsControl(r) || !unicode.IsPrint(r) && r != ' ' {
			r = ' '
		}
		b.WriteRune(r)
		n++
	}
	m.filterDraft = b.String()
	m.table.SetFilter(m.filterDraft, m.now)
}

// paste handles a bracketed paste: into the filter when it is open;
// anywhere else it is ignored (a paste is never a command).
func (m *Model) paste(msg tea.PasteMsg) {
	if !m.filtering || m.dialog != nil {
		return
	}
	m.addFilter(msg.Content)
	m.table.Top()
	m.scroll()
}

func (m *Model) filterKey(msg tea.KeyPressMsg) {
	switch escAsEsc(msg.String()) {
	case "enter":
		m.filtering = false
	case "esc":
		m.filtering = false
		m.filterDraft = ""
		m.table.SetFilter("", m.now)
	case "backspace":
		if m.filterDraft != "" {
			_, size := utf8.DecodeLastRuneInString(m.filterDraft)
			m.filterDraft = m.filterDraft[:len(m.filterDraft)-size]
			m.table.SetFilter(m.filterDraft, m.now)
		}
	case "ctrl+u":
		m.filterDraft = ""
		m.table.SetFilter("", m.now)
	default:
		m.addFilter(msg.Text)
	}
	m.table.Top()
	m.scroll()
}

func (m *Model) nextTheme() {
	if len(m.themes) == 1 {
		m.toast = toast.New("NO_COLOR is set: colours are off", toast.Info, m.wall)
		return
	}
	m.themeIdx = (m.themeIdx + 1) % len(m.themes)
	m.themeChosen = true
	m.ctx.SetTheme(m.themes[m.themeIdx])
	m.toast = toast.New("theme: "+m.ctx.Theme.Name, toast.Info, m.wall)
}

// target picks the lock an action applies to: the selected lock when the
// locks panel has the focus, else the lock the selected node holds, else the
// first lock the engine would allow the action on, else the first lock that
// needs attention.
func (m *Model) target(a model.Action) (model.LockStatus, bool) {
	sts := m.c.LockStatuses()
	if m.mode == modeDetail && m.detailIsLock {
		i := lockIndex(sts, m.detailLock)
		if i < 0 {
			return model.LockStatus{}, false // the lock shown is gone
		}
		return sts[i], sts[i].Holder != ""
	}
	if m.focus == focusLocks {
		if m.lockSelGone || m.lockSel >= len(sts) {
			return model.LockStatus{}, false
		}
		return sts[m.lockSel], sts[m.lockSel].Holder != ""
	}
	name := ""
	if m.mode == modeDetail {
		name = m.detailNode
	} else if r, ok := m.table.Selected(); ok {
		name = r.Name
	}
	if name != "" {
		for _, s := range sts {
			if s.Holder != "" && (s.HolderNode() == name || s.Holder == name) {
				return s, true
			}
		}
		// The operator chose this node: never act on some other lock.
		return model.LockStatus{Holder: name}, false
	}
	for _, s := range sts {
		for _, x := range s.Actions {
			if x == a && s.Holder != "" {
				return s, true
			}
		}
	}
	for _, s := range sts {
		if s.Holder != "" && s.Verdict.NeedsAttention() {
			return s, true
		}
	}
	return model.LockStatus{}, false
}

// lockKey is a lock row's identity: kind, object, holder and, for a
// holder a kured multi-lock lists twice, the entry.
type lockKey struct {
	ref    model.LockRef
	holder string
	entry  int
}

func keyOf(s model.LockStatus) lockKey { return lockKey{s.LockRef, s.Holder, s.Entry} }

// lockIndex finds a lock row by identity (-1 when gone).
func lockIndex(sts []model.LockStatus, k lockKey) int {
	for i := range sts {
		if keyOf(sts[i]) == k {
			return i
		}
	}
	return -1
}

// selectLock moves the lock cursor to row i (clamped): the operator chose it.
func (m *Model) selectLock(i int) {
	sts := m.c.LockStatuses()
	m.lockSel = max(0, min(i, len(sts)-1))
	m.lockSelGone = false
	m.lockFreed = false
	if m.lockSel < len(sts) {
		m.lockSelKey = keyOf(sts[m.lockSel])
	}
}

// followLocks finds the selected lock again after the locks changed; when
// it is gone it says so once and leaves nothing selected to act on.
func (m *Model) followLocks() {
	sts := m.c.LockStatuses()
	if m.lockSelKey == (lockKey{}) {
		m.selectLock(m.lockSel)
		return
	}
	if i := lockIndex(sts, m.lockSelKey); i >= 0 {
		m.lockSel = i
		return
	}
	if m.lockFreed {
		// The operator's own release or reap freed it: follow the object
		// to its free row when it shows one (never to another holder's
		// entry), silently; the action's toast says what happened.
		if i := lockIndex(sts, lockKey{ref: m.lockSelKey.ref}); i >= 0 {
			m.selectLock(i)
			return
		}
		m.lockSelGone = true
	}
	m.lockSel = max(0, min(m.lockSel, len(sts)-1))
	if !m.lockSelGone && m.focus == focusLocks {
		m.toast = toast.New(fmt.Sprintf("the selected lock %s (holder %s) is gone: nothing is selected to act on",
			sanitize.Short(m.lockSelKey.ref.String(), 80), sanitize.Short(orDash(m.lockSelKey.holder), 80)), toast.Warn, m.wall)
	}
	m.lockSelGone = true
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func (m *Model) openDialog(a model.Action) {
	if m.opts.ReadOnly || m.opts.Actions == nil {
		return
	}
	if m.busy {
		m.toast = toast.New("an action is still running", toast.Warn, m.wall)
		return
	}
	s, ok := m.target(a)
	if !ok && m.mode == modeDetail && m.detailIsLock {
		m.toast = toast.New(fmt.Sprintf("the lock shown is gone: nothing to %s", a), toast.Warn, m.wall)
		return
	}
	if !ok && m.mode != modeDetail && m.focus == focusLocks && m.lockSelGone {
		m.toast = toast.New(fmt.Sprintf("the selected lock is gone: nothing to %s (select a lock)", a), toast.Warn, m.wall)
		return
	}
	if !ok {
		msg := fmt.Sprintf("no held lock to %s (tab selects a lock)", a)
		if s.Holder != "" {
			msg = fmt.Sprintf("node %s holds no lock: nothing to %s (tab selects a lock)", sanitize.Short(s.Holder, 80), a)
		}
		m.toast = toast.New(msg, toast.Warn, m.wall)
		return
	}
	p, err := m.opts.Actions.Plan(m.c, s.LockRef, s.Holder, s.Entry, a, m.now)
	if err != nil {
		m.toast = toast.New(fmt.Sprintf("cannot plan %s: %v", a, err), toast.Error, m.wall)
		return
	}
	m.dialog = dialog.New(p, m.wall, m.opts.DryRun, m.opts.AllowUnsafe)
}

// uncordonTarget is the node under the cursor (or in the detail), and
// whether its uncordon is offered: it is done · still cordoned, or a
// coordinator kind left it cordoned (its own cordon).
func (m *Model) uncordonTarget() (string, bool) {
	if m.opts.ReadOnly || m.opts.Actions == nil {
		return "", false
	}
	name := ""
	if m.mode == modeDetail && !m.detailIsLock {
		name = m.detailNode
	} else if r, ok := m.table.Selected(); ok && m.focus != focusLocks {
		name = r.Name
	}
	if name == "" {
		return "", false
	}
	if m.c.StillCordoned(name) {
		return name, true
	}
	if cc, ok := m.opts.Actions.(CoordinatorCordons); ok && cc.LeftCordoned(name) {
		return name, true
	}
	return name, false
}

// openUncordon opens the uncordon dialog for the node under the cursor (or
// in the detail) when it is done · still cordoned; otherwise it says why not.
func (m *Model) openUncordon() {
	if m.opts.ReadOnly || m.opts.Actions == nil {
		return
	}
	if m.busy {
		m.toast = toast.New("an action is still running", toast.Warn, m.wall)
		return
	}
	name, offered := m.uncordonTarget()
	if !offered {
		m.toast = toast.New("u uncordons a node that is done · still cordoned or that its coordinator left cordoned: select one in the node list", toast.Warn, m.wall)
		return
	}
	p, err := m.opts.Actions.PlanUncordon(m.c, name, m.now)
	if err != nil {
		m.toast = toast.New(fmt.Sprintf("cannot plan uncordon: %v", err), toast.Error, m.wall)
		return
	}
	m.dialog = dialog.New(p, m.wall, m.opts.DryRun, m.opts.AllowUnsafe)
}

// replanDialog judges the open dialog's action again. When the verdict,
// a gate or the write changed, the dialog reopens on the new plan (No again,
// keys ignored for a moment) and it returns true. Planning is pure.
func (m *Model) replanDialog() bool {
	d := m.dialog
	if d == nil || m.opts.Actions == nil {
		return false
	}
	var p lock.Plan
	var err error
	if d.Plan.Action == model.ActionUncordon {
		p, err = m.opts.Actions.PlanUncordon(m.c, d.Plan.Status.Holder, m.now)
	} else {
		p, err = m.opts.Actions.Plan(m.c, d.Plan.Status.LockRef, d.Plan.Status.Holder, d.Plan.Status.Entry, d.Plan.Action, m.now)
	}
	if err != nil {
		m.dialog = nil
		m.toast = toast.New(fmt.Sprintf("%s: the lock changed (%v): nothing written", d.Plan.Action, err), toast.Warn, m.wall)
		return true
	}
	if p.SameDecision(d.Plan) {
		return false
	}
	m.dialog = dialog.New(p, m.wall, m.opts.DryRun, m.opts.AllowUnsafe)
	m.toast = toast.New("the cluster changed while the dialog was open: review the gates again", toast.Warn, m.wall)
	return true
}

func (m *Model) dialogKey(msg tea.KeyPressMsg) tea.Cmd {
	d := m.dialog
	switch d.Key(escAsEsc(msg.String()), msg.Text, m.wall) {
	case dialog.Cancel:
		m.dialog = nil
		m.toast = toast.New(fmt.Sprintf("%s cancelled: nothing written", d.Plan.Action), toast.Info, m.wall)
	case dialog.Refused:
		m.dialog = nil
		rec := model.ActionRecorded{Lock: d.Plan.Status.LockRef, Holder: d.Plan.Status.Holder, Action: d.Plan.Action,
			Outcome: model.OutcomeRefused, Message: d.Plan.Refusal}
		m.c.Apply(rec, m.now)
		m.refresh()
		m.toast = toast.New(fmt.Sprintf("%s %s: refused — %s", d.Plan.Action, d.Plan.Status.LockRef, d.Plan.Refusal), toast.Warn, m.wall)
	case dialog.Confirm:
		// The gates are judged again on the cluster as it is now: what the
		// operator confirmed must still be what would be written.
		if m.replanDialog() {
			return nil
		}
		m.dialog = nil
		m.busy = true
		m.toast = &toast.Toast{Text: fmt.Sprintf("%s %s in progress…", d.Plan.Action, d.Plan.Status.LockRef), Kind: toast.Info, Until: m.wall.Add(time.Hour)}
		return m.run(d.Plan, d.Unsafe())
	}
	return nil
}

// escAsEsc reads alt+esc as esc: Esc pressed twice quickly reaches the
// program as ESC ESC, which is decoded as alt+esc; in the filter and in
// dialogs it must close them like esc, not be typed or ignored.
func escAsEsc(k string) string {
	if k == "alt+esc" {
		return "esc"
	}
	return k
}

// run performs an action in a command; its outcome returns as actionDoneMsg.
func (m *Model) run(p lock.Plan, unsafe bool) tea.Cmd {
	acts, parent, timeout := m.opts.Actions, m.opts.Context, m.opts.ActionTimeout
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, timeout)
		defer cancel()
		res := acts.Do(ctx, p, lock.DoOptions{AllowUnsafe: unsafe})
		return actionDoneMsg{plan: p, res: res, unsafe: unsafe}
	}
}
