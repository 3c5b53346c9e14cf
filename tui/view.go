package tui

import (
	"fmt"
	"strings"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/tui/detail"
	"github.com/rebootwatch/rebootwatch/tui/header"
	"github.com/rebootwatch/rebootwatch/tui/locks"
	"github.com/rebootwatch/rebootwatch/tui/longhorn"
	"github.com/rebootwatch/rebootwatch/tui/nodes"
	"github.com/rebootwatch/rebootwatch/tui/pctx"
	"github.com/rebootwatch/rebootwatch/tui/timeline"
)

// Minimum size of the condensed layout; below it the screen says so.
const (
	MinWidth  = 60
	MinHeight = 15
)

// derived caches what the panels show, computed when the cluster changes
// (events, ticks, actions) so that a frame never walks every node.
type derived struct {
	fleet     model.Fleet
	attention []model.Attention
	blocker   *model.FleetBlocker
	vsum      *model.VolumeSummary
	lhUnread  string
	vols      map[string]*model.Volume
	sources   []model.SourceHealth
}

func (m *Model) refresh() {
	d := &m.derived
	d.fleet = m.c.Fleet(m.now)
	d.attention = m.c.Attention(m.now)
	d.blocker = m.c.FleetBlocker()
	d.vsum = m.c.VolumeSummary()
	d.lhUnread, _ = m.c.LonghornUnread()
	d.vols = make(map[string]*model.Volume, m.c.VolumeCount())
	for _, v := range m.c.Volumes() {
		d.vols[v.Key()] = v
	}
	d.sources = m.c.Sources()
	m.noteCriticals()
	m.table.Rebuild(m.c, d.fleet.Target, m.now)
	m.followLocks()
	m.scroll()
}

// geometry is where the panels go for the current size.
type geometry struct {
	small           bool
	headerH         int
	full            bool // boxed locks + Longhorn panels side by side
	locksW, locksH  int
	lhW             int
	lhLine          bool // condensed: Longhorn on one line
	nodesW, nodesH  int  // the nodes box
	tlW, tlH        int  // the timeline box (0: hidden)
	tlSide          bool // timeline right of the nodes
	bodyH           int
	locksShowHeader bool
}

func (m *Model) geometry() geometry {
	w, h := m.ctx.Width, m.ctx.Height
	g := geometry{}
	if w < MinWidth || h < MinHeight {
		g.small = true
		return g
	}
	g.headerH = 2
	if h >= 24 {
		g.headerH = 3
	}
	g.bodyH = h - g.headerH - 1
	nLocks := max(len(m.c.LockStatuses())+slotLines(m.c.Slots()), 1)
	g.full = w >= 110 && h >= 30
	if g.full {
		lhInner := 2
		if m.derived.vsum != nil {
			lhInner += min(len(m.derived.vsum.NotHealthy), 4)
		}
		g.locksShowHeader = true
		// Longhorn as wide as what it shows (its box at most 38% of the
		// screen), the locks and their reasons the rest; the panel grows
		// (to 10 lines) for the reasons to wrap whole.
		g.lhW = min(max(m.longhornWidth()+2, 32), w*38/100)
		g.locksW = w - g.lhW
		if n := len(m.c.LockStatuses()); n > 0 {
			nLocks = max(nLocks, locks.WrapLines(m.ctx, m.c.LockStatuses(), m.c.Slots(), g.locksW-2)-1)
		}
		// Up to 10 lines, more while the nodes table and the timeline
		// below keep every row they show (a reason is never cut beside
		// empty rows).
		limit := max(10, g.bodyH-(m.table.Total()+3)-5)
		g.locksH = min(max(nLocks+1, lhInner)+2, limit)
		rest := g.bodyH - g.locksH
		if w >= 170 {
			g.tlSide = true
			// The timeline takes what the nodes table does not need.
			g.tlW = max(w*30/100, 50, w-m.table.Width()-2)
			g.tlH = rest
			g.nodesW, g.nodesH = w-g.tlW, rest
		} else {
			g.tlH = min(max(rest/4, 5), 10)
			g.tlW = w
			g.nodesW, g.nodesH = w, rest-g.tlH
		}
		return g
	}
	maxLocks := 2
	if h >= 20 {
		maxLocks = 3
	}
	g.locksW = w
	g.locksH = min(nLocks, maxLocks) + 2
	if h >= 20 {
		// The column header too (KIND LOCK HOLDER …).
		g.locksShowHeader = true
		g.locksH++
	}
	g.lhLine = true
	rest := g.bodyH - g.locksH - 1
	if h >= 26 {
		g.tlW, g.tlH = w, 6
		rest -= g.tlH
	}
	g.nodesW, g.nodesH = w, rest
	return g
}

