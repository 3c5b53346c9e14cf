// Package fleetview is the fleet dashboard of `rebootwatch fleet`: one row
// per cluster read from a Prometheus-compatible endpoint (internal/fleet),
// worst first, with a filter (/), the detail of one cluster (its nodes and
// blockers from the metrics: d or space) and enter to open that cluster's
// live dashboard through the context mapping: only a kubeconfig context
// named for the row exactly (--context-for, or the cluster label's value)
// is opened; a row without one, or whose name would be read as a list of
// contexts, opens nothing and says so.
//
// It must not do I/O in Update: reads run in commands (Options.Read and
// Options.Detail) and come back as messages, and enter hands the cluster's
// context to Options.Open, which returns the command that opens its
// dashboard. It never writes to a cluster: actions exist only in that
// per-cluster dashboard, behind its gates. Every value from the endpoint
// is sanitised before it is drawn.
package fleetview

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/rebootwatch/rebootwatch/internal/fleet"
	"github.com/rebootwatch/rebootwatch/internal/sanitize"
)

// Options are the view's outside world.
type Options struct {
	Context context.Context
	// Read reads the fleet now; Detail one cluster's nodes.
	Read   func(ctx context.Context) fleet.Fleet
	Detail func(ctx context.Context, row fleet.Key) ([]fleet.DetailNode, error)
	// Open returns the command that opens a context's live dashboard
	// (nil: enter does nothing but say so).
	Open func(kubeContext string) *exec.Cmd
	// Contexts are the kubeconfig's context names (read before the view
	// starts): enter opens a row's context only when it is one of them,
	// exactly.
	Contexts []string
	// NoContext, when set, is what enter says of a row whose context is
	// not among Contexts (the demo: a cluster with no scenario to open).
	NoContext string
	// Interval is how often the fleet is read again.
	Interval time.Duration
	// Endpoint is shown in the header (secrets masked).
	Endpoint string
}

type (
	readMsg   struct{ f fleet.Fleet }
	detailMsg struct {
		row   string // the row's key (fleet.Key.ID)
		nodes []fleet.DetailNode
		err   error
	}
	tickMsg     struct{}
	returnedMsg struct{ err error }
)

// Model is the fleet dashboard.
type Model struct {
	o             Options
	f             fleet.Fleet
	read          bool
	width, height int
	sel           int
	filter        string
	filtering     bool
	detail        bool
	detailFor     string // the row's key (fleet.Key.ID)
	detailName    string
	nodes         []fleet.DetailNode
	detailErr     error
	note          string
}

// New returns the view; Init starts the first read.
func New(o Options) *Model {
	if o.Context == nil {
		o.Context = context.Background()
	}
	if o.Interval <= 0 {
		o.Interval = 30 * time.Second
	}
	return &Model{o: o, width: 80, height: 24}
}

func (m *Model) readCmd() tea.Cmd {
	return func() tea.Msg { return readMsg{m.o.Read(m.o.Context)} }
}

func (m *Model) tick() tea.Cmd {
	return tea.Tick(m.o.Interval, func(time.Time) tea.Msg { return tickMsg{} })
}

// Init starts the first read.
func (m *Model) Init() tea.Cmd { return m.readCmd() }

// Rows are the rows the filter keeps, worst first: the filter is a part
// of the cluster's name or context, or a whole status ("ghost").
func (m *Model) Rows() []fleet.Row {
	if m.filter == "" {
		return m.f.Rows
	}
	var out []fleet.Row
	q := strings.ToLower(m.filter)
	for _, r := range m.f.Rows {
		if strings.Contains(strings.ToLower(r.Cluster), q) || strings.Contains(strings.ToLower(r.Context), q) || string(r.Status) == q ||
			(r.Unlabelled && strings.Contains(strings.ToLower(fleet.ClusterCell(r)), q)) {
			out = append(out, r)
		}
	}
	return out
}

