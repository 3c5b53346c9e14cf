package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/themes"
	"github.com/rebootwatch/rebootwatch/tui/clusters"
	"github.com/rebootwatch/rebootwatch/tui/pctx"
	"github.com/rebootwatch/rebootwatch/tui/toast"
)

// ClusterOptions is one cluster of a cluster list (Options.Clusters).
type ClusterOptions struct {
	// Cluster is the cluster's state; for a cluster that could not be
	// opened, a model whose nodes source says why (multi.Unreachable).
	Cluster *model.Cluster
	// Events are its sources' events; nil when it could not be opened.
	Events <-chan model.Event
	// Clock is its time (each demo cluster has its own).
	Clock func() time.Time
	// Actions plans and performs release/reap on it; nil hides them.
	Actions Actions
	Demo    bool
}

// clusterMsg carries a message of cluster i: its events, the end of its
// stream, or the outcome of an action started on it. Tagging keeps a hidden
// cluster's messages from reaching the one on screen.
type clusterMsg struct {
	i   int
	msg tea.Msg
}

// Multi is the root model over several clusters: a cluster list (one row per
// cluster) and, on enter, that cluster's full dashboard — a Model per
// cluster, kept live while hidden. esc at a dashboard's top level returns to
// the list.
type Multi struct {
	opts   Options
	kids   []*Model
	active int // index of the dashboard on screen; -1 is the list
	list   clusters.List
	ctx    *pctx.Context
	toast  *toast.Toast
	wall   time.Time
	rang   int
}

// NewMulti returns the root model of a cluster list over o.Clusters. Every
// other option applies to each cluster's dashboard.
func NewMulti(o Options) *Multi {
	if o.WallClock == nil {
		o.WallClock = time.Now
	}
	mm := &Multi{opts: o, active: -1}
	for _, c := range o.Clusters {
		co := o
		co.Clusters = nil
		co.Bell = false // the list rings, once for all clusters
		co.Cluster, co.Events, co.Clock, co.Actions, co.Demo = c.Cluster, c.Events, c.Clock, c.Actions, c.Demo
		k := New(co)
		k.inList = true
		mm.kids = append(mm.kids, k)
	}
	demo := len(mm.kids) > 0
	for _, k := range mm.kids {
		demo = demo && k.opts.Demo
	}
	mm.ctx = pctx.New(themeOf(mm.kids), o.ReadOnly, o.DryRun, o.AllowUnsafe)
	mm.ctx.Demo = demo
	mm.wall = o.WallClock()
	mm.rows()
	return mm
}

func themeOf(kids []*Model) *themes.Theme {
	if len(kids) == 0 {
		return nil
	}
	return kids[0].ctx.Theme
}

// Init waits for every cluster's events (one command per cluster, tagged
// with its index), starts the tick, asks for the background colour, and
// rings for critical items already present.
func (mm *Multi) Init() tea.Cmd {
	cmds := []tea.Cmd{tick()}
	for i, k := range mm.kids {
		if k.opts.Events != nil {
			cmds = append(cmds, waitCluster(i, k.opts.Events))
		}
	}
	if len(mm.kids) > 0 && !mm.kids[0].themeChosen {
		cmds = append(cmds, tea.RequestBackgroundColor)
	}
	return tea.Batch(append(cmds, mm.bell())...) // the bell last: see Model.Update
}

// waitCluster waits for cluster i's next events.
func waitCluster(i int, ch <-chan model.Event) tea.Cmd {
	w := waitEvents(ch)
	return func() tea.Msg { return clusterMsg{i: i, msg: w()} }
}

// tag makes the messages of cluster i's commands come back to it: an
// action's outcome is tagged with i; program messages (quit, the bell,
// batches) pass through.
func tag(i int, cmd tea.Cmd) tea.Cmd {
	if cmd == nil {
		return nil
	}
	return func() tea.Msg {
		switch msg := cmd().(type) {
		case tea.BatchMsg:
			out := make(tea.BatchMsg, len(msg))
			for j, c := range msg {
				out[j] = tag(i, c)
			}
			return out
		case actionDoneMsg, eventsMsg, streamClosedMsg:
			return clusterMsg{i: i, msg: msg}
		default:
			return msg
		}
	}
}

// Active returns the context of the dashboard on screen ("" for the list).
func (mm *Multi) Active() string {
	if mm.active < 0 {
		return ""
	}
	return mm.kids[mm.active].c.Context
}

// rows re-derives the list's rows from every cluster.
func (mm *Multi) rows() {
	rows := make([]clusters.Row, len(mm.kids))
	for i, k := range mm.kids {
		rows[i] = clusters.RowOf(k.c, k.now)
	}
	mm.list.SetRows(rows)
}

