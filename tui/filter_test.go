package tui

import (
	"strings"
	"testing"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
)

// Typing far more than the filter holds keeps it at MaxFilter runes.
func TestFilterLengthIsCapped(t *testing.T) {
	f := newFixture()
	m := f.model(Options{})
	size(m, 120, 40)
	press(m, "/")
	for i := 0; i < 3*MaxFilter; i++ {
		press(m, "é")
	}
	if n := utf8.RuneCountInString(m.filterDraft); n != MaxFilter {
		t.Fatalf("filter holds %d runes, want %d", n, MaxFilter)
	}
	if !strings.Contains(screen(m), "filter full") {
		t.Fatalf("a full filter must say so:\n%s", screen(m))
	}
	press(m, "esc")
	if m.filterDraft != "" || m.table.Filter != "" {
		t.Fatal("esc must clear the filter")
	}
}

// Bracketed paste (tea.PasteMsg) goes into the filter; line breaks and
// controls in it become spaces; outside the filter a paste does nothing.
func TestPasteIntoFilter(t *testing.T) {
	f := newFixture()
	m := f.model(Options{})
	size(m, 120, 40)
	m.Update(tea.PasteMsg{Content: "w-0"})
	if m.filterDraft != "" || m.table.Filter != "" {
		t.Fatal("a paste outside the filter changed it")
	}
	press(m, "/")
	m.Update(tea.PasteMsg{Content: "W-0\n\x1b[31m"})
	if m.table.Filter != "W-0  [31m" {
		t.Fatalf("filter %q", m.table.Filter)
	}
	m.Update(tea.PasteMsg{Content: ""})
	press(m, "backspace", "backspace", "backspace", "backspace", "backspace", "backspace")
	if got := rowNames(m); len(got) != 9 {
		t.Fatalf("after pasting w-0: rows %v", got)
	}
	m.Update(tea.PasteMsg{Content: strings.Repeat("x", 100000)})
	if n := utf8.RuneCountInString(m.filterDraft); n != MaxFilter {
		t.Fatalf("a 100,000-char paste left %d runes in the filter, want %d", n, MaxFilter)
	}
}

// A paste into the filter of a cluster list's dashboard reaches it.
func TestPasteIntoFilterInClusterList(t *testing.T) {
	mf := newMultiFixture(Options{})
	mf.press("enter", "/")
	mf.m.Update(tea.PasteMsg{Content: "w-0"})
	if k := mf.m.kids[mf.m.active]; k.filterDraft != "w-0" {
		t.Fatalf("filter %q", k.filterDraft)
	}
}

// BenchmarkFilterPaste10k pastes 10,000 characters into the filter of 5,000
// nodes (one bracketed paste) and draws the frame.
func BenchmarkFilterPaste10k(b *testing.B) {
	c, ck := bigCluster(5000)
	paste := tea.PasteMsg{Content: strings.Repeat("node-0 ", 10000/7)}
	b.ReportAllocs()
	for b.Loop() {
		m := New(Options{Cluster: c, Clock: ck.Now, Actions: &fakeActions{}})
		m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
		m.Update(keyMsg("/"))
		m.Update(paste)
		_ = m.View()
	}
}

// BenchmarkFilterTyping10k types 10,000 characters into the filter of 7
// nodes one key at a time (a terminal without bracketed paste), drawing a
// frame after each key as the program does.
func BenchmarkFilterTyping10k(b *testing.B) {
	f := newFixture()
	b.ReportAllocs()
	for b.Loop() {
		m := f.model(Options{})
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		m.Update(keyMsg("/"))
		for i := 0; i < 10000; i++ {
			m.Update(keyMsg("w"))
			_ = m.View()
		}
	}
}
