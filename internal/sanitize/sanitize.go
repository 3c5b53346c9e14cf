// Package sanitize is rebootwatch's one sanitiser for text that comes from a
// cluster or from Prometheus (holder ids, node names, OS images, kernels,
// reasons that embed them, volume names, label values) on its way to a
// terminal. A kubelet, or anyone who may write the kured DaemonSet or a
// fleetlock Lease, controls that text; printed raw, an ESC sequence could set
// the terminal's title, clear the screen or forge a line.
//
// Line shows every C0 and C1 control, DEL, ESC, invalid UTF-8, the bidi
// controls (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C) and the
// Unicode line and paragraph separators visibly escaped (\n, \x1b, \u202e…),
// so the result is always one line with no control byte. Short also
// shortens with "…". Styled is the renderers' safety net for strings that
// already carry their own styling: it keeps well-formed SGR sequences (colour
// and attributes only) and escapes everything else.
//
// MaskURL is the one masker of secrets in URLs (a password, query values
// such as ?token=) for every surface that shows one.
//
// It must stay a leaf: it imports nothing of ours (not even model), so every
// renderer (tui, report, watch, cli) can use it without an import cycle. It
// must not be applied to JSON output or to values used for actions: those
// need the exact bytes (JSON escapes them itself).
package sanitize

import (
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Ellipsis ends a shortened value.
const Ellipsis = "…"

// needs reports whether r must be escaped.
func needs(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f: // C1
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true // bidi embeddings, overrides, isolates and marks
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	}
	return false
}

// clean reports whether s needs no escaping at all; ASCII text is checked
// by a byte scan.
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return cleanSlow(s, i)
		}
	}
	return true
}

func cleanSlow(s string, from int) bool {
	for i := from; i < len(s); {
		c := s[i]
		if c < 0x80 {
			if c < 0x20 || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			return false
		}
		if needs(r) {
			return false
		}
		i += size
	}
	return true
}

const hex = "0123456789abcdef"

// escape appends the visible form of r (or of the invalid byte b when r is
// utf8.RuneError of size 1).
func escape(b *strings.Builder, r rune, raw byte, invalid bool) {
	if invalid {
		b.WriteString(`\x`)
		b.WriteByte(hex[raw>>4])
		b.WriteByte(hex[raw&0xf])
		return
	}
	switch r {
	case '\n':
		b.WriteString(`\n`)
	case '\r':
		b.WriteString(`\r`)
	case '\t':
		b.WriteString(`\t`)
	case 0x1b:
		b.WriteString(`\e`)
	default:
		if r < 0x100 {
			b.WriteString(`\x`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&0xf])
			return
		}
		b.WriteString(`\u`)
		for shift := 12; shift >= 0; shift -= 4 {
			b.WriteByte(hex[(r>>shift)&0xf])
		}
	}
}

// Line returns s as one line with every control character, DEL, ESC, bidi
// control, line separator and invalid UTF-8 byte shown escaped (\n, \e,
// \x00, \u202e). Clean strings are returned unchanged, without allocating.
func Line(s string) string {
	if clean(s) {
		return s
	}
	return escapeAll(s, false)
}

// IDWidth is the width a holder id (a machine id, a pod name) is shown in
// beside the node it maps to.
const IDWidth = 13

// ID is a holder id for display: Line shortened to IDWidth cells.
func ID(id string) string { return Short(id, IDWidth) }

// Short is Line shortened to at most n cells, ending with "…" when cut.
// n <= 0 means no limit. Only the first 4n bytes of s are looked at, so a
// 200,000-character value costs no more than a short one.
func Short(s string, n int) string {
	if n <= 0 {
		return Line(s)
	}
	cut := false
	if limit := 4*n + 8; len(s) > limit {
		s, cut = s[:limit], true
	}
	s = Line(s)
	if !cut && ansi.StringWidth(s) <= n {
		return s
	}
	if n == 1 {
		return Ellipsis
	}
	t := ansi.Truncate(s, n-1, "")
	return t + Ellipsis
}

// ShortMiddle is Short cutting in the middle: it keeps the start and the end
// of s (where a write states its precondition, where an id differs) around
// one "…". n <= 0 means no limit.
func ShortMiddle(s string, n int) string {
	if n <= 0 {
		return Line(s)
	}
	if limit := 4*n + 8; len(s) <= limit {
		if l := Line(s); ansi.StringWidth(l) <= n {
			return l
		}
	}
	if n < 3 {
		return Short(s, n)
	}
	headW := (n - 1) / 2
	tailW := n - 1 - headW
	head := Short(s, headW+1) // ends in "…" since s is longer
	head = strings.TrimSuffix(head, Ellipsis)
	from := max(len(s)-4*tailW-8, 0)
	for from < len(s) && !utf8.RuneStart(s[from]) {
		from++
	}
	tail := Line(s[from:])
	if w := ansi.StringWidth(tail); w > tailW {
		tail = ansi.TruncateLeft(tail, w-tailW, "")
	}
	for ansi.StringWidth(tail) > tailW && tail != "" {
		_, size := utf8.DecodeRuneInString(tail) // graphemes may measure apart
		tail = tail[size:]
	}
	out := head + Ellipsis + tail
	if ansi.StringWidth(out) > n {
		return Short(s, n)
	}
	return out
}

// Styled is for strings that already carry a renderer's styling: it keeps
// well-formed SGR sequences (ESC [ digits/;/: m — colours and attributes,
// which cannot move the cursor, clear or set a title) and escapes every
// other control as Line does, so the result is one line whose only control
// bytes start SGR sequences.
func Styled(s string) string {
	if clean(s) {
		return s
	}
	// Fast path: only SGR sequences among the suspects.
	if onlySGR(s) {
		return s
	}
	return escapeAll(s, true)
}

