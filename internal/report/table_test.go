package report

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"charm.land/lipgloss/v2"

	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/themes"
)

// writeRef is the reference table.write must match: every cell through
// lipgloss (its style, or none), widths by lipgloss.Width.
func writeRef(t *table, b *strings.Builder, p palette) {
	w := make([]int, len(t.head))
	for i, h := range t.head {
		w[i] = lipgloss.Width(h)
	}
	for _, r := range t.rows {
		for i, c := range r {
			if n := lipgloss.Width(c.s); n > w[i] {
				w[i] = n
			}
		}
	}
	pad := func(s string, n int) string { return s + strings.Repeat(" ", max(0, n-lipgloss.Width(s))) }
	st := func(c cell) lipgloss.Style {
		if c.st == nil {
			return lipgloss.NewStyle()
		}
		return *c.st
	}
	b.WriteString("  ")
	for i, h := range t.head {
		if i == len(t.head)-1 {
			b.WriteString(p.r(p.dim(), h))
		} else {
			b.WriteString(p.r(p.dim(), pad(h, w[i])) + "  ")
		}
	}
	b.WriteString("\n")
	for _, r := range t.rows {
		b.WriteString("  ")
		for i, c := range r {
			if c.last || i == len(r)-1 {
				b.WriteString(p.r(st(c), c.s))
			} else {
				b.WriteString(p.r(st(c), pad(c.s, w[i])) + "  ")
			}
		}
		b.WriteString("\n")
	}
}

// TestTableWriteMatchesLipgloss: a table's unstyled cells are written as
// they are and printable ASCII is measured by its length, with the very
// bytes lipgloss gave, coloured or not: wide and combining characters,
// tabs, ANSI-looking text, empty cells, styled and unstyled.
func TestTableWriteMatchesLipgloss(t *testing.T) {
	texts := []string{"", "node-00001", "control-plane", "日本語ノード", "e\u0301tude", "🙂 ok", "a\tb", "\tlead", "x\x1b[31my",
		"~!@#$%^&*()_+{}|:\"<>?", "trailing ", " leading", "·", "—", "●●○○○", "\x7f", "ab\u200bcd"}
	for _, color := range []bool{false, true} {
		p := newPalette(Options{Color: color, Theme: themes.Dark()})
		tb := table{head: []string{"A", "BÉ", "C", "D"}}
		styles := []lipgloss.Style{p.ok(), p.crit(), p.dim(), lipgloss.NewStyle()}
		styled := func(s string, i int) cell {
			if i%(len(styles)+1) == len(styles) {
				return cell{s: s}
			}
			return cell{s: s, st: &styles[i%(len(styles)+1)]}
		}
		for i, s := range texts {
			last := styled(s+" reason", i+2)
			last.last = true
			tb.rows = append(tb.rows, []cell{{s: s}, styled(texts[(i+3)%len(texts)], i), styled(texts[(i+7)%len(texts)], i+1), last})
		}
		var got, want strings.Builder
		tb.write(&got, p)
		writeRef(&tb, &want, p)
		if got.String() != want.String() {
			t.Errorf("color=%v:\n got %q\nwant %q", color, got.String(), want.String())
		}
	}
}

// BenchmarkTextColour is --snapshot's text report on a terminal (colour)
// at 5,000 nodes. Run with
//
//	go test -run '^$' -bench TextColour -benchmem ./internal/report/
func BenchmarkTextColour(b *testing.B) {
	c := model.NewCluster("bench", model.Options{})
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusOK}}, now)
	for i := range 5000 {
		c.Apply(model.NodeUpserted{Node: model.Node{Name: fmt.Sprintf("node-%05d", i), Roles: []string{"worker"},
			OSImage: "Ubuntu 24.04.3 LTS", KernelVersion: "6.8.0-60-generic", BootID: fmt.Sprint(i),
			Conditions: []model.Condition{{Type: "Ready", Status: "True", LastTransition: now}}}}, now)
	}
	c.Recompute(now)
	b.ReportAllocs()
	for b.Loop() {
		if err := Text(io.Discard, c, now, Options{Color: true}); err != nil {
			b.Fatal(err)
		}
	}
}
