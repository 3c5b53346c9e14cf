package kured

import (
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

// kured's reboot-in-progress mark, read by kured's package (it was read
// inside the model's phase code, issue 32 §1): a mark the Ready condition
// has not moved since is a reboot kured still wants; one older than the
// Ready transition is a reboot it went through.
func TestMarks(t *testing.T) {
	now := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	node := func(mark string, readyAt time.Duration, ready bool) *model.Node {
		n := &model.Node{Name: "n1"}
		if mark != "" {
			n.Annotations = map[string]string{MarkAnnotation: mark}
		}
		if ready {
			n.Conditions = []model.Condition{{Type: "Ready", Status: "True", LastTransition: now.Add(readyAt)}}
		}
		return n
	}
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	for _, tc := range []struct {
		name  string
		n     *model.Node
		phase model.Phase
		left  bool
	}{
		{"no mark", node("", -time.Hour, true), "", false},
		{"unparsable mark says nothing", node("yes", -time.Hour, true), "", false},
		{"mark newer than the Ready transition: pending", node(at(-10*time.Minute), -30*time.Minute, true), model.PhasePending, false},
		{"mark without a Ready condition: pending", node(at(-10*time.Minute), 0, false), model.PhasePending, false},
		{"mark older than the Ready transition: rebooted since, left cordoned if cordoned", node(at(-time.Hour), -30*time.Minute, true), model.PhaseDone, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := Driver{}.NodeMarks(tc.n)
			if tc.phase == "" {
				if len(ms) != 0 {
					t.Fatalf("marks %+v, want none", ms)
				}
				return
			}
			if len(ms) != 1 || ms[0].Phase != tc.phase || ms[0].LeftCordoned != tc.left || ms[0].Kind != Kind || ms[0].Node != "n1" {
				t.Fatalf("marks %+v, want %s (left cordoned %v)", ms, tc.phase, tc.left)
			}
		})
	}
}
