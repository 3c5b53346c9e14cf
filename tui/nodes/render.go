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
	min   int // narrowest it may be cut to when nothing else is left to give
	cell  func(p pctx.Painter, r *Row, now time.Time, w int) (plain, painted string)
}

// widths is what each column's content needs, measured over every row by
// Rebuild at its time (the dashboard rebuilds on every tick, so a phase
// time is measured as it is shown).
type widths struct {
	name, role, phase, wait, ready, sched, os, lock int
	distro                                          string // the one distribution, "" when none
	mixed                                           bool   // more than one distribution
}

// measure computes t.widths from t.all at now.
func (t *Table) measure(now time.Time) {
	w := widths{name: 4, role: 4, phase: 5, wait: 11, ready: 5, sched: 5, os: 2, lock: 4}
	distros := map[string]bool{}
	for i := range t.all {
		r := &t.all[i]
		w.name = max(w.name, pctx.Width(r.label))
		w.role = max(w.role, pctx.Width(r.Role))
		// As cellPhase shows it, counted without building it (a tick
		// measures every row).
		ph := pctx.Width(string(r.Phase))
		switch {
		case r.StillCordoned:
			ph += pctx.Width(" · still cordoned")
		case !r.Since.IsZero() && r.Phase != model.PhaseIdle:
			ph += 1 + len(model.HumanDuration(now.Sub(r.Since)))
		}
		w.phase = max(w.phase, ph)
		w.wait = max(w.wait, waitWidth(r))
		if r.ReadyKnown && !r.Ready {
			w.ready = max(w.ready, pctx.Width("NotReady"))
		}
		if r.Cordoned {
			w.sched = max(w.sched, pctx.Width("cordoned"))
		}
		if r.Lock != "" {
			w.lock = max(w.lock, pctx.Width(string(r.Lock)))
		}
		distros[r.OSDistro] = true
	}
	if len(distros) == 1 {
		for d := range distros {
			w.distro = d
		}
	}
	w.mixed = len(distros) > 1
	for i := range t.all {
		w.os = max(w.os, osWidth(&t.all[i], w.mixed))
	}
	t.widths = w
}

func waitWidth(r *Row) int {
	if r.Wait == "" {
		return 0
	}
	n := pctx.Width(r.Wait)
	if r.WaitMore > 0 {
		n += 1 + len("+"+strconv.Itoa(r.WaitMore))
	}
	return n
}

// osTitle is the OS column's title: the distribution once, when every
// node runs the same one.
// short keeps the distribution's first word ("OS (Flatcar)").
func (w widths) osTitle(short bool) string {
	switch {
	case w.mixed:
		return "OS (mixed)"
	case w.distro != "" && short:
		return "OS (" + strings.Fields(w.distro)[0] + ")"
	case w.distro != "":
		return "OS (" + w.distro + ")"
	}
	return "OS"
}

// Column keys, for the layout's reductions.
const (
	colName = iota
	colRole
	colProgress
	colPhase
	colWait
	colReady
	colSched
	colOS
	colReboot
	colLock
)

