package nodes

import (
	"strconv"
	"strings"
	"time"

	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/tui/pctx"
)

type column struct {
	title string
	w     int
	flex  int // share of the remaining width; 0 = fixed
	min   int
	max   int
	cell  func(p pctx.Painter, r *Row, now time.Time, w int) (plain, painted string)
}

func layout(width int) []column {
	name := column{title: "NAME", flex: 3, min: 10, max: 32, cell: cellName}
	var cols []column
	switch {
	case width >= 130:
		cols = []column{name,
			{title: "ROLE", w: 13, cell: cellRole},
			{title: "PROGRESS", w: 9, cell: cellStepper},
			{title: "PHASE", w: 16, cell: cellPhase},
			{title: "WAITING FOR", flex: 3, min: 14, max: 40, cell: cellWait},
			{title: "READY", w: 8, cell: cellReady},
			{title: "SCHED", w: 8, cell: cellSched},
			{title: "OS", flex: 4, min: 12, cell: cellOS},
			{title: "REBOOT", w: 6, cell: cellReboot},
			{title: "LOCK", w: 9, cell: cellLock},
		}
	case width >= 110:
		cols = []column{name,
			{title: "ROLE", w: 13, cell: cellRole},
			{title: "STEP", w: 5, cell: cellStepperShort},
			{title: "PHASE", w: 16, cell: cellPhase},
			{title: "WAITING FOR", w: 14, cell: cellWait},
			{title: "READY", w: 8, cell: cellReady},
			{title: "SCHED", w: 8, cell: cellSched},
			{title: "OS", flex: 4, min: 12, cell: cellOS},
			{title: "REBOOT", w: 6, cell: cellReboot},
			{title: "LOCK", w: 9, cell: cellLock},
		}
	case width >= 80:
		cols = []column{name,
			{title: "STEP", w: 5, cell: cellStepperShort},
			{title: "PHASE", w: 16, cell: cellPhase},
			{title: "WAITING FOR", w: 13, cell: cellWait},
			{title: "READY", w: 8, cell: cellReady},
			{title: "SCHED", w: 8, cell: cellSched},
			{title: "REBOOT", w: 6, cell: cellReboot},
			{title: "LOCK", w: 9, cell: cellLock},
		}
	default:
		cols = []column{name,
			{title: "STEP", w: 5, cell: cellStepperShort},
			{title: "PHASE", w: 14, cell: cellPhase},
			{title: "WAIT", w: 5, cell: cellWaitTag},
			{title: "READY", w: 8, cell: cellReady},
			{title: "SCHED", w: 5, cell: cellSchedShort},
			{title: "LOCK", w: 5, cell: cellLockShort},
		}
	}
	// Resolve widths: one space between columns; flexible columns share
	// what is left, capped at their max (the rest stays blank).
	fixed, flex := len(cols)-1, 0
	for _, c := range cols {
		fixed += c.w
		flex += c.flex
	}
	rest := width - fixed
	for i := range cols {
		if cols[i].flex > 0 {
			cols[i].w = max(rest*cols[i].flex/max(flex, 1), cols[i].min)
			if cols[i].max > 0 {
				cols[i].w = min(cols[i].w, cols[i].max)
			}
		}
	}
	if left := width - total(cols); left > 0 {
		// Give the OS column what the capped name column left over.
		for i := range cols {
			if cols[i].title == "OS" {
				cols[i].w += left
			}
		}
	}
	// Too narrow: drop columns from the right until the rest fits.
	for len(cols) > 1 && total(cols) > width {
		cols = cols[:len(cols)-1]
	}
	if len(cols) == 1 {
		cols[0].w = width
	}
	return cols
}

func total(cols []column) int {
	t := len(cols) - 1
	for _, c := range cols {
		t += c.w
	}
	return t
}

