package fleet

import (
	"context"
	"sort"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/rebootwatch/rebootwatch/model"
)

// DemoEndpoint names the demo's "endpoint" in the header and the JSON: no
// Prometheus is read.
const DemoEndpoint = "demo:simulated-agents"

// DemoDone is the name of the demo's cluster that plays no single-cluster
// scenario: its reboots are over.
const DemoDone = "done"

// demoStaleStop is how long before the demo's time zero the stale
// cluster's agent made its last judgement: with the default --stale-after
// (5m) it turns stale one demo minute in (six seconds at --speed 10).
const demoStaleStop = 4 * time.Minute

// demoStale is the scenario whose cluster's agent stops judging: Flatcar's
// story is of an agent that stops.
const demoStale = "flatcar"

// Demo is `rebootwatch fleet --demo`: one simulated cluster per demo
// scenario of the single-cluster dashboard (its cluster label is the
// scenario's name) and a cluster whose reboots are done. Each cluster's
// agent runs as two replicas, one leading, and exports the series a real
// agent exports (rebootwatch_agent_leader, rebootwatch_agent_last_success_
// timestamp_seconds, rebootwatch_fleet_*, rebootwatch_lock_verdict,
// rebootwatch_lock_holder, rebootwatch_node_phase, rebootwatch_node_blocked).
// Answers evaluates the refresh's queries (Queries) over those series, as
// the endpoint would, and Read goes through Build: the demo's rows are the
// real judgement of simulated answers, never a table of statuses. It only
// computes; it reads and writes nothing.
type Demo struct {
	start     time.Time
	o         Options
	scenarios []string
}

// NewDemo makes the demo fleet whose time zero is start, with one cluster
// per scenario (the single-cluster --demo values) and the done one.
func NewDemo(start time.Time, scenarios []string, staleAfter time.Duration) *Demo {
	o := Options{URL: DemoEndpoint, ClusterLabel: DefaultClusterLabel, StaleAfter: staleAfter, Lookback: DefaultLookback}
	if o.StaleAfter <= 0 {
		o.StaleAfter = DefaultStaleAfter
	}
	return &Demo{start: start, o: o, scenarios: append([]string(nil), scenarios...)}
}

// Options are the demo's options (its endpoint is DemoEndpoint).
func (d *Demo) Options() Options { return d.o }

// Scenario is the single-cluster demo scenario a row plays ("" for the
// done cluster and any other row: nothing to open).
func (d *Demo) Scenario(cluster string) string {
	for _, s := range d.scenarios {
		if s == cluster {
			return s
		}
	}
	return ""
}

// Read is one refresh of the demo at now (demo time): Build over Answers.
func (d *Demo) Read(_ context.Context, now time.Time) Fleet {
	return Build(now, d.Answers(now), d.o)
}

// Detail is a row's nodes, from its leading replica's per-node series, as
// DetailQuery reads them.
func (d *Demo) Detail(_ context.Context, k Key, now time.Time) ([]DetailNode, error) {
	var v pmodel.Vector
	for _, c := range d.clusters(now) {
		if c.name != k.Cluster {
			continue
		}
		v = append(v, maxBy(c.leaderOnly("rebootwatch_node_phase"), "node", "phase")...)
		v = append(v, maxBy(c.leaderOnly("rebootwatch_node_blocked"), "node", "kind")...)
	}
	return BuildDetail(v), nil
}

// demoSeries is one series an agent replica exports.
type demoSeries struct {
	name   string
	labels map[string]string
	value  float64
}

// demoCluster is one simulated cluster's agent: its replicas' series.
type demoCluster struct {
	name     string
	replicas [][]demoSeries
}

// leaderOnly are the series named metric of the replicas whose
// rebootwatch_agent_leader is 1, with the cluster label (the queries'
// leaderOnly).
func (c demoCluster) leaderOnly(metric string) []demoSeries {
	var out []demoSeries
	for _, r := range c.replicas {
		if !leads(r) {
			continue
		}
		out = append(out, c.named(r, metric)...)
	}
	return out
}

// named are a replica's series named metric, with the cluster label added
// as the per-cluster Prometheus's external label adds it.
func (c demoCluster) named(r []demoSeries, metric string) []demoSeries {
	var out []demoSeries
	for _, s := range r {
		if s.name != metric {
			continue
		}
		l := map[string]string{DefaultClusterLabel: c.name}
		for k, v := range s.labels {
			l[k] = v
		}
		out = append(out, demoSeries{name: s.name, labels: l, value: s.value})
	}
	return out
}

func leads(r []demoSeries) bool {
	for _, s := range r {
		if s.name == leaderSeries && s.value == 1 {
			return true
		}
	}
	return false
}

