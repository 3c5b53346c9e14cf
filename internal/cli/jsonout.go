package cli

import (
	"encoding/json"
	"io"

	"github.com/rebootwatch/rebootwatch/internal/sanitize"
)

// writeJSON writes v as json.Encoder with SetIndent("", "  ") does, byte
// for byte (HTML characters escaped, two-space indent, a final newline),
// in one pass over the marshalled bytes, but for the runes encoding/json
// leaves raw that a terminal obeys (DEL, C1 controls, bidi controls): those
// are \uXXXX escapes (sanitize.AppendJSON), the value unchanged. The
// Encoder indents in a second pass that steps encoding/json's scanner over
// every byte, a cost that shows in --snapshot's CPU profile at scale
// (docs/performance.md). json.Marshal's output is compact and valid, so indenting it only needs
// to know where its strings end (BenchmarkWriteJSON,
// TestWriteJSONMatchesEncoder, FuzzIndentCompact).
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	out := indentCompact(make([]byte, 0, len(b)+len(b)/2), b, "  ")
	_, err = w.Write(append(out, '\n'))
	return err
}

// indentCompact appends src, compact JSON as json.Marshal writes it (no
// space outside strings), to dst indented as json.Indent(dst, src, "",
// indent) would: a newline and the indent after every opening brace or
// bracket and comma, ": " after a key, and empty objects and arrays kept
// as {} and [].
func indentCompact(dst, src []byte, indent string) []byte {
	depth := 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch c {
		case '"':
			// Copy the string whole: its end is the first quote not
			// escaped by a backslash. One that holds a rune
			// encoding/json leaves raw but a terminal obeys (C1, bidi
			// controls) goes through sanitize.AppendJSON.
			j := i + 1
			odd := false
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				} else if sanitize.JSONNeedsEscape(src[j]) {
					odd = true
				}
				j++
			}
			j = min(j+1, len(src))
			if odd {
				dst = sanitize.AppendJSON(dst, src[i:j])
			} else {
				dst = append(dst, src[i:j]...)
			}
			i = j - 1
		case '{', '[':
			dst = append(dst, c)
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				dst = append(dst, src[i+1])
				i++
				continue
			}
			depth++
			dst = appendNewline(dst, indent, depth)
		case '}', ']':
			depth--
			dst = appendNewline(dst, indent, depth)
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			dst = appendNewline(dst, indent, depth)
		case ':':
			dst = append(dst, ':', ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// appendNewline appends a newline and depth indents.
func appendNewline(dst []byte, indent string, depth int) []byte {
	dst = append(dst, '\n')
	for range depth {
		dst = append(dst, indent...)
	}
	return dst
}