// tableRows is how many node rows fit in the nodes box.
func (m *Model) tableRows() int {
	g := m.geometry()
	if g.small {
		return 0
	}
	return max(g.nodesH-3, 0)
}

func (m *Model) scroll() { m.table.Scroll(m.tableRows()) }

// View renders the screen.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = "rebootwatch · " + sanitize.Short(m.c.Context, 60)
	return v
}

// Render returns the screen as exactly Height lines of Width cells.
func (m *Model) Render() string {
	w, h := m.ctx.Width, m.ctx.Height
	if w <= 0 || h <= 0 {
		return ""
	}
	g := m.geometry()
	if g.small {
		return strings.Join(m.tooSmall(w, h), "\n")
	}
	lines := make([]string, 0, h)
	lines = append(lines, header.Render(m.ctx, header.Data{Context: m.c.Context, Fleet: m.derived.fleet,
		Sources: m.derived.sources, Attention: m.derived.attention, Blocker: m.derived.blocker, StreamClosed: m.streamClosed, Back: m.inList, Connecting: !m.c.Synced()}, w, g.headerH)...)
	switch m.mode {
	case modeHelp:
		lines = append(lines, m.helpBox(w, g.bodyH)...)
	case modeDetail:
		lines = append(lines, m.detailBox(w, g.bodyH)...)
	case modeTimeline:
		lines = append(lines, m.timelineBox(w, g.bodyH)...)
	default:
		lines = append(lines, m.body(g)...)
	}
	lines = append(lines, m.footer(w))
	lines = pctx.Lines(lines, w, h)
	if m.dialog != nil {
		dl := m.dialog.Render(m.ctx, w, h)
		if len(dl) > 0 {
			x := max((w-pctx.Width(dl[0]))/2, 0)
			y := max((h-len(dl))/2, 0)
			lines = pctx.Overlay(lines, dl, x, y, w)
		}
	}
	return strings.Join(lines, "\n")
}

func (m *Model) tooSmall(w, h int) []string { return tooSmallLines(m.ctx.P, w, h) }

// tooSmallLines is the screen shown below the minimum size.
func tooSmallLines(p pctx.Painter, w, h int) []string {
	msg := []string{
		"terminal too small",
		fmt.Sprintf("need %d×%d, have %d×%d", MinWidth, MinHeight, w, h),
		"q quits",
	}
	out := make([]string, 0, h)
	top := max((h-len(msg))/2, 0)
	for i := 0; i < top && len(out) < h; i++ {
		out = append(out, "")
	}
	for _, s := range msg {
		if len(out) >= h {
			break
		}
		s = pctx.Trunc(s, w)
		pad := max((w-pctx.Width(s))/2, 0)
		out = append(out, strings.Repeat(" ", pad)+p.Paint(pctx.Warning, s))
	}
	return pctx.Lines(out, w, h)
}

// panelState says whether the sources behind a panel are usable; when not,
// the panel is dimmed and its title says since when it has no fresh data.
func (m *Model) panelState(names ...model.SourceName) (pctx.Painter, string) {
	p := m.ctx.P
	for _, n := range names {
		hs, ok := m.c.Source(n)
		if !ok {
			continue
		}
		switch hs.Status {
		case model.StatusStale, model.StatusError, model.StatusForbidden:
			return p.Dim(), fmt.Sprintf("%s %s · %s", n, hs.Status, header.Age(m.now, hs.LastSync))
		}
	}
	return p, ""
}

