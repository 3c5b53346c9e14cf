package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/sanitize/sanitizetest"
	"github.com/rebootwatch/rebootwatch/model"
)

// hostileCluster writes s wherever a cluster controls text: a ghost
// holder (and the reason that embeds it), a node's OS image and kernel, a
// volume's name, a blocker's reason, evidence and what clears it.
func hostileCluster(s string, v model.Verdict) *model.Cluster {
	c := model.NewCluster("lab", model.Options{})
	c.LockSources = []model.SourceName{model.SourceKured, model.SourceFleetlock}
	c.Judge = func(c *model.Cluster, now time.Time) []model.LockStatus {
		return []model.LockStatus{{LockRef: model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-default"},
			Holder: s, Verdict: v, Reason: "holder " + s + " matches no node", Created: now.Add(-time.Hour)}}
	}
	c.Explain = func(c *model.Cluster, now time.Time) model.Blockers {
		b := model.Blocker{Kind: model.BlockerPod, Node: "n1", Stalls: true, Reason: "n1 waits for pod " + s,
			Evidence: []model.Evidence{{Key: s, Value: s}}, Clears: "delete " + s}
		return model.Blockers{Nodes: map[string][]model.Blocker{"n1": {b}}, Fleet: &model.FleetBlocker{Blocker: b, Others: 1},
			General: []model.Blocker{{Kind: model.BlockerUnknown, Stalls: true, Reason: "unknown " + s}}}
	}
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusOK}}, now)
	c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceLonghorn, Status: model.StatusOK}}, now)
	c.Apply(model.NodeUpserted{Node: model.Node{Name: "n1", OSImage: s, KernelVersion: s, Conditions: []model.Condition{{Type: "Ready", Status: "True"}}}}, now)
	c.Apply(model.VolumeUpserted{Volume: model.Volume{Namespace: "longhorn-system", Name: s, Robustness: model.RobustnessFaulted}}, now)
	c.Recompute(now)
	return c
}

func render(t testing.TB, c *model.Cluster, color bool) string {
	t.Helper()
	var b bytes.Buffer
	if err := Text(&b, c, now, Options{Color: color}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestHostileStringsKeepTheReport(t *testing.T) {
	base := strings.Count(render(t, hostileCluster("cp-1", model.VerdictGhost), false), "\n")
	strs := append(append([]string{}, sanitizetest.Attacks...), sanitizetest.Random(7, 200, 40)...)
	for _, s := range strs {
		for _, color := range []bool{false, true} {
			out := render(t, hostileCluster(s, model.VerdictGhost), color)
			if p := sanitizetest.Problem(out, true); p != "" {
				t.Fatalf("color=%v, holder %.40q: %s", color, s, p)
			}
			if n := strings.Count(out, "\n"); n != base {
				t.Fatalf("holder %.40q: %d lines, want %d (a forged line?):\n%s", s, n, base, out)
			}
			if strings.Contains(out, "\x1b[31mred") || strings.Contains(out, "\x1b[2J") {
				t.Fatalf("hostile styling reached the report")
			}
			if len(out) > 8000 {
				t.Fatalf("holder of %d bytes makes a report of %d bytes", len(s), len(out))
			}
		}
	}
}

// A holder that maps to no node because the nodes could not be judged is
// not "no node": that is for ghosts.
func TestUnmappedHolderOfUnknownVerdict(t *testing.T) {
	out := render(t, hostileCluster("0123456789abcdef", model.VerdictUnknown), false)
	if !strings.Contains(out, "0123456789ab… (node unknown)") || strings.Contains(out, "(no node)") {
		t.Fatalf("report:\n%s", out)
	}
}

// FuzzReport feeds arbitrary holders, OS images and volume names through
// the text report (plain and coloured).
func FuzzReport(f *testing.F) {
	for _, s := range sanitizetest.Attacks[:10] {
		f.Add(s)
	}
	base := strings.Count(render(f, hostileCluster("cp-1", model.VerdictGhost), false), "\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, color := range []bool{false, true} {
			out := render(t, hostileCluster(s, model.VerdictGhost), color)
			if p := sanitizetest.Problem(out, true); p != "" {
				t.Fatalf("holder %q: %s", s, p)
			}
			if n := strings.Count(out, "\n"); n != base {
				t.Fatalf("holder %q: %d lines, want %d", s, n, base)
			}
		}
	})
}
