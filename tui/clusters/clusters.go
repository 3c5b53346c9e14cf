// Package clusters is the dashboard's cluster list, shown when several
// clusters are open (--context a,b,c or --all-contexts): one row per cluster
// with its upgrade progress, current lock holder, worst lock verdict,
// Longhorn volume gate and source health; enter opens that cluster's
// dashboard. Rows are derived from each cluster's model (RowOf), Render
// draws them, and List keeps the selection and turns keys into intents.
//
// It is pure: no I/O, no clock (the time comes in), no client-go. It renders
// strings; only the root model returns a tea.View.
package clusters

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/tui/pctx"
)

// Gate is the Longhorn volume gate of one cluster.
type Gate string

// Gate values.
const (
	GateOK       Gate = "ok"       // every volume healthy
	GateDegraded Gate = "degraded" // a release now lets the next node drain
	GateFaulted  Gate = "faulted"
	GateNone     Gate = "none" // Longhorn not installed: no gate
)

// Row is one cluster of the list.
type Row struct {
	Context string
	// Reachable is false when the cluster could not be read at all; Why says why.
	Reachable bool
	Why       string
	// Connecting is set while an unreadable cluster has not reported on its
	// node list yet (just opened): not known to be unreachable.
	Connecting bool

	Nodes, Upgraded int
	// Active is the number of nodes pending or in a cycle.
	Active int
	// Holder is the current holder(s) of the reboot locks ("" when free).
	Holder string
	// Verdict is the most alarming lock verdict ("" when there is no lock).
	Verdict model.Verdict
	Gate    Gate
	// GateCount is the number of volumes degraded or faulted.
	GateCount int
	// SourcesOK of SourcesTotal sources are ok; SourcesBad names the others.
	SourcesOK, SourcesTotal int
	SourcesBad              []string
	// ETA is the fleet's estimated time left ("" when unknown).
	ETA string
	// Exit is the cluster's exit code (0 fine, 1 unreadable, 2 attention).
	Exit int
}

// verdictRank orders verdicts by how alarming they are.
func verdictRank(v model.Verdict) int {
	switch {
	case v.NeedsAttention():
		return 4
	case v == model.VerdictUnknown:
		return 3
	case v == model.VerdictHeld:
		return 2
	case v == model.VerdictFree:
		return 1
	}
	return 0
}

// RowOf derives the row of a cluster at now (after its Recompute).
func RowOf(c *model.Cluster, now time.Time) Row {
	r := Row{Context: c.Context, Reachable: c.Readable(), Exit: c.ExitCode(now)}
	if !r.Reachable {
		r.Why = "no node list was received"
		h, ok := c.Source(model.SourceNodes)
		if ok && h.Message != "" {
			r.Why = sanitize.Short(h.Message, 300)
		}
		if !ok {
			r.Connecting, r.Why = true, "waiting for the first node list"
		}
	}
	f := c.Fleet(now)
	r.Nodes, r.Upgraded = f.Nodes, f.Upgraded
	for _, ph := range []model.Phase{model.PhasePending, model.PhaseDraining, model.PhaseRebooting, model.PhaseRecovering} {
		r.Active += f.Phases[ph]
	}
	if f.ETA != nil {
		r.ETA = model.HumanDuration(*f.ETA)
	}
	// Holders that are nodes first (a name says more in a narrow column),
	// then raw ids that match no node.
	var holders, ids []string
	for _, s := range c.LockStatuses() {
		if verdictRank(s.Verdict) > verdictRank(r.Verdict) {
			r.Verdict = s.Verdict
		}
		if s.Holder == "" {
			continue
		}
		if h := s.HolderNode(); h != "" {
			holders = append(holders, sanitize.Short(h, 64))
		} else {
			ids = append(ids, sanitize.ID(s.Holder))
		}
	}
	r.Holder = strings.Join(append(holders, ids...), ", ")
	r.Gate = GateNone
	if vs := c.VolumeSummary(); vs != nil {
		switch {
		case vs.Faulted > 0:
			r.Gate, r.GateCount = GateFaulted, vs.Faulted
		case vs.Degraded > 0 || vs.Unknown > 0:
			r.Gate, r.GateCount = GateDegraded, vs.Degraded+vs.Unknown
		default:
			r.Gate = GateOK
		}
	}
	for _, h := range c.Sources() {
		if h.Status == model.StatusDisabled || h.Status == model.StatusNotInstalled {
			continue
		}
		r.SourcesTotal++
		if h.Status == model.StatusOK {
			r.SourcesOK++
		} else {
			r.SourcesBad = append(r.SourcesBad, string(h.Name)+" "+string(h.Status))
		}
	}
	return r
}