// maxBy is PromQL's max by (cluster, by...) over ss.
func maxBy(ss []demoSeries, by ...string) pmodel.Vector {
	type group struct {
		m pmodel.Metric
		v float64
	}
	groups := map[string]*group{}
	var keys []string
	for _, s := range ss {
		m := pmodel.Metric{DefaultClusterLabel: pmodel.LabelValue(s.labels[DefaultClusterLabel])}
		for _, b := range by {
			if v, ok := s.labels[b]; ok {
				m[pmodel.LabelName(b)] = pmodel.LabelValue(v)
			}
		}
		k := m.String()
		g := groups[k]
		if g == nil {
			groups[k] = &group{m: m, v: s.value}
			keys = append(keys, k)
			continue
		}
		if s.value > g.v {
			g.v = s.value
		}
	}
	sort.Strings(keys)
	out := make(pmodel.Vector, 0, len(keys))
	for _, k := range keys {
		out = append(out, &pmodel.Sample{Metric: groups[k].m, Value: pmodel.SampleValue(groups[k].v)})
	}
	return out
}

// tagged is a query part's samples, tagged as part() tags them.
func tagged(v pmodel.Vector, name string) pmodel.Vector {
	for _, s := range v {
		s.Metric[tag] = pmodel.LabelValue(name)
	}
	return v
}

// equalOne keeps ss's samples whose value is 1 (the queries' `== 1`).
func equalOne(ss []demoSeries) []demoSeries {
	var out []demoSeries
	for _, s := range ss {
		if s.value == 1 {
			out = append(out, s)
		}
	}
	return out
}

// Answers are the endpoint's answers to one refresh's queries at now, over
// the simulated agents' series: what Read would get from a Prometheus
// scraping them. Every agent exports its reboot-required count, so no
// fallback query is sent; no agent's series stopped, so no stopped one.
func (d *Demo) Answers(now time.Time) Answers {
	a := Answers{Vectors: map[string]pmodel.Vector{}, Errors: map[string]error{}, Warnings: map[string][]string{}}
	const last = "rebootwatch_agent_last_success_timestamp_seconds"
	for _, c := range d.clusters(now) {
		var all []demoSeries
		for _, r := range c.replicas {
			all = append(all, c.named(r, last)...)
		}
		nodes := map[string]float64{}
		for _, s := range c.leaderOnly("rebootwatch_fleet_nodes") {
			nodes[s.labels[DefaultClusterLabel]] += s.value
		}
		var nodeSums []demoSeries
		for cl, n := range nodes {
			nodeSums = append(nodeSums, demoSeries{labels: map[string]string{DefaultClusterLabel: cl}, value: n})
		}
		a.Vectors[QScalars] = append(a.Vectors[QScalars], tagged(maxBy(all), partLast)...)
		a.Vectors[QScalars] = append(a.Vectors[QScalars], tagged(maxBy(all), partLive)...)
		a.Vectors[QScalars] = append(a.Vectors[QScalars], tagged(maxBy(c.leaderOnly(last)), partLeaderLast)...)
		a.Vectors[QScalars] = append(a.Vectors[QScalars], tagged(maxBy(nodeSums), partNodes)...)
		a.Vectors[QScalars] = append(a.Vectors[QScalars], tagged(maxBy(c.leaderOnly("rebootwatch_fleet_reboot_required_nodes")), partRR)...)
		a.Vectors[QScalars] = append(a.Vectors[QScalars], tagged(maxBy(c.leaderOnly("rebootwatch_fleet_blocked_seconds")), partBlocked)...)
		a.Vectors[QScalars] = append(a.Vectors[QScalars], tagged(maxBy(c.leaderOnly("rebootwatch_fleet_upgraded_nodes")), partUpgraded)...)
		a.Vectors[QPhases] = append(a.Vectors[QPhases], maxBy(c.leaderOnly("rebootwatch_fleet_nodes"), "phase")...)
		a.Vectors[QLocks] = append(a.Vectors[QLocks], tagged(maxBy(equalOne(c.leaderOnly("rebootwatch_lock_verdict")), "kind", "lock", "verdict"), partVerdict)...)
		a.Vectors[QLocks] = append(a.Vectors[QLocks], tagged(maxBy(c.leaderOnly("rebootwatch_lock_holder"), "kind", "lock", "holder", "holder_node"), partHolder)...)
		a.Vectors[QLocks] = append(a.Vectors[QLocks], tagged(maxBy(equalOne(c.leaderOnly("rebootwatch_fleet_blocked")), "kind"), partBlocker)...)
	}
	return a
}

