package agent

import (
	"fmt"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/rebootwatch/rebootwatch/model"
)

// The agent exports each node's phase, each held entry's holder, holder
// node and held-since, and — once the holder's node is gone — the ghost
// holder with no node (issue 25 §1).
func TestAgentExportsFleetVocabulary(t *testing.T) {
	now := time.Now()
	world := fleetlockWorld(now)
	cfg := testConfig()
	cfg.ReapGhost = false
	h := startAgent(t, cfg, clientFor(world, fleetLease(testZincatiID)), world)
	h.waitFor(t, "a judged heartbeat", func(hb heartbeat) bool { return len(hb.Locks) == 1 && hb.Locks[0].HolderNode == "n1" })
	since := fmt.Sprintf("%g", float64(now.Add(-2*time.Hour).UnixNano())/1e9)
	waitMetrics(t, h, []string{
		`rebootwatch_node_phase{node="n1",phase="`,
		`rebootwatch_node_phase{node="n2",phase="`,
		`rebootwatch_lock_holder{holder="` + testZincatiID + `",holder_node="n1",kind="fleetlock",lock="default/fleetlock-default"} `,
		`rebootwatch_lock_verdict{kind="fleetlock",lock="default/fleetlock-default",verdict="`,
		`rebootwatch_agent_last_success_timestamp_seconds `,
	}, nil)
	body := metricsBody(t, h)
	if !strings.Contains(body, `holder_node="n1",kind="fleetlock",lock="default/fleetlock-default"} `+since[:6]) {
		t.Errorf("holder series lacks the held-since time %s:\n%s", since, grepLines(body, "rebootwatch_lock_holder"))
	}
	if n := strings.Count(body, "\nrebootwatch_node_phase{"); n != 2 {
		t.Errorf("%d node phase series, want one per node (2)", n)
	}

	// No Prometheus source in this world: reboot-required is unknown, so
	// its count is absent, never 0.
	if strings.Contains(body, "\nrebootwatch_fleet_reboot_required_nodes ") {
		t.Errorf("reboot-required count exported while unknown:\n%s", grepLines(body, "rebootwatch_fleet_reboot"))
	}
	h.sink(model.RebootRequiredSet{Values: map[string]bool{"n1": true, "n2": false}})
	waitMetrics(t, h, []string{"\nrebootwatch_fleet_reboot_required_nodes 1\n"}, nil)

	h.deleteNode(t, "n1")
	h.waitFor(t, "ghost", func(hb heartbeat) bool { return lockWith(hb, model.VerdictGhost, "") })
	waitMetrics(t, h, []string{
		`rebootwatch_lock_holder{holder="` + testZincatiID + `",holder_node="",kind="fleetlock",lock="default/fleetlock-default"} `,
		`rebootwatch_lock_verdict{kind="fleetlock",lock="default/fleetlock-default",verdict="ghost"} 1`,
	}, []string{`rebootwatch_node_phase{node="n1"`})
}

// waitMetrics waits until the agent's /metrics holds every want and none of
// gone (the series are replaced on the next iteration).
func waitMetrics(t *testing.T, h *harness, want, gone []string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		body := metricsBody(t, h)
		missing := ""
		for _, w := range want {
			if !strings.Contains(body, w) {
				missing = "lacks " + w
			}
		}
		for _, g := range gone {
			if strings.Contains(body, g) {
				missing = "still has " + g
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics %s:\n%s", missing, grepLines(body, "rebootwatch_node_", "rebootwatch_lock_"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func metricsBody(t *testing.T, h *harness) string {
	t.Helper()
	code, body := serve(h.agent.Metrics.Handler())
	if code != 200 {
		t.Fatalf("metrics %d", code)
	}
	return body
}

func grepLines(body string, prefixes ...string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out = append(out, l)
			}
		}
	}
	return strings.Join(out, "\n")
}