// Render draws the table into exactly h lines of w cells: a header line and
// the visible rows only.
func Render(ctx *pctx.Context, t *Table, w, h int, focused bool) []string {
	if w <= 0 || h <= 0 {
		return nil
	}
	p := ctx.P
	cols := layout(w)
	out := make([]string, 0, h)
	var sb strings.Builder
	for i, c := range cols {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(pctx.Fit(c.title, c.w))
	}
	out = append(out, p.Paint(pctx.Muted, pctx.Fit(sb.String(), w)))
	if len(t.rows) == 0 {
		msg := "no nodes yet: waiting for the node list…"
		if t.Total() > 0 {
			msg = "no node matches the filter \"" + t.Filter + "\""
		}
		out = append(out, p.Paint(pctx.Muted, pctx.Fit(msg, w)))
		return pctx.Lines(out, w, h)
	}
	end := min(t.Offset+h-1, len(t.rows))
	for i := t.Offset; i < end; i++ {
		r := &t.rows[i]
		sb.Reset()
		sel := i == t.Cursor
		for j, c := range cols {
			if j > 0 {
				sb.WriteByte(' ')
			}
			plain, painted := c.cell(p, r, ctx.Now, c.w)
			if sel {
				sb.WriteString(pctx.Fit(plain, c.w))
			} else {
				sb.WriteString(painted)
				if pad := c.w - pctx.Width(plain); pad > 0 {
					sb.WriteString(strings.Repeat(" ", pad))
				}
			}
		}
		line := sb.String()
		if sel {
			role := pctx.Selected
			if !focused {
				role = pctx.Bold
			}
			line = p.Paint(role, pctx.Fit(line, w))
		} else if n := total(cols); n < w {
			line += strings.Repeat(" ", w-n)
		}
		out = append(out, line)
	}
	return pctx.Lines(out, w, h)
}

// fit returns plain text fitted (truncated, not padded) and its painted form.
func fit(p pctx.Painter, role pctx.Role, s string, w int) (string, string) {
	s = pctx.Trunc(s, w)
	return s, p.Paint(role, s)
}

func cellName(p pctx.Painter, r *Row, _ time.Time, w int) (string, string) {
	role := pctx.Text
	if r.Phase.InCycle() {
		role = pctx.Bold
	}
	return fit(p, role, r.label, w)
}

func cellRole(p pctx.Painter, r *Row, _ time.Time, w int) (string, string) {
	return fit(p, pctx.Muted, r.Role, w)
}

// Stepper glyphs: a finished step, the current one, one still to come.
const (
	glyphDone    = "●"
	glyphCurrent = "◉"
	glyphTodo    = "○"
)

func stepper(p pctx.Painter, r *Row, sep string) (string, string) {
	cur := r.Phase.Step()
	var plain, painted strings.Builder
	for i := range model.CycleSteps {
		if i > 0 && sep != "" {
			plain.WriteString(sep)
			painted.WriteString(p.Paint(pctx.Muted, sep))
		}
		switch {
		case cur < 0:
			plain.WriteString(glyphTodo)
			painted.WriteString(p.Paint(pctx.Muted, glyphTodo))
		case i < cur:
			plain.WriteString(glyphDone)
			painted.WriteString(p.Phase(model.PhaseDone, glyphDone))
		case i == cur && r.Phase == model.PhaseDone:
			plain.WriteString(glyphDone)
			painted.WriteString(p.Phase(model.PhaseDone, glyphDone))
		case i == cur:
			plain.WriteString(glyphCurrent)
			painted.WriteString(p.Phase(r.Phase, glyphCurrent))
		default:
			plain.WriteString(glyphTodo)
			painted.WriteString(p.Paint(pctx.Muted, glyphTodo))
		}
	}
	return plain.String(), painted.String()
}

func cellStepper(p pctx.Painter, r *Row, _ time.Time, _ int) (string, string) {
	return stepper(p, r, "─")
}

func cellStepperShort(p pctx.Painter, r *Row, _ time.Time, _ int) (string, string) {
	return stepper(p, r, "")
}

func cellPhase(p pctx.Painter, r *Row, now time.Time, w int) (string, string) {
	s := string(r.Phase)
	if r.StillCordoned {
		s += " · still cordoned"
		if pctx.Width(s) > w {
			s = string(r.Phase) + " · cordoned"
		}
		s = pctx.Trunc(s, w)
		return s, p.Paint(pctx.Warning, s)
	}
	if !r.Since.IsZero() && r.Phase != model.PhaseIdle {
		s += " " + model.HumanDuration(now.Sub(r.Since))
	}
	s = pctx.Trunc(s, w)
	return s, p.Phase(r.Phase, s)
}

