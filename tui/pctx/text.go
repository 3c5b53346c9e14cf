package pctx

import (
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/rebootwatch/rebootwatch/internal/sanitize"
)

// Width is the display width of s (ANSI sequences ignored).
func Width(s string) int { return width(s) }

// narrow reports whether r is one of the non-ASCII runes the dashboard
// draws that are always one cell wide (box drawing, blocks, geometric
// shapes, arrows, check marks, ellipsis, middle dot).
func narrow(r rune) bool {
	return (r >= 0x2500 && r <= 0x25FF) || (r >= 0x2190 && r <= 0x21FF) ||
		r == 0x00B7 || r == 0x2026 || r == 0x2713 || r == 0x2717 || r == 0x00D7 || r == 0x2014 || r == 0x2013
}

// width is ansi.StringWidth with a fast path: strings made of ASCII, SGR
// sequences and the narrow runes above are measured by a byte scan, which
// matters because every visible line is measured several times per frame.
// Anything else (wide or combining characters) takes the exact path.
func width(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 0x1b:
			// CSI: ESC [ params final(0x40-0x7E)
			if i+1 < len(s) && s[i+1] == '[' {
				j := i + 2
				for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
					j++
				}
				i = j + 1
				continue
			}
			return ansi.StringWidth(s)
		case c < 0x20 || c == 0x7f:
			return ansi.StringWidth(s)
		case c < 0x80:
			n++
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if !narrow(r) {
				return ansi.StringWidth(s)
			}
			n++
			i += size
		}
	}
	return n
}

// Fit truncates plain or painted s to w cells (with an ellipsis) and pads it
// with spaces to exactly w cells.
//
// Fit, Trunc and FitLeft are the dashboard's safety net: every cell and line
// passes through one of them, so they run sanitize.Styled first. A control
// character that reached them (a cluster string some renderer did not
// sanitise) is shown escaped and measured as such: it cannot break a line,
// move the cursor or set the title. Only SGR styling passes.
func Fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	s = sanitize.Styled(s)
	n := width(s)
	if n > w {
		s = truncate(s, w)
		n = width(s)
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
	s = sanitize.Styled(s)
	if width(s) <= w {
		return s
	}
	return truncate(s, w)
}

// truncate cuts s to w cells ending in "…"; plain ASCII is cut by bytes.
func truncate(s string, w int) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || c < 0x20 || c == 0x7f {
			return ansi.Truncate(s, w, "…")
		}
	}
	if w <= 1 {
		return ansi.Truncate(s, w, "…")
	}
	return s[:w-1] + "…"
}

// FitLeft is Fit for right-aligned cells.
func FitLeft(s string, w int) string {
	if w <= 0 {
		return ""
	}
	s = sanitize.Styled(s)
	n := width(s)
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
			line = body[i] // Fit shows a line break in it escaped
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