// demoNode is one node of a simulated cluster at a moment.
type demoNode struct {
	name    string
	phase   model.Phase
	blocker string
}

// demoLock is one lock object of a simulated cluster at a moment.
type demoLock struct {
	kind, lock, holder, holderNode, verdict string
	since                                   time.Time
}

// demoPicture is what one agent judged of its cluster at its last
// judgement.
type demoPicture struct {
	last           time.Time
	nodes          []demoNode
	locks          []demoLock
	blocker        string        // the fleet's blocker kind
	blocked        time.Duration // how long the fleet has been stuck behind it
	rebootRequired int
	upgraded       int
}

// clusters are the simulated clusters at now: each scenario's story at
// the demo time now−start, judged by a leading replica, and a replica
// that does not lead, one judgement behind.
func (d *Demo) clusters(now time.Time) []demoCluster {
	t := now.Sub(d.start)
	var out []demoCluster
	names := append(append([]string(nil), d.scenarios...), DemoDone)
	for _, name := range names {
		lead := d.picture(name, t, now)
		behind := d.picture(name, t-time.Minute, now.Add(-time.Minute))
		if name == demoStale {
			behind = lead
		}
		out = append(out, demoCluster{name: name, replicas: [][]demoSeries{lead.series(true), behind.series(false)}})
	}
	return out
}

// picture is the scenario's story at demo time t (now on the clock), as
// its agent judged it: the same stories the single-cluster demos play,
// told by the fleet's series.
func (d *Demo) picture(scenario string, t time.Duration, now time.Time) demoPicture {
	p := demoPicture{last: now.Add(-15 * time.Second)}
	switch scenario {
	case "fleetlock":
		// A ghost Lease blocks the default group for 47 days; the
		// workers' Lease is held by a node that rebooted and stays
		// cordoned (orphaned).
		p.nodes = []demoNode{{"control-1", model.PhaseDone, ""}, {"worker-1", model.PhaseDone, string(model.BlockerCordon)},
			{"worker-2", model.PhasePending, string(model.BlockerLock)}, {"worker-3", model.PhasePending, string(model.BlockerLock)},
			{"worker-4", model.PhaseIdle, ""}}
		p.locks = []demoLock{
			{"fleetlock", "fleetlock/fleetlock-default", "0f3a9c41d27be8e5", "", "ghost", d.start.Add(-47*24*time.Hour - 3*time.Hour)},
			{"fleetlock", "fleetlock/fleetlock-workers", "zincati-worker-1", "worker-1", "orphaned", d.start.Add(-40 * time.Minute)},
		}
		p.blocker, p.blocked = string(model.BlockerLock), 47*24*time.Hour+t
		p.rebootRequired, p.upgraded = 2, 2
	case "kured":
		if t < 10*time.Minute {
			// node-2 rebooted and still holds kured's lock.
			p.nodes = []demoNode{{"node-1", model.PhaseDone, ""}, {"node-2", model.PhaseDone, ""},
				{"node-3", model.PhasePending, string(model.BlockerLock)}, {"node-4", model.PhasePending, string(model.BlockerLock)}}
			p.locks = []demoLock{{"kured", "kube-system/kured", "node-2", "node-2", "orphaned", d.start.Add(-25 * time.Minute)}}
			p.blocker, p.blocked = string(model.BlockerLock), 25*time.Minute+t
			p.rebootRequired, p.upgraded = 2, 2
		} else {
			// Released: node-3 drains, held by a PodDisruptionBudget.
			p.nodes = []demoNode{{"node-1", model.PhaseDone, ""}, {"node-2", model.PhaseDone, ""},
				{"node-3", model.PhaseDraining, string(model.BlockerDrain)}, {"node-4", model.PhasePending, string(model.BlockerLock)}}
			p.locks = []demoLock{{"kured", "kube-system/kured", "node-3", "node-3", "held", d.start.Add(10 * time.Minute)}}
			p.blocker, p.blocked = string(model.BlockerDrain), t-10*time.Minute
			p.rebootRequired, p.upgraded = 2, 2
		}
	case "suc":
		if t < 15*time.Minute {
			// The upgrade job's drain is held by a PodDisruptionBudget.
			p.nodes = []demoNode{{"worker-1", model.PhaseDone, ""}, {"worker-2", model.PhaseDraining, string(model.BlockerDrain)},
				{"worker-3", model.PhasePending, ""}}
			p.locks = []demoLock{{"suc", "system-upgrade/os-upgrade", "worker-2", "worker-2", "held", d.start.Add(-5 * time.Minute)}}
			p.blocker, p.blocked = string(model.BlockerDrain), 5*time.Minute+t
		} else {
			// The job failed: worker-2 is left cordoned.
			p.nodes = []demoNode{{"worker-1", model.PhaseDone, ""}, {"worker-2", model.PhaseDown, "job-failed"},
				{"worker-3", model.PhasePending, ""}}
			p.locks = []demoLock{{"suc", "system-upgrade/os-upgrade", "worker-2", "worker-2", "held", d.start.Add(-5 * time.Minute)}}
			p.blocker, p.blocked = "job-failed", t-15*time.Minute
		}
		p.rebootRequired, p.upgraded = 2, 1
	case demoStale:
		// The node's update agent stopped after its reboot, leaving it
		// cordoned and the slot taken; and this cluster's
		// rebootwatch-agent stopped judging: its last judgement ages.
		p.last = d.start.Add(-demoStaleStop)
		p.nodes = []demoNode{{"flatcar-1", model.PhaseDone, ""}, {"flatcar-2", model.PhaseRecovering, "agent-stopped"},
			{"flatcar-3", model.PhasePending, string(model.BlockerLock)}}
		p.locks = []demoLock{{"flatcar", "reboot-coordinator/flatcar-linux-update-operator", "flatcar-2", "flatcar-2", "held", d.start.Add(-30 * time.Minute)}}
		p.blocker, p.blocked = "agent-stopped", 20*time.Minute
		p.rebootRequired, p.upgraded = 2, 1
	case DemoDone:
		p.nodes = []demoNode{{"node-1", model.PhaseDone, ""}, {"node-2", model.PhaseDone, ""}, {"node-3", model.PhaseDone, ""}}
		p.locks = []demoLock{{"kured", "kube-system/kured", "", "", "free", time.Time{}}}
		p.upgraded = 3
	default:
		// A scenario this fleet has no story for: its nodes reboot one
		// by one, nothing blocks.
		p.nodes = []demoNode{{"node-1", model.PhaseDone, ""}, {"node-2", model.PhaseRebooting, ""}, {"node-3", model.PhasePending, ""}}
		p.rebootRequired, p.upgraded = 2, 1
	}
	if p.blocked < 0 {
		p.blocked = 0
	}
	return p
}