func (m *Model) selected() (fleet.Row, bool) {
	rows := m.Rows()
	if len(rows) == 0 {
		return fleet.Row{}, false
	}
	m.sel = min(max(m.sel, 0), len(rows)-1)
	return rows[m.sel], true
}

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case readMsg:
		cur, had := m.selected()
		m.f, m.read = msg.f, true
		if had {
			for i, r := range m.Rows() {
				if r.Key() == cur.Key() {
					m.sel = i
				}
			}
		}
		return m, m.tick()
	case tickMsg:
		return m, m.readCmd()
	case detailMsg:
		if msg.row == m.detailFor {
			m.nodes, m.detailErr = msg.nodes, msg.err
		}
	case returnedMsg:
		if msg.err != nil {
			m.note = "the dashboard ended: " + sanitize.Short(msg.err.Error(), 200)
		}
		return m, m.readCmd()
	case tea.KeyPressMsg:
		return m, m.key(msg)
	}
	return m, nil
}

func (m *Model) key(msg tea.KeyPressMsg) tea.Cmd {
	k := msg.String()
	if m.filtering {
		switch k {
		case "enter":
			m.filtering = false
		case "esc":
			m.filtering, m.filter = false, ""
		case "backspace":
			if r := []rune(m.filter); len(r) > 0 {
				m.filter = string(r[:len(r)-1])
			}
		default:
			if msg.Text != "" {
				m.filter += msg.Text
			}
		}
		m.sel = 0
		return nil
	}
	m.note = ""
	switch k {
	case "q", "ctrl+c":
		return tea.Quit
	case "esc":
		if m.detail {
			m.detail = false
		} else if m.filter != "" {
			m.filter = ""
		}
	case "/":
		m.filtering, m.detail = true, false
	case "up", "k":
		m.sel--
	case "down", "j":
		m.sel++
	case "home", "g":
		m.sel = 0
	case "end", "G":
		m.sel = len(m.Rows()) - 1
	case "r":
		return m.readCmd()
	case "d", "space":
		r, ok := m.selected()
		if !ok {
			return nil
		}
		if m.detail && m.detailFor == r.Key().ID() {
			m.detail = false
			return nil
		}
		m.detail, m.detailFor, m.detailName, m.nodes, m.detailErr = true, r.Key().ID(), fleet.ClusterCell(r), nil, nil
		if m.o.Detail == nil || r.Status == fleet.StatusNoAgent {
			return nil
		}
		k, ctx := r.Key(), m.o.Context
		return func() tea.Msg {
			n, err := m.o.Detail(ctx, k)
			return detailMsg{row: k.ID(), nodes: n, err: err}
		}
	case "enter":
		r, ok := m.selected()
		if !ok {
			return nil
		}
		if m.o.Open == nil {
			m.note = "no dashboard to open"
			return nil
		}
		if why := m.cannotOpen(r); why != "" {
			m.note = "nothing opened: " + why
			return nil
		}
		return tea.ExecProcess(m.o.Open(r.Context), func(err error) tea.Msg { return returnedMsg{err} })
	}
	m.selected()
	return nil
}

// cannotOpen says why a row's dashboard cannot be opened ("" when it can):
// a row opens only the kubeconfig context named for it exactly, never the
// current context (another cluster, with release and reap offered) and
// never a list of contexts.
func (m *Model) cannotOpen(r fleet.Row) string {
	switch {
	case r.Unlabelled || r.Context == "":
		return "the row has no cluster label, so no context is named for it"
	case strings.Contains(r.Context, ","):
		return fmt.Sprintf("%s has a comma (a list of contexts); use --context-for", sanitize.Short(r.Context, 40))
	}
	for _, c := range m.o.Contexts {
		if c == r.Context {
			return ""
		}
	}
	if m.o.NoContext != "" {
		return m.o.NoContext
	}
	return fmt.Sprintf("no kubeconfig context is named exactly %s; use --context-for", sanitize.Short(r.Context, 40))
}

