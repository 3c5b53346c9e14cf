// Package dialog is the confirm dialog of a lock action: it shows the lock,
// the verdict, every gate with pass/fail and the exact write, defaults to
// "No", ignores keystrokes for IgnoreFor after opening (so a key meant for
// the screen underneath never confirms), confirms an allowed action with y
// (or Yes and enter), and asks for the holder's name before overriding
// failed gates when --allow-unsafe is on. On a short screen it shortens the
// reasons to one line before it shortens the write.
//
// It holds no I/O: the root turns a Confirm result into a command.
package dialog

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/tui/locks"
	"github.com/rebootwatch/rebootwatch/tui/pctx"
)

// IgnoreFor is how long keystrokes are ignored after the dialog opens.
const IgnoreFor = 400 * time.Millisecond

// Result is what a keystroke did.
type Result int

// Results.
const (
	None    Result = iota // still open
	Cancel                // closed, nothing done
	Confirm               // closed, run the action
	Refused               // closed: the gates refuse and no override was given
)

// Dialog is an open confirm dialog.
type Dialog struct {
	Plan     lock.Plan
	OpenedAt time.Time
	// Yes is true when the "Yes" button has the focus (default false: No).
	Yes bool
	// Typed is what the operator typed to confirm an unsafe override.
	Typed       string
	DryRun      bool
	AllowUnsafe bool
}

// New opens a dialog for a plan at now.
func New(p lock.Plan, now time.Time, dryRun, allowUnsafe bool) *Dialog {
	return &Dialog{Plan: p, OpenedAt: now, DryRun: dryRun, AllowUnsafe: allowUnsafe}
}

// Unsafe reports whether confirming overrides failed gates.
func (d *Dialog) Unsafe() bool { return !d.Plan.Allowed }

// overridable reports whether the failed gates may be overridden here.
func (d *Dialog) overridable() bool {
	return !d.Plan.Allowed && d.AllowUnsafe && !d.Plan.Unattended && d.Plan.Write.Op != ""
}

// Expected is the text to type to unlock an override: the holder's node
// name when it maps to one, else the raw holder id.
func (d *Dialog) Expected() string {
	if n := d.Plan.Status.HolderNode(); n != "" {
		return n
	}
	return d.Plan.Status.Holder
}

// canYes reports whether "Yes" may be chosen now.
func (d *Dialog) canYes() bool {
	if d.Plan.Allowed {
		return true
	}
	return d.overridable() && d.Typed == d.Expected()
}

// Key handles one keystroke (its String() and typed Text) at now.
func (d *Dialog) Key(k, text string, now time.Time) Result {
	if now.Sub(d.OpenedAt) < IgnoreFor {
		return None
	}
	if k == "esc" || k == "ctrl+c" {
		return Cancel
	}
	if d.overridable() {
		switch k {
		case "backspace":
			if d.Typed != "" {
				r := []rune(d.Typed)
				d.Typed = string(r[:len(r)-1])
			}
			d.Yes = d.Yes && d.canYes()
		case "tab", "left", "right", "shift+tab":
			d.Yes = !d.Yes && d.canYes()
		case "enter":
			if d.Yes && d.canYes() {
				return Confirm
			}
			return Cancel
		default:
			if text != "" {
				d.Typed += text
				d.Yes = d.Yes && d.canYes()
			}
		}
		return None
	}
	if !d.Plan.Allowed {
		switch k {
		case "enter", "y":
			return Refused
		case "n", "q":
			return Cancel
		}
		return None
	}
	switch k {
	case "left", "right", "h", "l", "tab", "shift+tab":
		d.Yes = !d.Yes
	case "y", "Y":
		// y confirms at once, as crush's dialogs and the CLI's [y/N]
		// prompt do: the dialog has shown every gate and the write, and
		// IgnoreFor keeps a key meant for the screen beneath from it.
		return Confirm
	case "n", "q":
		return Cancel
	case "enter":
		if d.Yes {
			return Confirm
		}
		return Cancel
	}
	return None
}

func title(a model.Action) string {
	switch a {
	case model.ActionReap:
		return "Reap lock?"
	case model.ActionUncordon:
		return "Uncordon node?"
	}
	return "Release lock?"
}