func (m *Model) body(g geometry) []string {
	w := m.ctx.Width
	var out []string
	sts := m.c.LockStatuses()
	sel := -1
	if m.focus == focusLocks {
		sel = m.lockSel
	}
	lp, lnote := m.panelState(lock.Sources()...)
	locksTitle := "Locks"
	if m.focus == focusLocks {
		locksTitle = "Locks ▸"
	}
	connecting := !m.c.Synced()
	switch {
	case lnote != "":
	case connecting:
		lnote = "connecting"
	default:
		lnote = fmt.Sprintf("%d", len(sts))
		held, groups := 0, 0
		for _, g := range m.c.Slots() {
			if !g.Lock {
				held, groups = held+len(g.Holders), groups+1
			}
		}
		if groups > 0 {
			// The slots of kinds without a lock object, listed below.
			lnote += fmt.Sprintf(" · %d slot%s held", held, map[bool]string{true: "s"}[held != 1])
		}
	}
	hp, hnote := m.panelState(model.SourceLonghorn)
	if g.full {
		lb := pctx.Box(lp, locksTitle, lnote, m.locksBody(lp, sts, sel, g.locksW-2, g.locksH-2, true), g.locksW, g.locksH)
		hb := pctx.Box(hp, "Longhorn", hnote, longhorn.Render(hp, longhorn.Data{Summary: m.derived.vsum, Volumes: m.derived.vols, Unread: m.derived.lhUnread}, g.lhW-2, g.locksH-2), g.lhW, g.locksH)
		out = append(out, pctx.HJoin(lb, hb)...)
	} else {
		out = append(out, pctx.Box(lp, locksTitle, lnote, m.locksBody(lp, sts, sel, w-2, g.locksH-2, g.locksShowHeader), w, g.locksH)...)
		line := hp.Paint(pctx.Title, "Longhorn ") + longhorn.Short(hp, m.derived.vsum, m.derived.lhUnread)
		if hnote != "" {
			line = hp.Paint(pctx.Title, "Longhorn ") + hp.Paint(pctx.Muted, hnote)
		}
		out = append(out, pctx.Fit(line, w))
	}
	np, nnote := m.panelState(model.SourceNodes)
	title := "Nodes"
	if nnote != "" {
		title += " · " + nnote
	}
	ctx := *m.ctx
	ctx.P = np
	nb := pctx.Box(np, title, nodes.Summary(&m.table), nodes.Render(&ctx, &m.table, g.nodesW-2, g.nodesH-2, m.focus == focusNodes), g.nodesW, g.nodesH)
	if g.tlH > 0 {
		tb := pctx.Box(m.ctx.P, "Timeline", "newest first", m.timelineLines(m.c.Timeline(), g.tlW-2, g.tlH-2), g.tlW, g.tlH)
		if g.tlSide {
			out = append(out, pctx.HJoin(nb, tb)...)
		} else {
			out = append(out, nb...)
			out = append(out, tb...)
		}
	} else {
		out = append(out, nb...)
	}
	return out
}

// slotLines is how many lines the slot groups without a lock object take
// in the locks panel (locks.SlotLines: one per holder, one for a group
// with none).
func slotLines(groups []model.SlotGroup) int {
	n := 0
	for _, g := range groups {
		if !g.Lock {
			n += max(len(g.Holders), 1)
		}
	}
	return n
}

func (m *Model) locksBody(p pctx.Painter, sts []model.LockStatus, sel, w, h int, showHeader bool) []string {
	if len(sts) == 0 && !m.c.Synced() {
		// Not judged yet (the model derives nothing before its sources'
		// first picture): say so, not "no lock".
		return locks.Connecting(p, w, h)
	}
	if len(sts) == 0 {
		if why, unread := m.c.LocksUnread(); unread {
			return locks.Unknown(p, why, w, h)
		}
	}
	groups := m.c.Slots()
	if showHeader && h >= len(sts)+1+slotLines(groups) {
		// Every lock in view: the reasons wrap while there is room.
		return locks.RenderWrapped(m.ctx, p, sts, groups, sel, w, h)
	}
	// Keep the selected lock visible: the rows scroll under the header
	// (none on the smallest screens).
	rows := locks.Render(m.ctx, p, sts, groups, sel, w, len(sts)+1+slotLines(groups))
	var head []string
	if len(rows) > 0 {
		head, rows = rows[:1], rows[1:]
	}
	if !showHeader {
		head = nil
	}
	room := h - len(head)
	if sel >= room && sel < len(rows) {
		rows = rows[sel-room+1:]
	}
	return pctx.Lines(append(head, rows...), w, h)
}