// View draws the screen.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = "rebootwatch fleet"
	return v
}

// Render returns the screen as Height lines of at most Width cells.
func (m *Model) Render() string {
	w, h := m.width, m.height
	if w <= 0 || h <= 0 {
		return ""
	}
	var lines []string
	lines = append(lines, m.header())
	if !m.read {
		lines = append(lines, "", "reading "+sanitize.MaskURL(m.o.Endpoint)+" …")
	} else if m.detail {
		lines = append(lines, m.detailLines()...)
	} else {
		lines = append(lines, m.table(h-3)...)
	}
	for len(lines) < h-1 {
		lines = append(lines, "")
	}
	lines = append(lines[:h-1], m.footer())
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, w, "…")
	}
	return strings.Join(lines, "\n")
}

func (m *Model) header() string {
	counts := map[fleet.Status]int{}
	for _, r := range m.f.Rows {
		counts[r.Status]++
	}
	var parts []string
	for _, s := range fleet.AllStatuses {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	s := fmt.Sprintf("fleet · %d clusters", len(m.f.Rows))
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	if m.read {
		s += " · " + m.f.At.UTC().Format("15:04:05 UTC")
	}
	return s
}

func (m *Model) footer() string {
	if m.filtering {
		return "filter: " + sanitize.Line(m.filter) + "▏ (enter keep · esc clear)"
	}
	if m.note != "" {
		return m.note
	}
	s := "↑↓ move · / filter · d detail · enter dashboard · r read · q quit"
	if m.filter != "" {
		s = "filter " + sanitize.Short(m.filter, 20) + " (esc clears) · " + s
	}
	return s
}

// cols are the table's columns: header, cell, width (0: the rest).
func (m *Model) table(room int) []string {
	var out []string
	// The error and the partial answer wrap whole (at most 4 lines each):
	// their cause is what the operator acts on, so it is never cut at the
	// screen's edge.
	wrapped := func(s string) {
		ls := strings.Split(ansi.Wrap(s, max(m.width, 20), " "), "\n")
		if len(ls) > 4 {
			ls = append(ls[:3], ansi.Truncate(strings.Join(ls[3:], " "), max(m.width, 20), "…"))
		}
		out = append(out, ls...)
		room -= len(ls)
	}
	if m.f.Err != nil {
		wrapped("error: " + fleet.ErrorText(m.f.Err))
	}
	if len(m.f.Warnings) > 0 {
		// A partial answer (the endpoint's warnings): rows may be missing.
		wrapped("partial answer: " + sanitize.Short(strings.Join(m.f.Warnings, "; "), 300))
	}
	rows := m.Rows()
	if len(rows) == 0 {
		if m.filter != "" {
			return append(out, "no cluster matches the filter")
		}
		if m.f.Err == nil && len(m.f.Warnings) == 0 {
			out = append(out, fmt.Sprintf("no cluster found: no series carry the label %q", m.f.ClusterLabel))
		}
		return out
	}
	// Column widths: the wide layout from 112 cells, else one that fits 80.
	wd := []int{10, 11, 16, 7, 3, 4, 10, 3, 5}
	if m.width >= 112 {
		wd = []int{16, 11, 26, 9, 5, 5, 16, 4, 6}
	}
	row := func(sel bool, c ...string) string {
		var b strings.Builder
		if sel {
			b.WriteString("▶ ")
		} else {
			b.WriteString("  ")
		}
		for i, cell := range c {
			cell = cut(cell, wd[i])
			if i > 0 {
				b.WriteByte(' ')
			}
			if i >= 3 && i != 6 { // counts and age: right-aligned
				b.WriteString(strings.Repeat(" ", wd[i]-ansi.StringWidth(cell)) + cell)
			} else {
				b.WriteString(cell + strings.Repeat(" ", wd[i]-ansi.StringWidth(cell)))
			}
		}
		return strings.TrimRight(b.String(), " ")
	}
	out = append(out, row(false, "CLUSTER", "STATUS", "LOCK", "NODES", "CYC", "PEND", "BLOCKER", "REQ", "AGE"))
	room--
	start := 0
	if m.sel >= room {
		start = m.sel - room + 1
	}
	for i := start; i < len(rows) && i-start < room; i++ {
		r := rows[i]
		nodes, cyc, pend := nodeCells(r)
		out = append(out, row(i == m.sel, fleet.ClusterCell(r), string(r.Status), fleet.LockCell(r, m.f.At),
			nodes, cyc, pend, fleet.BlockerCell(r), reqCell(r), fleet.AgeCell(r)))
	}
	return out
}

// nodeCells are the progress columns: upgraded/total (or the node count
// without the agent), in cycle, pending; "?" where unknown.
func nodeCells(r fleet.Row) (nodes, cyc, pend string) {
	if r.Status == fleet.StatusStale {
		return "–", "–", "–"
	}
	if r.Phases == nil {
		if r.Nodes != nil {
			return fmt.Sprint(*r.Nodes), "?", "?"
		}
		return "?", "?", "?"
	}
	total := *r.NodeCount()
	nodes = fmt.Sprint(total)
	if r.Upgraded != nil {
		nodes = fmt.Sprintf("%d/%d", *r.Upgraded, total)
	}
	return nodes, fmt.Sprint(r.InCycle()), fmt.Sprint(r.Phases["pending"])
}

func reqCell(r fleet.Row) string {
	if r.RebootRequired == nil {
		return "?"
	}
	return fmt.Sprint(*r.RebootRequired)
}

// cut shortens an already sanitised cell to n cells.
func cut(s string, n int) string { return ansi.Truncate(s, n, "…") }

func (m *Model) detailLines() []string {
	var r fleet.Row
	found := false
	for _, x := range m.f.Rows {
		if x.Key().ID() == m.detailFor {
			r, found = x, true
		}
	}
	if !found {
		return []string{"", "cluster " + m.detailName + " is no longer listed (esc: back)"}
	}
	out := []string{
		"",
		fmt.Sprintf("cluster %s · %s · context %s (enter opens its dashboard) · esc back", fleet.ClusterCell(r), r.Status, sanitize.Short(r.Context, 40)),
		"lock     " + fleet.LockCell(r, m.f.At),
		"nodes    " + fleet.NodesCell(r),
		"blocker  " + fleet.BlockerCell(r),
		"sources  " + strings.Join(r.Sources, ", ") + " · data age " + fleet.AgeCell(r),
	}
	for _, l := range r.Locks {
		out = append(out, fmt.Sprintf("  %s %s: %s → %s (%s)", sanitize.Short(l.Kind, 12), sanitize.Short(l.Lock, 40), sanitize.ID(l.Holder),
			nodeOr(l.HolderNode), sanitize.Short(l.Verdict, 12)))
	}
	for _, u := range r.Unknown {
		out = append(out, "unknown: "+sanitize.Line(u))
	}
	switch {
	case r.Status == fleet.StatusNoAgent:
		out = append(out, "nodes: unknown without the agent")
	case m.detailErr != nil:
		out = append(out, "nodes: could not be read: "+fleet.ErrorText(m.detailErr))
	case m.nodes == nil:
		out = append(out, "nodes: reading …")
	default:
		out = append(out, fmt.Sprintf("%-32s %-11s %s", "NODE", "PHASE", "BLOCKER"))
		for _, n := range m.nodes {
			b := n.Blocker
			if b == "" {
				b = "–"
			}
			out = append(out, fmt.Sprintf("%-32s %-11s %s", cut(sanitize.Line(n.Node), 32), sanitize.Short(n.Phase, 11), sanitize.Short(b, 30)))
		}
	}
	return out
}

func nodeOr(n string) string {
	if n == "" {
		return "no node"
	}
	return sanitize.Short(n, 30)
}