// layout is how much of each part the dialog shows: Render takes the
// first of layouts that fits the screen's height.
type layout struct {
	reason, gate, write, then int  // most lines of each (a gate: per gate)
	blank                     bool // a blank line above the buttons
	merged                    bool // the verdict on the lock's line
}

// layouts, fullest first. The first wraps every text whole (as far as
// sanitize.Short bounds a hostile one): a screen with the room shows the
// state, each gate's reason and the write in full, never cut with "…". The
// smaller ones shorten the reason and the gates' reasons to one line each
// (the lock's detail has them whole) before they shorten what Yes would
// write: on an 80x24 terminal every gate and the whole write show.
var layouts = []layout{
	{reason: 12, gate: 8, write: 12, then: 8, blank: true},
	{reason: 3, gate: 3, write: 8, then: 6, blank: true},
	{reason: 1, gate: 1, write: 8, then: 6, blank: true},
	{reason: 1, gate: 1, write: 8, then: 6, merged: true},
	{reason: 1, gate: 1, write: 4, then: 3, merged: true},
}

// Render draws the dialog box, at most w cells wide and h lines high.
func (d *Dialog) Render(ctx *pctx.Context, w, h int) []string {
	p := ctx.P
	bw := min(w, 92)
	inner := bw - 4
	if inner < 10 || h < 5 {
		return pctx.Box(p, title(d.Plan.Action), "", []string{" esc cancels"}, bw, min(h, 3))
	}
	var body []string
	tailFrom := 0
	for _, l := range layouts {
		body, tailFrom = d.body(p, inner, l)
		if len(body) <= h-2 {
			break
		}
	}
	// Still too tall: hide lines from the middle (reason, gates) with a
	// marker saying so, and keep the write(s) and the buttons; if even
	// those do not fit, keep the end.
	if room := h - 2; len(body) > room {
		tail := body[tailFrom:]
		keep := room - 1 - len(tail)
		if keep < 0 {
			keep = 0
			tail = tail[len(tail)-(room-1):]
		}
		marker := " " + p.Paint(pctx.Warning, pctx.Fit(fmt.Sprintf("… %d lines hidden: a taller terminal shows them", len(body)-len(tail)-keep), max(inner, 1)))
		body = append(append(body[:keep:keep], marker), tail...)
	}
	note := ""
	if d.DryRun {
		note = "dry-run"
	}
	return pctx.Box(p, title(d.Plan.Action), note, body, bw, len(body)+2)
}