// verdicts are rebootwatch_lock_verdict's verdict label values.
var demoVerdicts = []string{"free", "held", "ghost", "orphaned", "expired", "ambiguous", "unknown"}

// series are the series an agent replica exports for p (as
// internal/agent's Metrics do).
func (p demoPicture) series(leader bool) []demoSeries {
	s := func(name string, v float64, kv ...string) demoSeries {
		l := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		return demoSeries{name: name, labels: l, value: v}
	}
	b := 0.0
	if leader {
		b = 1
	}
	out := []demoSeries{
		s(leaderSeries, b),
		s("rebootwatch_agent_last_success_timestamp_seconds", float64(p.last.UnixNano())/1e9),
		s("rebootwatch_fleet_reboot_required_nodes", float64(p.rebootRequired)),
		s("rebootwatch_fleet_upgraded_nodes", float64(p.upgraded)),
		s("rebootwatch_fleet_blocked_seconds", p.blocked.Seconds()),
	}
	phases := map[model.Phase]int{}
	for _, n := range p.nodes {
		phases[n.phase]++
		out = append(out, s("rebootwatch_node_phase", 1, "node", n.name, "phase", string(n.phase)))
		if n.blocker != "" {
			out = append(out, s("rebootwatch_node_blocked", 1, "node", n.name, "kind", n.blocker))
		}
	}
	for _, ph := range model.AllPhases {
		out = append(out, s("rebootwatch_fleet_nodes", float64(phases[ph]), "phase", string(ph)))
	}
	kinds := []string{string(model.BlockerLock), string(model.BlockerDrain), string(model.BlockerCordon), "job-failed", "agent-stopped"}
	for _, k := range kinds {
		v := 0.0
		if k == p.blocker {
			v = 1
		}
		out = append(out, s("rebootwatch_fleet_blocked", v, "kind", k))
	}
	for _, l := range p.locks {
		for _, v := range demoVerdicts {
			x := 0.0
			if v == l.verdict {
				x = 1
			}
			out = append(out, s("rebootwatch_lock_verdict", x, "kind", l.kind, "lock", l.lock, "verdict", v))
		}
		if l.holder != "" {
			since := 0.0
			if !l.since.IsZero() {
				since = float64(l.since.UnixNano()) / 1e9
			}
			out = append(out, s("rebootwatch_lock_holder", since, "kind", l.kind, "lock", l.lock, "holder", l.holder, "holder_node", l.holderNode))
		}
	}
	return out
}