// layout picks the columns for a table width from what their contents
// need: every column as wide as its widest cell (NAME as its longest name,
// the OS column its versions); when that does not fit, the least needed
// give way one at a time — the long stepper shortens, the OS title keeps
// the distribution's first word, ROLE goes, SCHED
// and LOCK shorten, the stepper goes (PHASE says it), then LOCK, REBOOT,
// OS (its versions are never cut: the column goes whole; the detail has
// them) and SCHED, and READY shortens to a mark (✓ ✗ ?). Only when NAME, PHASE, WAITING FOR and READY alone do
// not fit are WAITING FOR and NAME cut.
func (t *Table) layout(width int) []column {
	tw := t.widths
	type slot struct {
		col  column
		on   bool
		full bool // the long form (PROGRESS, SCHED, LOCK)
	}
	osTitle := tw.osTitle(false)
	mixed := tw.mixed
	cols := [...]slot{
		colName:     {column{title: "NAME", w: tw.name, min: 10, cell: cellName}, true, true},
		colRole:     {column{title: "ROLE", w: min(tw.role, 16), cell: cellRole}, true, true},
		colProgress: {column{title: "PROGRESS", w: 9, cell: cellStepper}, true, true},
		colPhase:    {column{title: "PHASE", w: tw.phase, min: 10, cell: cellPhase}, true, true},
		colWait:     {column{title: "WAITING FOR", w: tw.wait, min: 14, cell: cellWait}, true, true},
		colReady:    {column{title: "READY", w: tw.ready, cell: cellReady}, true, true},
		colSched:    {column{title: "SCHED", w: tw.sched, cell: cellSched}, true, true},
		colOS: {column{title: osTitle, w: max(tw.os, pctx.Width(osTitle)), cell: func(p pctx.Painter, r *Row, _ time.Time, w int) (string, string) {
			plain, painted := osCell(p, r, mixed)
			if pctx.Width(plain) > w {
				return fit(p, pctx.Muted, plain, w)
			}
			return plain, painted
		}}, true, true},
		colReboot: {column{title: "REBOOT", w: 6, cell: cellReboot}, true, true},
		colLock:   {column{title: "LOCK", w: tw.lock, cell: cellLock}, true, true},
	}
	if tw.distro == "" && !mixed && tw.os <= 2 {
		cols[colOS].on = false // no OS known at all
	}
	sum := func() int {
		n, k := 0, 0
		for _, c := range cols {
			if c.on {
				n += c.col.w
				k++
			}
		}
		return n + max(k-1, 0)
	}
	steps := []func(){
		func() { cols[colProgress].col = column{title: "STEP", w: 5, cell: cellStepperShort} },
		func() {
			cols[colOS].col.title = tw.osTitle(true)
			cols[colOS].col.w = max(tw.os, pctx.Width(cols[colOS].col.title))
		},
		func() { cols[colRole].on = false },
		func() { cols[colSched].col = column{title: "SCHED", w: 5, cell: cellSchedShort} },
		func() { cols[colLock].col = column{title: "LOCK", w: 4, cell: cellLockShort} },
		func() { cols[colProgress].on = false },
		func() { cols[colLock].on = false },
		func() { cols[colReboot].on = false },
		func() { cols[colOS].on = false },
		func() { cols[colSched].on = false },
		func() { cols[colReady].col = column{title: "RDY", w: 3, cell: cellReadyShort} },
	}
	for _, step := range steps {
		if sum() <= width {
			break
		}
		step()
	}
	// Still too wide: cut WAITING FOR, then NAME, then PHASE to their
	// minimum, then drop columns from the right.
	for _, k := range []int{colWait, colName, colPhase} {
		if over := sum() - width; over > 0 && cols[k].col.w > cols[k].col.min {
			cols[k].col.w = max(cols[k].col.w-over, cols[k].col.min)
		}
	}
	var out []column
	for _, c := range cols {
		if c.on {
			out = append(out, c.col)
		}
	}
	for len(out) > 1 && total(out) > width {
		out = out[:len(out)-1]
	}
	if len(out) == 1 {
		out[0].w = width
	}
	return out
}

// Width is how wide the table is with every column at its content's
// width: wider than that, the rest of the box stays blank.
func (t *Table) Width() int { return total(t.layout(1 << 16)) }

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
	cols := t.layout(w)
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

func cellReadyShort(p pctx.Painter, r *Row, _ time.Time, w int) (string, string) {
	switch {
	case !r.ReadyKnown:
		return fit(p, pctx.Muted, "?", w)
	case r.Ready:
		return fit(p, pctx.OK, "✓", w)
	}
	return fit(p, pctx.Critical, "✗", w)
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

// osWidth is how wide osCell's text is.
func osWidth(r *Row, mixed bool) int {
	n := pctx.Width(r.OSFrom)
	if mixed && r.OSDistro != "" {
		n += 1 + pctx.Width(r.OSDistro)
	}
	if r.OSTo == "" {
		return n + 2 // "✓ "
	}
	return n + 3 + pctx.Width(r.OSTo) // " → "
}

// osCell is the OS column's cell: the version, and the version it
// upgrades to ("24.04.3 → 24.04.4"; "✓ 24.04.4" when upgraded); with the
// distribution in front when the fleet runs more than one (the title names
// it otherwise). Never cut here: the layout gives it its width or drops it.
func osCell(p pctx.Painter, r *Row, mixed bool) (string, string) {
	from := r.OSFrom
	if mixed && r.OSDistro != "" {
		from = r.OSDistro + " " + from
	}
	if r.OSTo == "" {
		s := "✓ " + from
		return s, p.Paint(pctx.OK, s)
	}
	arrow := " → "
	return from + arrow + r.OSTo, p.Paint(pctx.Muted, from+arrow) + p.Paint(pctx.Accent, r.OSTo)
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