// row re-derives the row of cluster i.
func (mm *Multi) row(i int) {
	if i < len(mm.list.Rows) {
		mm.list.Rows[i] = clusters.RowOf(mm.kids[i].c, mm.kids[i].now)
	}
}

// bell rings once when any cluster has a new critical item (--bell).
func (mm *Multi) bell() tea.Cmd {
	due := false
	for _, k := range mm.kids {
		if k.takeBell() {
			due = true
		}
	}
	if !due || !mm.opts.Bell {
		return nil
	}
	mm.rang++
	return ringBell
}

// Update routes one message: sizes and colours to every cluster, events and
// action outcomes to the cluster they belong to (shown or not), the tick to
// every cluster, keys to the list or the dashboard on screen. No I/O.
func (mm *Multi) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmd := mm.update(msg)
	mm.syncTheme()
	if b := mm.bell(); b != nil {
		return mm, tea.Batch(cmd, b)
	}
	return mm, cmd
}

func (mm *Multi) update(msg tea.Msg) tea.Cmd {
	mm.wall = mm.opts.WallClock()
	switch msg := msg.(type) {
	case bellMsg:
		return bellOut()
	case tea.WindowSizeMsg:
		mm.ctx.Width, mm.ctx.Height = msg.Width, msg.Height
		mm.ctx.Help.SetWidth(msg.Width)
		for _, k := range mm.kids {
			k.Update(msg)
		}
		return nil
	case tea.BackgroundColorMsg:
		for _, k := range mm.kids {
			k.Update(msg)
		}
		return nil
	case tickMsg:
		// Every cluster re-derives, shown or not; one tick for all.
		for _, k := range mm.kids {
			k.Update(msg)
		}
		mm.rows()
		if mm.toast.Expired(mm.wall) {
			mm.toast = nil
		}
		return tick()
	case clusterMsg:
		if msg.i < 0 || msg.i >= len(mm.kids) {
			return nil
		}
		k := mm.kids[msg.i]
		_, cmd := k.Update(msg.msg)
		mm.row(msg.i)
		switch msg.msg.(type) {
		case eventsMsg:
			return waitCluster(msg.i, k.opts.Events)
		case streamClosedMsg:
			return nil
		}
		return tag(msg.i, cmd)
	case tea.KeyPressMsg:
		if mm.active >= 0 {
			return mm.clusterKey(msg)
		}
		return mm.listKey(msg)
	case tea.PasteMsg:
		// A paste goes to the dashboard on screen (its filter), never to
		// the list.
		if mm.active >= 0 {
			mm.kids[mm.active].Update(msg)
		}
		return nil
	}
	return nil
}

// clusterKey handles a key while a cluster's dashboard is on screen.
func (mm *Multi) clusterKey(msg tea.KeyPressMsg) tea.Cmd {
	k := mm.kids[mm.active]
	if key.Matches(msg, k.ctx.Keys.Back) && k.atTop() {
		k.focus = focusNodes
		mm.active = -1
		mm.rows()
		return nil
	}
	_, cmd := k.Update(msg)
	mm.row(mm.active)
	return tag(mm.active, cmd)
}

// atTop reports whether esc has nothing left to close in this dashboard: no
// dialog, filter, detail or help open and no filter applied.
func (m *Model) atTop() bool {
	return m.dialog == nil && !m.filtering && m.mode == modeMain && m.table.Filter == ""
}

// listKey handles a key on the cluster list.
func (mm *Multi) listKey(msg tea.KeyPressMsg) tea.Cmd {
	keys := mm.ctx.Keys
	switch {
	case msg.String() == "ctrl+c", key.Matches(msg, keys.Quit):
		return tea.Quit
	case key.Matches(msg, keys.Theme):
		mm.nextTheme()
		return nil
	}
	if name := mm.list.Update(msg, keys); name != "" {
		for i, k := range mm.kids {
			if k.c.Context == name {
				mm.active = i
				k.scroll()
			}
		}
	}
	return nil
}

// nextTheme cycles the theme of every cluster (and the list).
func (mm *Multi) nextTheme() {
	if len(mm.kids) == 0 {
		return
	}
	k0 := mm.kids[0]
	if len(k0.themes) == 1 {
		mm.toast = toast.New("NO_COLOR is set: colours are off", toast.Info, mm.wall)
		return
	}
	k0.themeIdx = (k0.themeIdx + 1) % len(k0.themes)
	k0.themeChosen = true
	k0.ctx.SetTheme(k0.themes[k0.themeIdx])
	mm.toast = toast.New("theme: "+k0.ctx.Theme.Name, toast.Info, mm.wall)
}