// escapeAll writes s with every control, bidi control, line separator and
// invalid UTF-8 byte escaped; with keepSGR, well-formed SGR sequences are
// copied as they are.
func escapeAll(s string, keepSGR bool) string {
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		c := s[i]
		if keepSGR && c == 0x1b {
			if n := sgrLen(s[i:]); n > 0 {
				b.WriteString(s[i : i+n])
				i += n
				continue
			}
		}
		if c < 0x80 {
			if c < 0x20 || c == 0x7f {
				escape(&b, rune(c), 0, false)
			} else {
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			escape(&b, 0, c, true)
		case needs(r):
			escape(&b, r, 0, false)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// sgrLen returns the length of the SGR sequence s starts with, or 0.
func sgrLen(s string) int {
	if len(s) < 3 || s[0] != 0x1b || s[1] != '[' {
		return 0
	}
	for j := 2; j < len(s); j++ {
		c := s[j]
		switch {
		case c >= '0' && c <= '9', c == ';', c == ':':
		case c == 'm':
			return j + 1
		default:
			return 0
		}
	}
	return 0
}

// onlySGR reports whether every suspect byte of s belongs to an SGR sequence.
func onlySGR(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c == 0x1b {
			n := sgrLen(s[i:])
			if n == 0 {
				return false
			}
			i += n
			continue
		}
		if c < 0x80 {
			if c < 0x20 || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size <= 1) || needs(r) {
			return false
		}
		i += size
	}
	return true
}

// Safe reports whether s is what Line would return for it: no control
// character, bidi control, line separator or invalid UTF-8.
func Safe(s string) bool { return clean(s) }

// SafeStyled reports whether the only control bytes of s start well-formed
// SGR sequences and nothing else needs escaping (what Styled guarantees).
func SafeStyled(s string) bool { return onlySGR(s) }

// MaskURL returns raw with its password and every query value masked
// ("https://u:xxxxx@prom/?token=xxxxx"): a URL a cluster object or a flag
// gives (kured's --prometheus-url, the agent's own) may be shown, its
// secrets never. It is the one masking function of every surface that
// shows such a URL (the snapshot, watch, the dashboard's lock detail, the
// agent's log, error messages). A URL that does not parse is replaced
// whole; "" stays "".
func MaskURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k, vs := range q {
			for i := range vs {
				vs[i] = "xxxxx"
			}
			q[k] = vs
		}
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// JSONNeedsEscape reports whether the byte c may start a rune that
// AppendJSON escapes: DEL, or the lead byte of a C1 control (0xc2), of
// U+061C (0xd8) or of a bidi control or mark (0xe2). A scanner checks it
// per byte and hands only such stretches to AppendJSON.
func JSONNeedsEscape(c byte) bool { return c == 0x7f || c == 0xc2 || c == 0xd8 || c == 0xe2 }

// AppendJSON appends src, JSON text as encoding/json writes it, to dst
// with every rune Line would escape that encoding/json leaves raw (DEL,
// the C1 controls, the bidi embeddings, overrides, isolates and marks) as
// a \uXXXX escape: the JSON's value stays equal, and no such rune reaches
// a terminal that shows the JSON. Outside strings, JSON text is ASCII, so
// src may be a whole document or any part of one.
func AppendJSON(dst, src []byte) []byte {
	for {
		i, r, size := nextJSONEscape(src)
		if i < 0 {
			return append(dst, src...)
		}
		dst = append(dst, src[:i]...)
		dst = append(dst, '\\', 'u', hex[(r>>12)&0xf], hex[(r>>8)&0xf], hex[(r>>4)&0xf], hex[r&0xf])
		src = src[i+size:]
	}
}

// nextJSONEscape finds the first rune of src that AppendJSON escapes: its
// index (-1 for none), the rune and its size.
func nextJSONEscape(src []byte) (int, rune, int) {
	for i := 0; i < len(src); i++ {
		c := src[i]
		if !JSONNeedsEscape(c) {
			continue
		}
		r, size := rune(c), 1
		if c >= 0x80 {
			r, size = utf8.DecodeRune(src[i:])
		}
		if r != utf8.RuneError && needs(r) {
			return i, r, size
		}
	}
	return -1, 0, 0
}

// JSON is AppendJSON for a whole document: b itself when nothing in it
// needs escaping (no copy), else an escaped copy.
func JSON(b []byte) []byte {
	if i, _, _ := nextJSONEscape(b); i < 0 {
		return b
	}
	return AppendJSON(make([]byte, 0, len(b)+16), b)
}

// LogValueMax is how many runes a log line keeps of one value from a
// cluster (a holder, a reason quoting one), its start and end.
const LogValueMax = 1000

// Middle shortens s to at most n runes, keeping its start and end around
// one "…", and leaves it raw: it is for a log handler that escapes what it
// writes. Only the first and last 4n bytes of s are looked at, so a
// 200,000-character value costs no more than a short one.
func Middle(s string, n int) string {
	if n <= 0 {
		return s
	}
	rs := []rune(s[:min(len(s), 4*n)])
	if len(s) <= 4*n && len(rs) <= n {
		return s
	}
	head := (n - 1) / 2
	tail := []rune(s[max(0, len(s)-4*n):])
	tail = tail[max(0, len(tail)-(n-1-head)):]
	return string(rs[:min(head, len(rs))]) + Ellipsis + string(tail)
}
