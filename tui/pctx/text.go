package pctx

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Width is the display width of s (ANSI sequences ignored).
func Width(s string) int { return ansi.StringWidth(s) }

// Fit truncates plain or painted s to w cells (with an ellipsis) and pads it
// with spaces to exactly w cells.
func Fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := ansi.StringWidth(s)
	if n > w {
		s = ansi.Truncate(s, w, "…")
		n = ansi.StringWidth(s)
	}
	if n < w {
		s += strings.Repeat(" ", w-n)
	}
	return s
}

// Trunc truncates s to at most w cells without padding.
func Trunc(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if ansi.StringWidth(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

// FitLeft is Fit for right-aligned cells.
func FitLeft(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := ansi.StringWidth(s)
	if n > w {
		return ansi.Truncate(s, w, "…")
	}
	return strings.Repeat(" ", w-n) + s
}

// Lines makes exactly h lines of exactly w cells from ls (cutting or padding).
func Lines(ls []string, w, h int) []string {
	if h < 0 {
		h = 0
	}
	out := make([]string, h)
	for i := range out {
		if i < len(ls) {
			out[i] = Fit(ls[i], w)
		} else {
			out[i] = strings.Repeat(" ", max(w, 0))
		}
	}
	return out
}

// Box draws a rounded border of w×h cells around body lines, with a title
// (and an optional right-aligned note) in the top border. Body lines are
// fitted to w-2 cells; missing lines are blank.
func Box(p Painter, title, note string, body []string, w, h int) []string {
	if w < 2 || h < 2 {
		return Lines(body, max(w, 0), max(h, 0))
	}
	inner := w - 2
	out := make([]string, 0, h)
	// ╭─ Title ─── note ─╮
	t := ""
	if title != "" {
		t = "─ " + p.Paint(Title, Trunc(title, max(inner-3, 0))) + p.Prefix(Border) + " "
	}
	n := ""
	if note != "" {
		room := inner - Width(t) - 3
		if room > 3 {
			n = " " + p.Paint(Muted, Trunc(note, room)) + p.Prefix(Border) + " ─"
		}
	}
	fill := inner - Width(t) - Width(n)
	if fill < 0 {
		t, n, fill = "", "", inner
	}
	out = append(out, p.Paint(Border, "╭"+t+strings.Repeat("─", fill)+n+"╮"))
	side := p.Paint(Border, "│")
	for i := 0; i < h-2; i++ {
		line := ""
		if i < len(body) {
			line = body[i]
		}
		out = append(out, side+Fit(line, inner)+side)
	}
	out = append(out, p.Paint(Border, "╰"+strings.Repeat("─", inner)+"╯"))
	return out
}

// HJoin places blocks of lines side by side; every block must already have
// lines of its own fixed width. Shorter blocks are padded with blank lines
// of their width.
func HJoin(blocks ...[]string) []string {
	h := 0
	widths := make([]int, len(blocks))
	for i, b := range blocks {
		h = max(h, len(b))
		if len(b) > 0 {
			widths[i] = Width(b[0])
		}
	}
	out := make([]string, h)
	var sb strings.Builder
	for y := 0; y < h; y++ {
		sb.Reset()
		for i, b := range blocks {
			if y < len(b) {
				sb.WriteString(b[y])
			} else {
				sb.WriteString(strings.Repeat(" ", widths[i]))
			}
		}
		out[y] = sb.String()
	}
	return out
}

// Overlay draws the lines of top over base with top's left edge at column x
// and top edge at row y. Both are fitted to the screen width w.
func Overlay(base, top []string, x, y, w int) []string {
	out := append([]string(nil), base...)
	for i, tl := range top {
		row := y + i
		if row < 0 || row >= len(out) {
			continue
		}
		b := Fit(out[row], w)
		tw := Width(tl)
		if x+tw > w {
			tl = Trunc(tl, w-x)
			tw = Width(tl)
		}
		left := ansi.Truncate(b, x, "")
		right := ansi.TruncateLeft(b, x+tw, "")
		out[row] = left + Reset + tl + Reset + right
	}
	return out
}