// Bar renders progress as a bar of w cells: █ upgraded, ░ to go.
func Bar(done, total, w int) string {
	if w <= 0 {
		return ""
	}
	n := 0
	if total > 0 {
		n = done * w / total
	}
	return strings.Repeat("█", n) + strings.Repeat("░", w-n)
}

// column widths of the wide layout
const (
	ctxW     = 18
	progW    = 20 // "12/40 ██████░░░░"
	holderW  = 16
	verdictW = 9
	volumesW = 12
)

// Render returns exactly h lines of w cells: a header and one line per
// cluster. selected is the highlighted row (-1 for none).
func Render(ctx *pctx.Context, rows []Row, selected int, w, h int) []string {
	if w <= 0 || h <= 0 {
		return nil
	}
	p := ctx.P
	if len(rows) == 0 {
		return pctx.Lines([]string{p.Paint(pctx.Muted, "no cluster")}, w, h)
	}
	cw, pw, hw := ctxW, progW, holderW
	if w < 90 {
		cw, pw, hw = 12, 12, 12
	}
	header := []col{{"CLUSTER", cw, nil}, {"PROGRESS", pw, nil}, {"HOLDER", hw, nil}, {"VERDICT", verdictW, nil}, {"VOLUMES", volumesW, nil}, {"SOURCES", 0, nil}}
	out := make([]string, 0, h)
	out = append(out, p.Paint(pctx.Muted, pctx.Fit(join(header, w, false), w)))
	for i, r := range rows {
		if len(out) >= h {
			break
		}
		var cols []col
		if r.Connecting {
			cols = []col{
				{sanitize.Line(r.Context), cw, func(x string) string { return p.Paint(pctx.Accent, x) }},
				{"connecting: " + r.Why, 0, func(x string) string { return p.Paint(pctx.Muted, x) }},
			}
		} else if !r.Reachable {
			cols = []col{
				{sanitize.Line(r.Context), cw, func(x string) string { return p.Paint(pctx.Accent, x) }},
				{"unreachable: " + r.Why, 0, func(x string) string { return p.Paint(pctx.Critical, x) }},
			}
		} else {
			barW := pw - len(fmt.Sprintf("%d/%d ", r.Upgraded, r.Nodes))
			prog := fmt.Sprintf("%d/%d %s", r.Upgraded, r.Nodes, Bar(r.Upgraded, r.Nodes, max(barW, 0)))
			holder := r.Holder
			if holder == "" {
				holder = "–"
			}
			verdict := string(r.Verdict)
			if verdict == "" {
				verdict = "no lock"
			}
			vol := string(r.Gate)
			volRole := pctx.OK
			switch r.Gate {
			case GateDegraded:
				vol, volRole = fmt.Sprintf("%d degraded", r.GateCount), pctx.Warning
			case GateFaulted:
				vol, volRole = fmt.Sprintf("%d faulted", r.GateCount), pctx.Critical
			case GateNone:
				vol, volRole = "no longhorn", pctx.Muted
			}
			src := fmt.Sprintf("%d/%d ok", r.SourcesOK, r.SourcesTotal)
			srcRole := pctx.OK
			if len(r.SourcesBad) > 0 {
				src += " · " + strings.Join(r.SourcesBad, ", ")
				srcRole = pctx.Warning
			}
			v := r.Verdict
			cols = []col{
				{sanitize.Line(r.Context), cw, func(x string) string { return p.Paint(pctx.Accent, x) }},
				{prog, pw, func(x string) string { return p.Paint(pctx.Text, x) }},
				{holder, hw, func(x string) string { return p.Paint(pctx.Bold, x) }},
				{verdict, verdictW, func(x string) string {
					if v == "" {
						return p.Paint(pctx.Muted, x)
					}
					return p.Verdict(v, x)
				}},
				{vol, volumesW, func(x string) string { return p.Paint(volRole, x) }},
				{src, 0, func(x string) string { return p.Paint(srcRole, x) }},
			}
		}
		if i == selected {
			out = append(out, p.Paint(pctx.Selected, pctx.Fit(join(cols, w, false), w)))
			continue
		}
		out = append(out, join(cols, w, true))
	}
	return pctx.Lines(out, w, h)
}

