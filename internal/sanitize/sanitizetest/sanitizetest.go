// Package sanitizetest holds hostile strings and the checks every renderer's
// fuzz test shares: a cluster string must not put a control byte (other than
// the renderer's own SGR styling), a bidi control or a line break on a
// terminal. It is for tests only; it must not be imported by production code.
package sanitizetest

import (
	"math/rand/v2"
	"strings"
	"unicode/utf8"

	"github.com/rebootwatch/rebootwatch/internal/sanitize"
)

// Attacks are the strings of issue 12: title set, screen clear, colour,
// forged report lines, NUL, bidi override, C1 CSI, a 200,000-char holder.
var Attacks = []string{
	"\x1b]0;pwned\a",
	"evil\x1b[2J\x1b[H",
	"\x1b[31mred\x1b[0m",
	"n1\n\nATTENTION\n  nothing needs attention\n",
	"nul\x00byte",
	"abc\u202egnp.exe",
	"c1\u009b2J",
	"tab\there\rcr",
	"sep\u2028line",
	"bad\xff\xfeutf8",
	strings.Repeat("h", 200000),
	strings.Repeat("\x1b[2J", 500),
}

// alphabet is biased towards what breaks terminals.
var alphabet = []string{"\x1b", "[", "]", "0", ";", "2J", "m", "\a", "\n", "\r", "\t", "\x00", "\x7f",
	"\u0085", "\u009b", "\u202e", "\u2066", "\u2028", "\xff", "a", "b", "-", " ", "世", "é", "…", "\\"}

// Random returns n random hostile strings, each of 1 to parts pieces of the
// alphabet, from seed.
func Random(seed uint64, n, parts int) []string {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for k := r.IntN(parts) + 1; k > 0; k-- {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		out[i] = b.String()
	}
	return out
}

// Problem returns "" when out is safe on a terminal: its only control bytes
// start SGR sequences, it has no bidi control, line separator or invalid
// UTF-8, and no line break except between lines (ok for multi-line output).
// Else it describes the first problem.
func Problem(out string, multiLine bool) string {
	if !utf8.ValidString(out) {
		return "invalid UTF-8"
	}
	lines := []string{out}
	if multiLine {
		lines = strings.Split(out, "\n")
	} else if strings.ContainsAny(out, "\n") {
		return "a line break inside a line"
	}
	for i, l := range lines {
		if !sanitize.SafeStyled(l) {
			return "line " + itoa(i+1) + " has a control other than SGR: " + sanitize.Short(l, 200)
		}
	}
	return ""
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}