// countSeries counts the series of a gathered registry as the text
// exposition has them (a histogram's buckets, sum and count; a summary's
// quantiles, sum and count).
func countSeries(t *testing.T, m *Metrics) (all, ours int) {
	t.Helper()
	mfs, err := m.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		n := 0
		for _, x := range mf.Metric {
			switch mf.GetType() {
			case dto.MetricType_HISTOGRAM:
				n += len(x.Histogram.Bucket) + 3
			case dto.MetricType_SUMMARY:
				n += len(x.Summary.Quantile) + 2
			default:
				n++
			}
		}
		all += n
		if strings.HasPrefix(mf.GetName(), "rebootwatch_") {
			ours += n
		}
	}
	return all, ours
}

// TestMetricsSeriesBudget holds the series budget 2·N + 8·L + H +
// FixedSeries at 5,000 nodes, in the worst case: every node blocked, every
// action counter and API-error verb used, a kured multi-lock with
// several holders besides a fleetlock lock.
func TestMetricsSeriesBudget(t *testing.T) {
	m := NewMetrics()
	_, base := countSeries(t, m)
	all0, _ := countSeries(t, m)
	if all0 > FixedSeries {
		t.Fatalf("an agent with no nodes exports %d series, more than FixedSeries %d", all0, FixedSeries)
	}
	now := time.Now()
	const n = 5000
	nodes := make([]NodeSeries, n)
	for i := range nodes {
		nodes[i] = NodeSeries{Node: fmt.Sprintf("node-%05d", i), Phase: model.AllPhases[i%len(model.AllPhases)],
			Blocker: model.AllBlockerKinds[i%len(model.AllBlockerKinds)]}
	}
	kured := model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured"}
	fleetlock := model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: "fleetlock-default"}
	statuses := []model.LockStatus{
		{LockRef: kured, Holder: "node-00001", HolderNodes: []string{"node-00001"}, Verdict: model.VerdictHeld, Created: now.Add(-time.Hour)},
		{LockRef: kured, Holder: "node-00002", HolderNodes: []string{"node-00002"}, Verdict: model.VerdictOrphaned, Created: now.Add(-2 * time.Hour), Entry: 1},
		{LockRef: kured, Holder: "gone", Verdict: model.VerdictGhost, Entry: 2},
		{LockRef: fleetlock, Holder: "\x1b]0;owned\x07" + strings.Repeat("x", 10000), Verdict: model.VerdictGhost},
	}
	const locks, held = 2, 4
	m.SetNodes(nodes)
	m.SetLocks(statuses, now)
	m.SetHolders(statuses)
	m.SetFleet(model.Fleet{Nodes: n, Phases: map[model.Phase]int{model.PhasePending: n}}, &model.FleetBlocker{Blocker: model.Blocker{Kind: model.BlockerDrain}}, time.Minute)
	for _, k := range []model.LockKind{model.LockKured, model.LockFleetlock} {
		for _, a := range []string{"release", "reap", "uncordon"} {
			for _, r := range []string{"done", "dry-run", "refused", "conflict", "forbidden", "error"} {
				m.Actions.WithLabelValues(string(k), a, r).Inc()
			}
		}
	}
	for _, v := range []string{"list", "get", "update", "patch", "delete", "create"} {
		m.APIErrors.WithLabelValues(v).Inc()
	}
	all, ours := countSeries(t, m)
	budget := 2*n + 8*locks + held + FixedSeries
	t.Logf("5,000 nodes, %d locks, %d held entries: %d series (%d rebootwatch_…, %d with no nodes); budget %d", locks, held, all, ours, base, budget)
	if all > budget {
		t.Fatalf("%d series at 5,000 nodes: over the budget 2·N + 8·L + H + %d = %d", all, FixedSeries, budget)
	}
	// Hostile holder: one line, no control byte, bounded.
	body := grepLines(func() string { _, b := serve(m.Handler()); return b }(), "rebootwatch_lock_holder{")
	if strings.ContainsAny(body, "\x1b\x07") || strings.Contains(body, strings.Repeat("x", 300)) {
		t.Errorf("hostile holder exported raw or unbounded:\n%.400s", body)
	}
	if !strings.Contains(body, `holder="\\e]0;owned\\x07xxx`) {
		t.Errorf("hostile holder not shown escaped:\n%.400s", body)
	}
}