// cellWait shows what the node waits for first, with "+N" when it waits
// for more; plain queueing (a lock held by a node in a normal cycle) is
// muted, a stall is a warning.
func cellWait(p pctx.Painter, r *Row, _ time.Time, w int) (string, string) {
	if r.Wait == "" {
		return "", ""
	}
	more := ""
	if r.WaitMore > 0 {
		more = " +" + strconv.Itoa(r.WaitMore)
	}
	s := pctx.Trunc(r.Wait, max(w-pctx.Width(more), 1)) + more
	s = pctx.Trunc(s, w)
	return s, p.Paint(waitRole(r), s)
}

// waitTags are the condensed "waiting for" of the smallest layout.
var waitTags = map[model.BlockerKind]string{
	model.BlockerCordon: "cord", model.BlockerSlowReboot: "slow", model.BlockerDrain: "drain",
	model.BlockerReleaseDelay: "delay", model.BlockerWindow: "win", model.BlockerAlert: "alert",
	model.BlockerPod: "pod", model.BlockerLock: "lock", model.BlockerLonghorn: "lh", model.BlockerUnknown: "?",
}

func cellWaitTag(p pctx.Painter, r *Row, _ time.Time, w int) (string, string) {
	if r.Wait == "" {
		return "", ""
	}
	tag, ok := waitTags[r.WaitKind]
	if !ok {
		tag = "?"
	}
	s := pctx.Trunc(tag, w)
	return s, p.Paint(waitRole(r), s)
}

func waitRole(r *Row) pctx.Role {
	if r.WaitStalls {
		return pctx.Warning
	}
	return pctx.Muted
}

func cellReady(p pctx.Painter, r *Row, _ time.Time, w int) (string, string) {
	switch {
	case !r.ReadyKnown:
		return fit(p, pctx.Muted, "?", w)
	case r.Ready:
		return fit(p, pctx.OK, "Ready", w)
	}
	return fit(p, pctx.Critical, "NotReady", w)
}

func cellSched(p pctx.Painter, r *Row, _ time.Time, w int) (string, string) {
	if r.Cordoned {
		return fit(p, pctx.Warning, "cordoned", w)
	}
	return fit(p, pctx.Muted, "·", w)
}

func cellSchedShort(p pctx.Painter, r *Row, _ time.Time, w int) (string, string) {
	if r.Cordoned {
		return fit(p, pctx.Warning, "cord", w)
	}
	return fit(p, pctx.Muted, "·", w)
}

func cellOS(p pctx.Painter, r *Row, _ time.Time, w int) (string, string) {
	if r.OSTo == "" {
		s := pctx.Trunc("✓ "+r.OSFrom, w)
		return s, p.Paint(pctx.OK, s)
	}
	// Show as much of both ends as fits: "from → to".
	arrow := " → "
	room := w - pctx.Width(arrow)
	if room < 4 {
		return fit(p, pctx.Muted, r.OSFrom, w)
	}
	to := pctx.Trunc(r.OSTo, max(room/2, room-pctx.Width(r.OSFrom)))
	from := pctx.Trunc(r.OSFrom, room-pctx.Width(to))
	plain := from + arrow + to
	return plain, p.Paint(pctx.Muted, from+arrow) + p.Paint(pctx.Accent, to)
}

func cellReboot(p pctx.Painter, r *Row, _ time.Time, w int) (string, string) {
	switch {
	case !r.RebootKnown:
		return fit(p, pctx.Muted, "?", w)
	case r.RebootReq:
		return fit(p, pctx.Warning, "yes", w)
	}
	return fit(p, pctx.Muted, "no", w)
}

func cellLock(p pctx.Painter, r *Row, _ time.Time, w int) (string, string) {
	if r.Lock == "" {
		return "", ""
	}
	return fit(p, pctx.Accent, string(r.Lock), w)
}

func cellLockShort(p pctx.Painter, r *Row, _ time.Time, w int) (string, string) {
	if r.Lock == "" {
		return "", ""
	}
	return fit(p, pctx.Accent, "lock", w)
}

// Summary is the table title's note: counts, sort and filter.
func Summary(t *Table) string {
	s := strconv.Itoa(len(t.rows))
	if len(t.rows) != t.Total() {
		s += "/" + strconv.Itoa(t.Total())
	}
	s += " nodes · sort: " + t.Sort.String()
	if t.Filter != "" {
		s += " · filter: " + t.Filter
	}
	return s
}
