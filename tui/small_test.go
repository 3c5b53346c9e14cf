package tui

import (
	"strings"
	"testing"
)

// lastLine is the footer: the screen's last line, styling stripped.
func lastLine(m *Model) string {
	lines := strings.Split(screen(m), "\n")
	return lines[len(lines)-1]
}

// TestFooterKeepsTabHelpAndQuit: at every width from the minimum up, in
// normal and read-only mode, the footer shows tab (the README's story
// starts with it), ? help and q quit; other hints are shortened or left
// out first, and none is cut in the middle.
func TestFooterKeepsTabHelpAndQuit(t *testing.T) {
	for _, ro := range []bool{false, true} {
		m := newFixture().model(Options{ReadOnly: ro})
		for w := MinWidth; w <= 220; w++ {
			size(m, w, 24)
			f := lastLine(m)
			for _, want := range []string{"tab nodes/locks", "? help", "q quit"} {
				if !strings.Contains(f, want) {
					t.Fatalf("read-only %v, %d columns: footer lacks %q: %q", ro, w, want, f)
				}
			}
			if strings.Contains(f, "…") {
				t.Fatalf("read-only %v, %d columns: a hint is cut: %q", ro, w, f)
			}
		}
		size(m, 80, 24)
		if f := lastLine(m); !ro && !strings.Contains(f, "r release") {
			t.Fatalf("80 columns: the release hint is gone: %q", f)
		}
	}
}
