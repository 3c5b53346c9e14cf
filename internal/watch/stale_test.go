package watch

import (
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/explain"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/model"
)

// TestNoLinesFromStaleData is issue 22 item 7 in the watch: with the real
// lock engine, n1 holds the lock mid-drain behind n2, which waits for it.
// While the kured source is stale (a frozen API server) the lock is judged
// unknown, yet n1 must not go draining → idle and back to a new cycle, nor
// its blockers change and clear, each a line. While the inputs are stale
// nothing is logged but the source's own line; after, only what really
// changed.
func TestNoLinesFromStaleData(t *testing.T) {
	f := newFleet(t, Options{}, "n1", "n2")
	eng := lock.New(lock.Options{OrphanGrace: 2 * time.Minute})
	f.c.Judge, f.c.Explain = eng.Judge, explain.For(explain.Options{})
	f.step(0)
	f.step(time.Minute, f.take("n1"))
	f.step(10*time.Second, f.node("n1", func(n *model.Node) { n.Unschedulable = true }))
	if p := f.c.Phase("n1"); p != model.PhaseDraining {
		t.Fatalf("n1 %s, want draining", p)
	}
	stale := func(st model.SourceStatus) model.Event {
		return model.SourceChanged{Health: model.SourceHealth{Name: model.SourceKured, Status: st, Message: "no word"}}
	}
	var during []Line
	during = append(during, f.step(20*time.Second, stale(model.StatusStale))...)
	for i := 0; i < 5; i++ {
		during = append(during, f.step(10*time.Second)...)
	}
	if p := f.c.Phase("n1"); p != model.PhaseDraining {
		t.Fatalf("while stale: n1 %s, want draining (held)", p)
	}
	if len(during) != 1 || during[0].Kind != Kind(model.KindSource) {
		t.Fatalf("while stale, only the source's line; got:\n%s", texts(during))
	}
	after := f.step(10*time.Second, stale(model.StatusOK))
	after = append(after, f.step(10*time.Second)...)
	if len(after) != 1 || after[0].Kind != Kind(model.KindSource) || !strings.Contains(after[0].Message, "stale → ok") {
		t.Fatalf("after recovery, only the source's line; got:\n%s", texts(after))
	}
	if p := f.c.Phase("n1"); p != model.PhaseDraining {
		t.Fatalf("after: n1 %s, want draining (its one cycle)", p)
	}
}
