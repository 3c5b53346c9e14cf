package agent

import (
	"bufio"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/model"
)

// FixedSeries bounds the series an agent exports besides its per-node and
// per-holder ones: the series the fleet view reads from Prometheus
// (issue 25 §1; docs/fleet.md). Their cardinality is bounded by the
// cluster's size: one phase series per node, at most one blocker series per
// node, one holder series per held lock entry. With N nodes, L lock objects
// and H held entries an agent exports at most
//
//	2·N + 8·L + H + FixedSeries
//
// series (per lock: 7 verdicts and held_seconds; FixedSeries covers the
// agent's and fleet's gauges, the bounded action and API-error counters and
// the Go and process collectors). TestMetricsSeriesBudget holds it at 5,000
// nodes.
const FixedSeries = 200

// labelWidth bounds a label value taken from the cluster (a Kubernetes
// name is at most 253 characters): a hostile holder id cannot make one
// series arbitrarily large.
const labelWidth = 253

// labelValue is a cluster string made safe to export: one line, controls
// escaped, at most labelWidth cells.
func labelValue(s string) string { return sanitize.Short(s, labelWidth) }

// NodeSeries is one node in the per-node series: its phase and the kind of
// its first blocker ("" when nothing blocks it).
type NodeSeries struct {
	Node    string
	Phase   model.Phase
	Blocker model.BlockerKind
}

// HolderSeries is one held lock entry: rebootwatch_lock_holder's labels
// and the time the hold started (zero when unknown).
type HolderSeries struct {
	Kind       model.LockKind
	Lock       string
	Holder     string
	HolderNode string
	Since      time.Time
}

// fleetCollector exports the per-node and per-holder series from the last
// judgement's copy, swapped in whole, so a scrape never sees half of one
// judgement and the next.
type fleetCollector struct {
	phase, blocked, holder, required *prometheus.Desc

	mu      sync.Mutex
	nodes   []NodeSeries
	holders []HolderSeries
	// requiredN is how many nodes need a reboot; -1 when that is not
	// known for every node (the series is then absent).
	requiredN int
}

func newFleetCollector() *fleetCollector {
	return &fleetCollector{
		phase:    prometheus.NewDesc(phaseName, phaseHelp, []string{"node", "phase"}, nil),
		blocked:  prometheus.NewDesc(blockedName, blockedHelp, []string{"node", "kind"}, nil),
		required: prometheus.NewDesc(requiredName, requiredHelp, nil, nil),
		holder:   prometheus.NewDesc(holderName, holderHelp, []string{"kind", "lock", "holder", "holder_node"}, nil),
	}
}

func (c *fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.phase
	ch <- c.blocked
	ch <- c.holder
	ch <- c.required
}

func (c *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	nodes, holders, required := c.nodes, c.holders, c.requiredN
	c.mu.Unlock()
	if required >= 0 {
		ch <- prometheus.MustNewConstMetric(c.required, prometheus.GaugeValue, float64(required))
	}
	for _, n := range nodes {
		ch <- prometheus.MustNewConstMetric(c.phase, prometheus.GaugeValue, 1, n.Node, string(n.Phase))
		if n.Blocker != "" {
			ch <- prometheus.MustNewConstMetric(c.blocked, prometheus.GaugeValue, 1, n.Node, string(n.Blocker))
		}
	}
	for _, h := range holders {
		ch <- prometheus.MustNewConstMetric(c.holder, prometheus.GaugeValue, holderSince(h), string(h.Kind), h.Lock, h.Holder, h.HolderNode)
	}
}

// Help texts and label names of the per-node families, shared by their
// Descs (Collect) and the text the handler writes (writeText).
const (
	phaseName    = "rebootwatch_node_phase"
	phaseHelp    = "1 for each node's current reboot phase (one series per node)."
	blockedName  = "rebootwatch_node_blocked"
	blockedHelp  = "1 for the kind of the first blocker of each waiting node (absent for a node nothing blocks)."
	requiredName = "rebootwatch_fleet_reboot_required_nodes"
	requiredHelp = "Nodes whose kured_reboot_required is 1, as the agent read it; absent while that is not known for every node."
	holderName   = "rebootwatch_lock_holder"
	holderHelp   = "One series per held lock entry: its holder id and the node it maps to (\"\" for a ghost or ambiguous holder); the value is the Unix time the hold started, 0 when unknown."
)

// writeText writes the same series as Collect, in Prometheus' text format
// (0.0.4) as expfmt writes it: a family's HELP and TYPE lines, then one
// line per series; a family without series is left out, as a gathered
// registry leaves it out. Nothing is allocated per series.
func (c *fleetCollector) writeText(w *bufio.Writer) error {
	c.mu.Lock()
	nodes, holders, required := c.nodes, c.holders, c.requiredN
	c.mu.Unlock()
	if required >= 0 {
		writeFamily(w, requiredName, requiredHelp)
		_, _ = w.WriteString(requiredName)
		_ = w.WriteByte(' ')
		writeValue(w, float64(required))
	}
	if len(nodes) > 0 {
		writeFamily(w, phaseName, phaseHelp)
		for _, n := range nodes {
			writeSeries(w, phaseName, 1, "node", n.Node, "phase", string(n.Phase))
		}
	}
	blocked := false
	for _, n := range nodes {
		if n.Blocker == "" {
			continue
		}
		if !blocked {
			writeFamily(w, blockedName, blockedHelp)
			blocked = true
		}
		writeSeries(w, blockedName, 1, "kind", string(n.Blocker), "node", n.Node)
	}
	if len(holders) > 0 {
		writeFamily(w, holderName, holderHelp)
		for _, h := range holders {
			writeSeries(w, holderName, holderSince(h), "holder", h.Holder, "holder_node", h.HolderNode, "kind", string(h.Kind), "lock", h.Lock)
		}
	}
	// A bufio.Writer keeps its first error and returns it from then on.
	_, err := w.Write(nil)
	return err
}

