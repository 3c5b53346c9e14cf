package model

import (
	"testing"
	"time"
)

// A blocker marked for attention (a coordinator kind's wedge, which no
// lock verdict raises) is listed under attention and gives exit 2; an
// unmarked one is not (issue 24 §4: --snapshot names the wedge and exits
// with attention).
func TestBlockerAttention(t *testing.T) {
	for _, sev := range []Severity{"", SeverityWarning, SeverityCritical} {
		c := newTestCluster(VerdictFree)
		c.Explain = func(*Cluster, time.Time) Blockers {
			b := Blocker{Kind: "job-failed", Node: "a", Reason: "job x failed on a", Stalls: true, Attention: sev}
			return Blockers{Nodes: map[string][]Blocker{"a": {b}}}
		}
		c.Apply(NodeUpserted{readyNode("a", "1", "x", "1", true)}, t0)
		c.Recompute(t0)
		att := c.Attention(t0)
		if sev == "" {
			if len(att) != 0 || c.ExitCode(t0) != 0 {
				t.Errorf("unmarked blocker: attention %+v exit %d", att, c.ExitCode(t0))
			}
			continue
		}
		if len(att) != 1 || att[0].Severity != sev || att[0].Message != "job x failed on a" || c.ExitCode(t0) != 2 {
			t.Errorf("%s: attention %+v exit %d", sev, att, c.ExitCode(t0))
		}
	}
}
