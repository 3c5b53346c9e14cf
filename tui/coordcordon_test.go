package tui

import (
	"strings"
	"testing"

	"github.com/rebootwatch/rebootwatch/model"
)

// leftActions are fake actions whose coordinator kinds left some nodes
// cordoned (CoordinatorCordons).
type leftActions struct {
	*fakeActions
	left map[string]bool
}

func (a leftActions) LeftCordoned(node string) bool { return a.left[node] }

// Issue 24 §4: u on a node a coordinator kind of internal/coord left
// cordoned (its phases are not the model's) opens the same uncordon dialog
// as a done · still cordoned node; on a cordoned node no kind says so it
// stays a toast.
func TestUncordonCoordinatorLeftCordoned(t *testing.T) {
	for _, left := range []bool{false, true} {
		f := newFixture()
		acts := leftActions{f.actions, map[string]bool{"w-05": left}}
		m := f.model(Options{Actions: acts})
		size(m, 120, 34)
		n, _ := f.c.Node("w-05")
		up := *n
		up.Unschedulable = true
		m.Update(eventsMsg{model.NodeUpserted{Node: up}})
		if f.c.StillCordoned("w-05") {
			t.Fatal("w-05 is done · still cordoned in the model: the test needs a node the model knows nothing of")
		}
		for i := 0; i < 20; i++ {
			if r, _ := m.table.Selected(); r.Name == "w-05" {
				break
			}
			press(m, "j")
		}
		if r, _ := m.table.Selected(); r.Name != "w-05" {
			t.Fatalf("cursor never on w-05:\n%s", screen(m))
		}
		// Issue 32 §4: the key bar shows u wherever an uncordon is
		// offered, and only there.
		for _, width := range []int{100, 160} {
			size(m, width, 34)
			lines := strings.Split(screen(m), "\n")
			bar := lines[len(lines)-1]
			if strings.Contains(bar, "u uncordon") != left {
				t.Errorf("%d columns, offered %v: key bar %q", width, left, bar)
			}
		}
		size(m, 120, 34)
		press(m, "u")
		if !left {
			if m.dialog != nil || !strings.Contains(screen(m), "select one in the node list") {
				t.Errorf("u on a cordoned node no coordinator left cordoned opened %v", m.dialog)
			}
			continue
		}
		if m.dialog == nil {
			t.Fatalf("u on a node its coordinator left cordoned opened no dialog:\n%s", screen(m))
		}
		if s := screen(m); !strings.Contains(s, "Uncordon node?") || !strings.Contains(s, "w-05") {
			t.Errorf("dialog:\n%s", s)
		}
	}
}
