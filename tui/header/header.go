// Package header renders the dashboard's top lines: context and modes,
// a health pill per source, fleet progress with target OS and ETA, and the
// most urgent attention item. It is a pure function of its Data.
package header

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/tui/pctx"
)

// Data is what the header shows.
type Data struct {
	Context   string
	Fleet     model.Fleet
	Sources   []model.SourceHealth
	Attention []model.Attention
	// Blocker is what stops the fleet now: the attention line leads with it.
	Blocker      *model.FleetBlocker
	StreamClosed bool
	// Back says the dashboard is one cluster of a cluster list (esc goes
	// back to it).
	Back bool
	// Connecting says not every source has delivered its first picture:
	// the progress line then claims no upgrade count, since the nodes
	// read so far may be a part of the fleet.
	Connecting bool
}

// Render returns exactly h lines (1 to 3) of w cells.
func Render(ctx *pctx.Context, d Data, w, h int) []string {
	p := ctx.P
	compact := w < 110
	// Line 1: title, context, modes … source pills.
	left := p.Paint(pctx.Muted, "⎈ ") + p.Paint(pctx.Accent, sanitize.Line(d.Context))
	if w >= 80 {
		left = p.Paint(pctx.Title, "rebootwatch") + " " + left
	}
	var modes []string
	if ctx.Demo {
		modes = append(modes, p.Paint(pctx.Info, "[demo]"))
	}
	if ctx.ReadOnly {
		modes = append(modes, p.Paint(pctx.Warning, "[read-only]"))
	}
	if ctx.DryRun {
		modes = append(modes, p.Paint(pctx.Warning, "[dry-run]"))
	}
	if ctx.AllowUnsafe && !ctx.ReadOnly {
		modes = append(modes, p.Paint(pctx.Critical, "[allow-unsafe]"))
	}
	if d.StreamClosed {
		modes = append(modes, p.Paint(pctx.Critical, "[stream closed]"))
	}
	if d.Back {
		modes = append(modes, p.Paint(pctx.Muted, "‹ esc clusters"))
	}
	if len(modes) > 0 {
		left += " " + strings.Join(modes, " ")
	}
	pills := Pills(ctx, d.Sources, compact)
	line1 := left
	if gap := w - pctx.Width(left) - pctx.Width(pills); gap >= 1 {
		line1 = left + strings.Repeat(" ", gap) + pills
	} else if pctx.Width(left)+1 < w {
		line1 = left + " " + pctx.Trunc(pills, w-pctx.Width(left)-1)
	}
	lines := []string{line1, progress(ctx, d.Fleet, d.Connecting, w)}
	if h >= 3 {
		lines = append(lines, attention(ctx, d.Attention, d.Blocker, w))
	}
	return pctx.Lines(lines, w, h)
}

// shortNames are the compact pills' names; a source not listed (a lock
// kind added later) keeps its own name.
var shortNames = map[model.SourceName]string{model.SourceNodes: "nodes", model.SourceKured: "kured",
	model.SourceFleetlock: "fleet", model.SourceLonghorn: "lh", model.SourcePrometheus: "prom"}

// Pills renders one health pill per source.
func Pills(ctx *pctx.Context, sources []model.SourceHealth, compact bool) string {
	p := ctx.P
	var parts []string
	for _, s := range sources {
		name := string(s.Name)
		if short, ok := shortNames[s.Name]; compact && ok {
			name = short
		}
		var st string
		switch s.Status {
		case model.StatusOK:
			st = p.Paint(pctx.OK, "✓")
		case model.StatusStale:
			age := "?"
			if !s.LastSync.IsZero() {
				age = model.HumanDuration(ctx.Now.Sub(s.LastSync))
			}
			st = p.Paint(pctx.Warning, "stale "+age)
		case model.StatusError:
			st = p.Paint(pctx.Critical, "✗ error")
		case model.StatusForbidden:
			st = p.Paint(pctx.Critical, "✗ forbidden")
		case model.StatusNotInstalled:
			st = p.Paint(pctx.Muted, "not installed")
			if compact {
				st = p.Paint(pctx.Muted, "–")
			}
		case model.StatusDisabled:
			st = p.Paint(pctx.Muted, "off")
		default:
			st = p.Paint(pctx.Muted, string(s.Status))
		}
		if compact && s.Status == model.StatusOK {
			parts = append(parts, p.Paint(pctx.Muted, name)+st)
			continue
		}
		parts = append(parts, p.Paint(pctx.Muted, name)+" "+st)
	}
	if compact {
		return strings.Join(parts, " ")
	}
	return strings.Join(parts, p.Paint(pctx.Border, " │ "))
}

// Bar renders a progress bar of w cells for done/total.
func Bar(p pctx.Painter, done, total, w int) string {
	if w <= 0 {
		return ""
	}
	fill := 0
	if total > 0 {
		fill = done * w / total
	}
	return p.Paint(pctx.OK, strings.Repeat("█", fill)) + p.Paint(pctx.Border, strings.Repeat("░", w-fill))
}