// col is one cell of a row: its text, width (0: the rest) and paint.
type col struct {
	text  string
	w     int
	paint func(string) string
}

// join lays out columns separated by one space; a width of 0 takes the rest.
func join(cols []col, w int, paint bool) string {
	var sb strings.Builder
	used := 0
	for i, c := range cols {
		if i > 0 {
			sb.WriteByte(' ')
			used++
		}
		cw := c.w
		if cw == 0 {
			cw = max(w-used, 0)
		}
		t := pctx.Trunc(c.text, cw)
		if paint && c.paint != nil {
			sb.WriteString(c.paint(t))
		} else {
			sb.WriteString(t)
		}
		if c.w > 0 {
			if pad := c.w - pctx.Width(t); pad > 0 {
				sb.WriteString(strings.Repeat(" ", pad))
			}
		}
		used += cw
	}
	return sb.String()
}

// List is the cluster list's state: its rows and the selection.
type List struct {
	Rows []Row
	Sel  int
}

// SetRows replaces the rows, keeping the selection on the same context.
func (l *List) SetRows(rows []Row) {
	cur := ""
	if l.Sel >= 0 && l.Sel < len(l.Rows) {
		cur = l.Rows[l.Sel].Context
	}
	l.Rows = rows
	l.Sel = min(max(l.Sel, 0), max(len(rows)-1, 0))
	for i, r := range rows {
		if r.Context == cur {
			l.Sel = i
		}
	}
}

// Selected returns the selected context ("" when empty).
func (l *List) Selected() string {
	if l.Sel >= 0 && l.Sel < len(l.Rows) {
		return l.Rows[l.Sel].Context
	}
	return ""
}

// Update moves the selection on up/down/top/bottom and returns the context
// to open on enter (open is "" otherwise).
func (l *List) Update(msg tea.KeyPressMsg, k pctx.KeyMap) (open string) {
	switch {
	case key.Matches(msg, k.Up):
		l.Sel = max(l.Sel-1, 0)
	case key.Matches(msg, k.Down):
		l.Sel = min(l.Sel+1, max(len(l.Rows)-1, 0))
	case key.Matches(msg, k.Top):
		l.Sel = 0
	case key.Matches(msg, k.Bottom):
		l.Sel = max(len(l.Rows)-1, 0)
	case key.Matches(msg, k.Detail):
		return l.Selected()
	}
	return ""
}

// Attention counts the rows whose cluster needs attention or is unreadable
// (the list's title uses it); a cluster still connecting is not counted.
func Attention(rows []Row) int {
	n := 0
	for _, r := range rows {
		if r.Exit != 0 && !r.Connecting {
			n++
		}
	}
	return n
}

// Screen renders the whole cluster list as the root's body: a box of w×h
// cells titled "Clusters" with how many need attention in its top border,
// the rows inside, and a one-line hint at the bottom.
func Screen(ctx *pctx.Context, l *List, w, h int) []string {
	if w <= 0 || h <= 0 {
		return nil
	}
	p := ctx.P
	note := fmt.Sprintf("%d clusters", len(l.Rows))
	if n := Attention(l.Rows); n > 0 {
		note = fmt.Sprintf("%d of %d need attention", n, len(l.Rows))
	}
	inner := max(h-2, 0)
	bodyH := max(inner-2, 0)
	body := Render(ctx, l.Rows, l.Sel, max(w-2, 0), bodyH)
	if inner >= 2 {
		body = append(body, "", p.Paint(pctx.Muted, "↑/↓ select · enter open · esc back to this list · q quit"))
	}
	return pctx.Box(p, "Clusters", note, body, w, h)
}