// longhornWidth is how wide the Longhorn panel's widest line is.
func (m *Model) longhornWidth() int {
	p := m.ctx.P
	n := 0
	for _, l := range longhorn.Render(p, longhorn.Data{Summary: m.derived.vsum, Volumes: m.derived.vols, Unread: m.derived.lhUnread}, 200, 6) {
		n = max(n, pctx.Width(strings.TrimRight(ansi.Strip(l), " ")))
	}
	if _, note := m.panelState(model.SourceLonghorn); note != "" {
		// The title and its note whole: "╭─ Longhorn ─…─ note ─╮".
		n = max(n, pctx.Width("─ Longhorn ─ "+note+" ─")+1)
	}
	return n
}

func (m *Model) helpBox(w, h int) []string {
	hm := m.ctx.Help
	hm.ShowAll = true
	body := strings.Split(hm.View(m.ctx.Keys), "\n")
	p := m.ctx.P
	body = append(body, "",
		p.Paint(pctx.Muted, "filter: / then words matched against node name, phase and role (all must match)"),
		p.Paint(pctx.Muted, "sort: s cycles cycle → name → phase → time in phase → role"),
		p.Paint(pctx.Muted, "tab moves between the nodes and the locks; enter opens the node's or the lock's detail (evidence, reason)"),
		p.Paint(pctx.Muted, "stepper: ● done  ◉ current  ○ to come — pending → draining → rebooting → recovering → done"))
	if m.inList {
		body = append(body, p.Paint(pctx.Muted, "esc with nothing open (no dialog, detail, help or filter) returns to the cluster list; every cluster stays live there"))
	}
	if m.ctx.ReadOnly {
		body = append(body, p.Paint(pctx.Warning, "read-only: actions are hidden"))
	} else {
		body = append(body, p.Paint(pctx.Muted, "r/x plan a release/reap of the selected lock (tab), or of the lock the selected node holds; the dialog shows every gate and the exact write"),
			p.Paint(pctx.Muted, "in the dialog y confirms (or ←/→ to Yes, then enter); n or esc cancels; it starts on No and ignores keys for 0.4s after opening"))
	}
	// Lines longer than the box wrap (indented) while rows are left; the
	// blank line under the keys goes first when they would not.
	if wrapped := wrapLines(body, w-3, 2, 0); len(wrapped) > h-2 {
		for i, l := range body {
			if l == "" {
				body = append(body[:i:i], body[i+1:]...)
				break
			}
		}
	}
	body = wrapLines(body, w-3, 2, h-2)
	for i := range body {
		body[i] = " " + body[i]
	}
	return pctx.Box(p, "Help", "? or esc to close", body, w, h)
}

// wrapLines wraps each line longer than w cells at its spaces, the
// continuation indented by indent, as long as the result has at most room
// lines (each wrap counted from the longest line down would be fairer, but
// in order is what reads): a line that would not fit stays one line, cut
// by the box.
func wrapLines(lines []string, w, indent, room int) []string {
	if w <= indent+10 {
		return lines
	}
	out := make([]string, 0, len(lines))
	for i, l := range lines {
		if pctx.Width(l) <= w {
			out = append(out, l)
			continue
		}
		parts := strings.Split(ansi.Wrap(l, w-indent, " "), "\n")
		// The first part may use the indent too.
		if first := strings.Split(ansi.Wrap(l, w, " "), "\n"); len(first) > 0 {
			// The rest starts past the spaces the wrap broke at (the
			// escapes around them kept).
			plain := []rune(ansi.Strip(l))
			at := len([]rune(ansi.Strip(first[0])))
			for at < len(plain) && plain[at] == ' ' {
				at++
			}
			rest := ansi.Cut(l, pctx.Width(string(plain[:at])), pctx.Width(l))
			parts = append([]string{first[0]}, strings.Split(ansi.Wrap(rest, w-indent, " "), "\n")...)
			if rest == "" {
				parts = parts[:1]
			}
		}
		if room > 0 && len(out)+len(parts)+len(lines)-i-1 > room {
			out = append(out, l)
			continue
		}
		for j, x := range parts {
			if j > 0 {
				x = strings.Repeat(" ", indent) + strings.TrimLeft(x, " ")
			}
			out = append(out, x)
		}
	}
	return out
}

// timelineLines are the newest entries, each wrapped under its message
// while the h rows have room.
func (m *Model) timelineLines(entries []model.TimelineEntry, w, h int) []string {
	lines := timeline.Render(m.ctx.P, entries, m.now, 400, h)
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return pctx.Lines(wrapLines(lines, w, 11, h), w, h)
}