// syncTheme makes every cluster and the list use the theme last chosen (in
// the list or in any cluster's dashboard).
func (mm *Multi) syncTheme() {
	if len(mm.kids) == 0 {
		return
	}
	src := mm.kids[0]
	if mm.active >= 0 {
		src = mm.kids[mm.active]
	}
	name := src.ctx.Theme.Name
	for _, k := range mm.kids {
		if k.ctx.Theme.Name != name {
			k.setThemeByName(name)
			k.themeChosen = k.themeChosen || src.themeChosen
		}
	}
	if mm.ctx.Theme != src.ctx.Theme {
		mm.ctx.SetTheme(src.ctx.Theme)
	}
}

// View renders the list or the dashboard on screen.
func (mm *Multi) View() tea.View {
	if mm.active >= 0 {
		v := mm.kids[mm.active].View()
		return v
	}
	v := tea.NewView(mm.Render())
	v.AltScreen = true
	v.WindowTitle = fmt.Sprintf("rebootwatch · %d clusters", len(mm.kids))
	return v
}

// Render returns the list screen as exactly Height lines of Width cells: a
// title line, the boxed list, and a footer (toast or keys).
func (mm *Multi) Render() string {
	w, h := mm.ctx.Width, mm.ctx.Height
	if w <= 0 || h <= 0 {
		return ""
	}
	p := mm.ctx.P
	if w < MinWidth || h < MinHeight {
		return strings.Join(tooSmallLines(p, w, h), "\n")
	}
	title := p.Paint(pctx.Title, "rebootwatch") + " " + p.Paint(pctx.Muted, "⎈ ") + p.Paint(pctx.Accent, fmt.Sprintf("%d clusters", len(mm.kids)))
	var modes []string
	if mm.ctx.Demo {
		modes = append(modes, p.Paint(pctx.Info, "[demo]"))
	}
	if mm.ctx.ReadOnly {
		modes = append(modes, p.Paint(pctx.Warning, "[read-only]"))
	}
	if mm.ctx.DryRun {
		modes = append(modes, p.Paint(pctx.Warning, "[dry-run]"))
	}
	if mm.opts.Bell {
		modes = append(modes, p.Paint(pctx.Muted, "[bell]"))
	}
	if len(modes) > 0 {
		title += " " + strings.Join(modes, " ")
	}
	if hint := p.Paint(pctx.Muted, "t theme"); pctx.Width(title)+pctx.Width(hint)+1 <= w {
		title += strings.Repeat(" ", w-pctx.Width(title)-pctx.Width(hint)) + hint
	}
	lines := make([]string, 0, h)
	lines = append(lines, pctx.Fit(title, w))
	lines = append(lines, clusters.Screen(mm.ctx, &mm.list, w, h-2)...)
	foot := mm.urgent(w)
	if mm.toast != nil {
		foot = mm.toast.Render(p, w)
	}
	lines = append(lines, pctx.Fit(foot, w))
	return strings.Join(pctx.Lines(lines, w, h), "\n")
}

// urgent is the list's footer: the most urgent attention item of all
// clusters (critical before warning, in list order) with its cluster's name
// and how many more there are (behind it, kept when the item is cut), or
// that nothing needs attention.
func (mm *Multi) urgent(w int) string {
	p := mm.ctx.P
	var first *model.Attention
	firstCtx, total := "", 0
	for _, sev := range []model.Severity{model.SeverityCritical, model.SeverityWarning} {
		for _, k := range mm.kids {
			for i, a := range k.derived.attention {
				if a.Severity != sev {
					continue
				}
				total++
				if first == nil {
					first, firstCtx = &k.derived.attention[i], k.c.Context
				}
			}
		}
	}
	if first == nil {
		return p.Paint(pctx.OK, "✓ nothing needs attention in any cluster")
	}
	role, mark := pctx.ToneRole(first.Severity.Tone()), pctx.Mark(first.Severity)
	more := ""
	if total > 1 {
		more = fmt.Sprintf(" (+%d more)", total-1)
	}
	name := sanitize.Short(firstCtx, 60)
	room := w - pctx.Width(mark) - pctx.Width(name) - 2 - pctx.Width(more)
	return p.Paint(role, mark) + p.Paint(pctx.Accent, name) + p.Paint(role, ": "+pctx.Trunc(sanitize.Short(first.Message, 300), max(room, 1))) +
		p.Paint(pctx.Muted, more)
}
