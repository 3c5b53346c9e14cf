package watch

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/sanitize/sanitizetest"
	"github.com/rebootwatch/rebootwatch/model"
)

var leaseRef = model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-default"}

// hostileLines drives a watcher over a cluster where s is a fleetlock
// holder, a kured annotation, a node's OS image and a source's message, and
// returns every text line it produced (plain and coloured), the summary and
// an unreachable line naming s.
func hostileLines(t *testing.T, s string) []string {
	f := newFleet(t, Options{Prefix: true, SummaryEvery: time.Minute, StallAfter: time.Hour}, "n1", "n2")
	f.c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceFleetlock, Status: model.StatusOK, LastSync: t0}}, t0)
	f.step(0)
	lines := append([]Line(nil), f.lines...)
	f.step(time.Minute,
		model.LockUpserted{Lock: model.LockObject{LockRef: leaseRef, UID: "l1", ResourceVersion: "2", Spec: &fleetlock.Spec{Holder: s}}},
		model.LockUpserted{Lock: model.LockObject{LockRef: kuredRef, UID: "u1", ResourceVersion: "3", Spec: &kured.Spec{Present: true, Value: s}}},
		f.node("n2", func(n *model.Node) { n.OSImage = s }),
		model.SourceChanged{Health: model.SourceHealth{Name: model.SourcePrometheus, Status: model.StatusError, Message: s, LastSync: t0}})
	f.step(time.Minute)
	lines = append(lines, f.lines...)
	lines = append(lines, f.w.Summary(f.c, f.now), Unreachable(s, true, f.now, s))
	var out []string
	for _, l := range lines {
		out = append(out, l.Text(NewStyles(false)), l.Text(NewStyles(true)))
	}
	return out
}

func TestHostileStringsKeepWatchLines(t *testing.T) {
	strs := append(append([]string{}, sanitizetest.Attacks...), sanitizetest.Random(9, 100, 40)...)
	for _, s := range strs {
		ls := hostileLines(t, s)
		if len(ls) < 6 {
			t.Fatalf("only %d lines", len(ls))
		}
		for _, l := range ls {
			if p := sanitizetest.Problem(l, false); p != "" {
				t.Fatalf("holder %.40q: %s", s, p)
			}
			if strings.Contains(l, "\x1b[31mred") || strings.Contains(l, "\x1b[2J") || len(l) > 2000 {
				t.Fatalf("holder %.40q: hostile or huge line (%d bytes)", s, len(l))
			}
		}
	}
}

func TestUnreachableSaysClusterOnce(t *testing.T) {
	l := Unreachable("beta", true, t0, "connection refused").Text(NewStyles(false))
	if strings.Contains(l, "cluster cluster") || !strings.Contains(l, "cluster beta unreachable: connection refused") {
		t.Fatalf("line %q", l)
	}
}

// FuzzWatchLines feeds arbitrary holders, annotations, OS images and
// source messages through the watch's text lines.
func FuzzWatchLines(f *testing.F) {
	for _, s := range sanitizetest.Attacks[:10] {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, l := range hostileLines(t, s) {
			if p := sanitizetest.Problem(l, false); p != "" {
				t.Fatalf("holder %q: %s", s, p)
			}
		}
	})
}

// Issue 22 §6: watch -o json escapes what a terminal obeys and
// encoding/json leaves raw (U+202E, U+2066/U+2069, C1 controls): \uXXXX,
// the same value.
func TestJSONLinesEscapeTerminalControls(t *testing.T) {
	s := "n\u202e1 \u2066x\u2069 \u0085\u009b[2J"
	l := Line{Time: t0, Context: "lab", Kind: KindCluster, Node: s, Severity: model.SeverityWarning, Message: s + " unreachable"}
	b, err := l.JSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{"\u202e", "\u2066", "\u2069", "\u0085", "\u009b"} {
		if strings.Contains(string(b), raw) {
			t.Errorf("raw %q in %q", raw, b)
		}
	}
	var back struct{ Node, Message string }
	if err := json.Unmarshal(b, &back); err != nil || back.Node != s || back.Message != s+" unreachable" {
		t.Fatalf("decoded %+v (%v) from %s", back, err, b)
	}
}