// timelineBox is the timeline on the whole body (l): the screens too short
// for its panel reach it there.
func (m *Model) timelineBox(w, h int) []string {
	entries := m.c.Timeline()
	off := min(m.timelineOff, len(entries))
	return pctx.Box(m.ctx.P, "Timeline", "newest first · j/k scroll · l or esc back", m.timelineLines(entries[:len(entries)-off], w-2, h-2), w, h)
}

func (m *Model) detailBox(w, h int) []string {
	body := m.detailLines(w)
	body = body[min(m.detailOff, max(len(body)-(h-2), 0)):]
	for i := range body {
		body[i] = " " + body[i]
	}
	title := "Node " + sanitize.Line(m.detailNode)
	if m.detailIsLock {
		if i := lockIndex(m.c.LockStatuses(), m.detailLock); i >= 0 {
			title = "Lock " + sanitize.Line(m.c.LockStatuses()[i].LockRef.String())
		} else {
			title = "Lock " + sanitize.Line(m.detailLock.ref.String()) + " (gone)"
		}
	}
	return pctx.Box(m.ctx.P, title, "esc back · j/k scroll", body, w, h)
}

// detailLines is the content of the detail view (node or lock), its long
// lines wrapped under their value.
func (m *Model) detailLines(w int) []string {
	return wrapLines(m.detailContent(w), w-3, 18, 0)
}

func (m *Model) detailContent(w int) []string {
	if m.detailIsLock {
		sts := m.c.LockStatuses()
		i := lockIndex(sts, m.detailLock)
		if i < 0 {
			return []string{m.ctx.P.Paint(pctx.Warning, "the lock is gone: "+sanitize.Short(m.detailLock.ref.String(), 80)+
				" held by "+sanitize.Short(orDash(m.detailLock.holder), 80)+" — nothing to act on")}
		}
		return detail.LockLines(m.ctx, sts[i], w-2)
	}
	return detail.Lines(m.ctx, m.c, m.detailNode, w-2)
}

func (m *Model) footer(w int) string {
	p := m.ctx.P
	if m.filtering {
		hint := "  enter keep · esc clear · matches name, phase, role"
		if utf8.RuneCountInString(m.filterDraft) >= MaxFilter {
			hint = fmt.Sprintf("  filter full (%d characters) · enter keep · esc clear", MaxFilter)
		}
		// The end of the filter stays in view (where typing happens).
		draft := sanitize.Line(m.filterDraft)
		if room := w - 2 - 1 - pctx.Width(hint); pctx.Width(draft) > room && room > 1 {
			draft = "…" + ansi.TruncateLeft(draft, pctx.Width(draft)-room+1, "")
		}
		return pctx.Fit(p.Paint(pctx.Accent, "/ ")+p.Paint(pctx.Text, draft)+p.Paint(pctx.Accent, "█")+
			p.Paint(pctx.Muted, hint), w)
	}
	if m.toast != nil {
		// The toast first; tab, ? and q at its right when both fit whole.
		t := m.toast.Render(p, w)
		_, offered := m.uncordonTarget()
		sets := m.ctx.Keys.FooterWith(offered)
		if keys := m.ctx.Help.ShortHelpView(sets[len(sets)-1]); pctx.Width(t)+2+pctx.Width(keys) <= w {
			return t + strings.Repeat(" ", w-pctx.Width(t)-pctx.Width(keys)) + keys
		}
		return pctx.Fit(t, w)
	}
	_, offered := m.uncordonTarget()
	key := fmt.Sprintf("%d/%s/%v", w, m.ctx.Theme.Name, offered)
	if m.footerKey != key {
		// The fullest set of hints that fits: tab, ? and q are in each,
		// and u where an uncordon is offered.
		hm := m.ctx.Help
		hm.SetWidth(0)
		sets := m.ctx.Keys.FooterWith(offered)
		line := hm.ShortHelpView(sets[len(sets)-1])
		for _, set := range sets {
			if v := hm.ShortHelpView(set); pctx.Width(v) <= w {
				line = v
				break
			}
		}
		m.footerKey, m.footerLine = key, pctx.Fit(line, w)
	}
	return m.footerLine
}