// holderSince is rebootwatch_lock_holder's value: the Unix time the hold
// started, 0 when unknown.
func holderSince(h HolderSeries) float64 {
	if h.Since.IsZero() {
		return 0
	}
	return float64(h.Since.UnixNano()) / 1e9
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// writeFamily writes a gauge family's HELP and TYPE lines.
func writeFamily(w *bufio.Writer, name, help string) {
	_, _ = w.WriteString("# HELP ")
	_, _ = w.WriteString(name)
	_ = w.WriteByte(' ')
	_, _ = helpEscaper.WriteString(w, help)
	_, _ = w.WriteString("\n# TYPE ")
	_, _ = w.WriteString(name)
	_, _ = w.WriteString(" gauge\n")
}

// writeSeries writes one series' line; labels are name, value pairs in the
// order of their names, as client_golang sorts them.
func writeSeries(w *bufio.Writer, name string, v float64, labels ...string) {
	_, _ = w.WriteString(name)
	for i := 0; i+1 < len(labels); i += 2 {
		if i == 0 {
			_ = w.WriteByte('{')
		} else {
			_ = w.WriteByte(',')
		}
		_, _ = w.WriteString(labels[i])
		_, _ = w.WriteString(`="`)
		_, _ = labelEscaper.WriteString(w, labels[i+1])
		_ = w.WriteByte('"')
	}
	if len(labels) > 0 {
		_ = w.WriteByte('}')
	}
	_ = w.WriteByte(' ')
	writeValue(w, v)
}

// writeValue writes a sample's value and ends its line, formatted as
// expfmt formats it.
func writeValue(w *bufio.Writer, v float64) {
	switch {
	case v == 1:
		_ = w.WriteByte('1')
	case v == 0:
		_ = w.WriteByte('0')
	case math.IsNaN(v):
		_, _ = w.WriteString("NaN")
	case math.IsInf(v, +1):
		_, _ = w.WriteString("+Inf")
	case math.IsInf(v, -1):
		_, _ = w.WriteString("-Inf")
	default:
		_, _ = w.Write(strconv.AppendFloat(w.AvailableBuffer(), v, 'g', -1, 64))
	}
	_ = w.WriteByte('\n')
}

// SetRebootRequired sets how many nodes need a reboot; n < 0 (not known
// for every node) removes the series.
func (m *Metrics) SetRebootRequired(n int) {
	m.PerNode.mu.Lock()
	m.PerNode.requiredN = n
	m.PerNode.mu.Unlock()
}

// SetNodes replaces the per-node series. Node names are sanitised and
// shortened; two nodes whose names sanitise alike keep the first.
func (m *Metrics) SetNodes(nodes []NodeSeries) {
	out := make([]NodeSeries, 0, len(nodes))
	seen := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		n.Node = labelValue(n.Node)
		if seen[n.Node] {
			continue
		}
		seen[n.Node] = true
		out = append(out, n)
	}
	m.PerNode.mu.Lock()
	m.PerNode.nodes = out
	m.PerNode.mu.Unlock()
}

// SetHolders replaces the per-holder series: one per held entry of the
// statuses (a kured multi-lock naming one holder twice exports it once),
// then one per held slot of every kind without a lock object (groups that
// are not Lock: a SUC Plan's, lock "namespace/name"; FLUO's, lock ""), so
// that rebootwatch fleet sees every kind's holders.
func (m *Metrics) SetHolders(statuses []model.LockStatus, groups ...model.SlotGroup) {
	var out []HolderSeries
	seen := map[HolderSeries]bool{}
	for _, g := range groups {
		if g.Lock {
			continue
		}
		for _, sh := range g.Holders {
			h := HolderSeries{Kind: g.Kind, Lock: labelValue(g.Owner), Holder: labelValue(sh.Holder), HolderNode: labelValue(sh.Node)}
			if seen[h] {
				continue
			}
			seen[h] = true
			h.Since = sh.Since
			out = append(out, h)
		}
	}
	for _, s := range statuses {
		if s.Holder == "" {
			continue
		}
		h := HolderSeries{Kind: s.Kind, Lock: labelValue(lockLabel(s)), Holder: labelValue(s.Holder), HolderNode: labelValue(s.HolderNode())}
		if seen[h] {
			continue
		}
		seen[h] = true
		h.Since = s.Created
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Lock != b.Lock {
			return a.Lock < b.Lock
		}
		return a.Holder < b.Holder
	})
	m.PerNode.mu.Lock()
	m.PerNode.holders = out
	m.PerNode.mu.Unlock()
}

// rebootRequired counts the nodes that need a reboot, -1 when that is not
// known for every node (or there is none).
func rebootRequired(c *model.Cluster) int {
	names := c.NodeNames()
	if len(names) == 0 {
		return -1
	}
	n := 0
	for _, name := range names {
		req, known := c.RebootRequired(name)
		if !known {
			return -1
		}
		if req {
			n++
		}
	}
	return n
}

// nodeSeries is the per-node view of a judged cluster: each node's phase
// and its first blocker's kind.
func nodeSeries(c *model.Cluster) []NodeSeries {
	names := c.NodeNames()
	out := make([]NodeSeries, 0, len(names))
	for _, name := range names {
		n := NodeSeries{Node: name, Phase: c.Phase(name)}
		if bs := c.NodeBlockers(name); len(bs) > 0 {
			n.Blocker = bs[0].Kind
		}
		out = append(out, n)
	}
	return out
}
