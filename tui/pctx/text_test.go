package pctx

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func TestWidthMatchesAnsi(t *testing.T) {
	for _, s := range []string{
		"", "abc", "\x1b[1;38;2;1;2;3mbold\x1b[m", "╭─ Nodes ─╮", "●─◉─○", "✓ ✗ … · → ×", "日本語", "e\u0301", "⎈ ctx", "ℹ info", "a\tb",
		"\x1b]8;;http://x\x07link\x1b]8;;\x07",
	} {
		if got, want := Width(s), ansi.StringWidth(s); got != want {
			t.Errorf("Width(%q) = %d; ansi says %d", s, got, want)
		}
	}
}

func TestFitAndTrunc(t *testing.T) {
	for _, c := range []struct {
		in   string
		w    int
		want string
	}{
		{"abc", 5, "abc  "}, {"abcdef", 4, "abc…"}, {"abc", 0, ""}, {"日本語", 4, "日… "},
	} {
		if got := ansi.Strip(Fit(c.in, c.w)); got != c.want {
			t.Errorf("Fit(%q, %d) = %q; want %q", c.in, c.w, got, c.want)
		}
		if Width(Fit(c.in, c.w)) != c.w && c.w > 0 {
			t.Errorf("Fit(%q, %d) has the wrong width", c.in, c.w)
		}
	}
	if got := Trunc("abcdef", 3); got != "ab…" {
		t.Errorf("Trunc = %q", got)
	}
}

func TestBoxAndOverlay(t *testing.T) {
	p := Painter{}
	b := Box(p, "T", "note", []string{"hello"}, 20, 4)
	if len(b) != 4 {
		t.Fatalf("box has %d lines", len(b))
	}
	for _, l := range b {
		if Width(l) != 20 {
			t.Fatalf("box line %q is %d wide", l, Width(l))
		}
	}
	if !strings.HasPrefix(b[0], "╭─ T ") || !strings.Contains(b[0], " note ─╮") || b[1] != "│hello             │" || b[3] != "╰"+strings.Repeat("─", 18)+"╯" {
		t.Fatalf("box = %q", b)
	}
	o := Overlay([]string{"..........", ".........."}, []string{"XX"}, 3, 1, 10)
	if ansi.Strip(o[1]) != "...XX....." || o[0] != ".........." {
		t.Fatalf("overlay = %q", o)
	}
	if tiny := Box(p, "T", "", []string{"x"}, 1, 1); len(tiny) != 1 || Width(tiny[0]) != 1 {
		t.Fatalf("1×1 box = %q", tiny)
	}
}

func TestTruncFastPathMatchesAnsi(t *testing.T) {
	for _, s := range []string{"abcdef", "a", "abcdefghijklmnop"} {
		for w := 1; w <= len(s)+1; w++ {
			if got, want := Trunc(s, w), func() string {
				if ansi.StringWidth(s) <= w {
					return s
				}
				return ansi.Truncate(s, w, "…")
			}(); got != want {
				t.Errorf("Trunc(%q, %d) = %q; ansi gives %q", s, w, got, want)
			}
		}
	}
}