// body is the dialog's lines in a layout, and where the part that is never
// hidden (the write, the refusal, the buttons) starts.
func (d *Dialog) body(p pctx.Painter, inner int, lay layout) ([]string, int) {
	var body []string
	add := func(s string) { body = append(body, " "+s) }
	wrapped := func(label string, role pctx.Role, s string, most int) {
		// Cluster text enters the dialog here, sanitised and bounded: a
		// 200,000-character holder must not push the gates and the write
		// away. Wrap at spaces, slashes and commas; cut words longer than a
		// line; past most lines keep the first ones and the last (where a
		// write says its precondition).
		width := max(inner-len(label), 8)
		s = sanitize.Short(s, most*width)
		lines := []string{pctx.Trunc(s, width)}
		if most > 1 {
			lines = strings.Split(ansi.Wrap(s, width, " /,"), "\n")
		}
		if len(lines) > most {
			lines = append(append(lines[:most-2:most-2], "…"), lines[len(lines)-1])
		}
		for i, l := range lines {
			lead := label
			if i > 0 {
				lead = strings.Repeat(" ", len(label))
			}
			add(p.Paint(pctx.Muted, lead) + p.Paint(role, l))
		}
	}
	st := d.Plan.Status
	if d.Plan.Action == model.ActionUncordon {
		wrapped("node     ", pctx.Bold, st.Holder, 2)
		wrapped("state    ", pctx.Text, st.Reason, lay.reason)
	} else {
		lockText := string(st.Kind) + " " + st.Namespace + "/" + st.Name
		if lay.merged {
			add(p.Paint(pctx.Muted, "lock     ") + p.Paint(pctx.Text, pctx.Trunc(sanitize.Line(lockText), max(inner-9-3-pctx.Width(string(st.Verdict)), 8))) +
				p.Paint(pctx.Muted, " · ") + p.Verdict(st.Verdict, string(st.Verdict)))
		} else {
			wrapped("lock     ", pctx.Text, lockText, 2)
		}
		wrapped("holder   ", pctx.Bold, locks.HolderFull(st), 2)
		if !lay.merged {
			add(p.Paint(pctx.Muted, "verdict  ") + p.Verdict(st.Verdict, string(st.Verdict)))
		}
		wrapped("reason   ", pctx.Text, st.Reason, lay.reason)
	}
	add(p.Paint(pctx.Muted, "gates"))
	for _, g := range d.Plan.Gates {
		mark, role := "✓", pctx.OK
		if !g.Passed {
			mark, role = "✗", pctx.Critical
		}
		width := max(inner-17, 8)
		reason := []string{pctx.Trunc(sanitize.Line(g.Reason), width)}
		if lay.gate > 1 {
			reason = strings.Split(ansi.Wrap(sanitize.Short(g.Reason, (lay.gate+1)*width), width, " /,"), "\n")
		}
		for i, l := range reason {
			if i == 0 {
				add("  " + p.Paint(role, mark+" "+pctx.Fit(g.Name, 12)) + " " + p.Paint(pctx.Text, l))
				continue
			}
			if i == lay.gate-1 && len(reason) > lay.gate {
				add(strings.Repeat(" ", 17) + p.Paint(pctx.Muted, "…"))
				break
			}
			add(strings.Repeat(" ", 17) + p.Paint(pctx.Text, l))
		}
	}
	// From here on (the write, the refusal, the buttons) the dialog never
	// hides a line to fit a short screen: what Yes would do stays visible.
	tailFrom := len(body)
	write := d.Plan.Write.String()
	if d.DryRun {
		write = "DRY RUN, not written: " + write
	}
	wrapped("write    ", pctx.Accent, write, lay.write)
	if u := d.Plan.Uncordon; u.Op != "" {
		then := u.String()
		if d.DryRun {
			then = "DRY RUN, not written: " + then
		}
		wrapped("then     ", pctx.Accent, then, lay.then)
	}
	if lay.blank {
		body = append(body, "")
	}
	hint := "y confirm · n/esc cancel · ←/→ choose · enter selected"
	switch {
	case d.Plan.Allowed:
	case d.overridable():
		wrapped("refused  ", pctx.Critical, d.Plan.Refusal, 3)
		add(p.Paint(pctx.Warning, "--allow-unsafe: type ") + p.Paint(pctx.Bold, sanitize.Short(d.Expected(), 40)) + p.Paint(pctx.Warning, " to override the failed gates"))
		field := sanitize.Short(d.Typed, max(inner-4, 1)) + "█"
		role := pctx.Critical
		if d.Typed == d.Expected() {
			role = pctx.OK
		}
		add("> " + p.Paint(role, field))
		hint = "tab choose · enter confirm · esc cancel"
	default:
		wrapped("refused  ", pctx.Critical, d.Plan.Refusal, 3)
		for _, l := range strings.Split(ansi.Wordwrap("nothing will be written; with --allow-unsafe the failed gates can be overridden after typing the holder's name", inner, " "), "\n") {
			add(p.Paint(pctx.Muted, l))
		}
		hint = "enter/esc close"
	}
	body = append(body, buttons(p, d, inner))
	add(p.Paint(pctx.Muted, hint))
	return body, tailFrom
}

func buttons(p pctx.Painter, d *Dialog, inner int) string {
	no := "[ No ]"
	yes := "[ Yes ]"
	if d.Unsafe() {
		yes = "[ Yes, unsafe ]"
	}
	noS, yesS := p.Paint(pctx.Text, no), p.Paint(pctx.Muted, yes)
	if !d.Yes {
		noS = p.Paint(pctx.Selected, no)
	} else {
		yesS = p.Paint(pctx.Selected, yes)
	}
	if !d.canYes() {
		yesS = p.Paint(pctx.Faint, yes)
	}
	s := noS + "   " + yesS
	pad := max((inner-pctx.Width(s))/2, 0)
	return strings.Repeat(" ", pad) + s
}