func progress(ctx *pctx.Context, f model.Fleet, connecting bool, w int) string {
	p := ctx.P
	if connecting {
		return p.Paint(pctx.Muted, fmt.Sprintf("%d nodes read so far · progress not known until every source has delivered", f.Nodes))
	}
	pct := 0
	if f.Nodes > 0 {
		pct = f.Upgraded * 100 / f.Nodes
	}
	count := fmt.Sprintf("%d/%d upgraded (%d%%)", f.Upgraded, f.Nodes, pct)
	target := ""
	if t := f.Target.String(); t != "" {
		target = " → " + sanitize.Short(t, 80)
	}
	if n := len(f.Families); n > 1 {
		// Several OS families, each with its own target: the main one
		// here, the others per node (OS column, detail).
		target = " → " + sanitize.Short(f.Families[0].Family+": "+f.Target.String(), 80) + fmt.Sprintf(" (+%d more OS families)", n-1)
	}
	eta := "ETA –"
	if f.ETA != nil {
		eta = "ETA " + model.HumanDuration(*f.ETA)
	}
	var phases []string
	for _, ph := range []model.Phase{model.PhaseDraining, model.PhaseRebooting, model.PhaseRecovering, model.PhasePending, model.PhaseDown, model.PhaseDone} {
		if n := f.Phases[ph]; n > 0 {
			phases = append(phases, p.Phase(ph, strconv.Itoa(n)+" "+string(ph)))
		}
	}
	barW := 20
	if w < 110 {
		barW = 10
	}
	line := Bar(p, f.Upgraded, f.Nodes, barW) + " " + p.Paint(pctx.Bold, count) +
		p.Paint(pctx.Muted, " · ") + p.Paint(pctx.Text, eta)
	if len(phases) > 0 {
		line += p.Paint(pctx.Muted, " · ") + strings.Join(phases, " ")
	}
	return line + p.Paint(pctx.Muted, " · target") + p.Paint(pctx.Accent, target)
}

// attention is the header's third line: the fleet's blocker first (what
// stops progress now, with how many other nodes are blocked), then the most
// urgent attention item. A blocker of the fleet as a whole (reboot-required
// unknown: nothing to do as far as can be told) follows the attention item
// instead: it stops no node.
//
// Each item carries its own count ("(+2 more blocked)", "(+1 more)") behind
// its text, and the line is cut at item boundaries: the first item is cut
// inside its text (its count stays), the second shows only when some of its
// text fits, else its count is said in words ("✗ 2 need attention").
func attention(ctx *pctx.Context, items []model.Attention, b *model.FleetBlocker, w int) string {
	p := ctx.P
	type part struct {
		role              pctx.Role
		mark, text, count string
		attention         bool
	}
	var blocked part
	if b != nil {
		blocked = part{role: pctx.Warning, mark: "■ ", text: sanitize.Short(b.Reason, 300)}
		if b.Others > 0 {
			blocked.count = fmt.Sprintf(" (+%d more blocked)", b.Others)
		}
	}
	item := part{role: pctx.OK, mark: "✓ ", text: "nothing needs attention"}
	if len(items) > 0 {
		a := items[0]
		item = part{role: pctx.ToneRole(a.Severity.Tone()), mark: pctx.Mark(a.Severity), text: sanitize.Short(a.Message, 300), attention: true}
		if len(items) > 1 {
			item.count = fmt.Sprintf(" (+%d more)", len(items)-1)
		}
	}
	var parts []part
	switch {
	case b == nil:
		parts = []part{item}
	case b.Node == "":
		parts = []part{item, blocked}
	case len(items) == 0:
		parts = []part{blocked}
	default:
		parts = []part{blocked, item}
	}
	render := func(x part, room int) string {
		return p.Paint(x.role, x.mark+pctx.Trunc(x.text, room)) + p.Paint(pctx.Muted, x.count)
	}
	full := func(x part) int { return pctx.Width(x.mark) + pctx.Width(x.text) + pctx.Width(x.count) }
	const sep = " · "
	first := parts[0]
	room := w - pctx.Width(first.mark) - pctx.Width(first.count)
	var note string
	if len(parts) == 2 && parts[1].attention {
		note = fmt.Sprintf("%s%d need attention", parts[1].mark, len(items))
		// A first item cut anyway gives the second's note room when it
		// keeps enough of its own text (48 cells: a window blocker's
		// "opens in" on an 80-column line comes first).
		if r := room - pctx.Width(sep) - pctx.Width(note); full(first) > w && r >= 48 {
			room = r
		}
	}
	line := render(first, room)
	if len(parts) == 1 {
		return line
	}
	second := parts[1]
	left := w - pctx.Width(line) - pctx.Width(sep)
	if room := left - pctx.Width(second.mark) - pctx.Width(second.count); room >= min(pctx.Width(second.text), 16) {
		return line + p.Paint(pctx.Muted, sep) + render(second, room)
	}
	if note != "" && pctx.Width(note) <= left {
		return line + p.Paint(pctx.Muted, sep) + p.Paint(second.role, note)
	}
	return line
}

// Age is "updated Ns ago" for a source's last sync.
func Age(now, last time.Time) string {
	if last.IsZero() {
		return "never updated"
	}
	return "updated " + model.HumanDuration(now.Sub(last)) + " ago"
}
