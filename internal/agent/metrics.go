package agent

import (
	"bufio"
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/rebootwatch/rebootwatch/model"
)

// Metrics are the agent's rebootwatch_… series (DESIGN §9) on a registry of
// their own.
type Metrics struct {
	// Registry holds every collector but PerNode, which Handler writes
	// straight from its slices and Gather adds.
	Registry *prometheus.Registry

	Iterations  *prometheus.CounterVec // rebootwatch_agent_iterations_total{result}
	LastSuccess prometheus.Gauge       // rebootwatch_agent_last_success_timestamp_seconds
	IsLeader    prometheus.Gauge       // rebootwatch_agent_leader
	HeldSeconds *prometheus.GaugeVec   // rebootwatch_lock_held_seconds{kind,lock}
	Verdict     *prometheus.GaugeVec   // rebootwatch_lock_verdict{kind,lock,verdict}
	Actions     *prometheus.CounterVec // rebootwatch_actions_total{kind,action,result}
	APIErrors   *prometheus.CounterVec // rebootwatch_api_errors_total{verb}

	FleetNodes    *prometheus.GaugeVec // rebootwatch_fleet_nodes{phase}
	FleetUpgraded prometheus.Gauge     // rebootwatch_fleet_upgraded_nodes
	FleetBlocked  prometheus.Gauge     // rebootwatch_fleet_blocked_seconds
	FleetBlocker  *prometheus.GaugeVec // rebootwatch_fleet_blocked{kind}

	// SlotsCapacity and SlotsHeld are rebootwatch_slots_capacity{kind,owner}
	// and rebootwatch_slots_held{kind,owner}: every kind's slot groups (a
	// lock object, a SUC Plan, FLUO's slot); capacity is absent when not
	// known, held when the slots could not be read (SetSlots).
	SlotsCapacity *prometheus.GaugeVec
	SlotsHeld     *prometheus.GaugeVec

	// PerNode is rebootwatch_node_phase{node,phase},
	// rebootwatch_node_blocked{node,kind} and
	// rebootwatch_lock_holder{kind,lock,holder,holder_node} (SetNodes,
	// SetHolders). It is not in Registry: see Handler.
	PerNode *fleetCollector

	// HandlerErrors is promhttp_metric_handler_errors_total{cause}: scrapes
	// that failed gathering the registry or writing the answer.
	HandlerErrors *prometheus.CounterVec
}

// AllVerdicts are the verdict label values, each exported 0 or 1 per lock.
var AllVerdicts = []model.Verdict{model.VerdictFree, model.VerdictHeld, model.VerdictGhost, model.VerdictOrphaned,
	model.VerdictExpired, model.VerdictAmbiguous, model.VerdictUnknown}

// NewMetrics registers the agent's metrics (plus Go and process collectors).
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Iterations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rebootwatch_agent_iterations_total",
			Help: "Agent iterations by result (ok: judged from fresh data; degraded: judged, some data unusable; error: the API could not be read).",
		}, []string{"result"}),
		LastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rebootwatch_agent_last_success_timestamp_seconds",
			Help: "Unix time of the last iteration that read the API successfully.",
		}),
		IsLeader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rebootwatch_agent_leader",
			Help: "1 while this agent is the leader (the only one that acts), else 0.",
		}),
		HeldSeconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rebootwatch_lock_held_seconds",
			Help: "Seconds each lock has been held (absent when free or when the take time is unknown).",
		}, []string{"kind", "lock"}),
		Verdict: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rebootwatch_lock_verdict",
			Help: "1 for each lock's current verdict, 0 for the others.",
		}, []string{"kind", "lock", "verdict"}),
		Actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rebootwatch_actions_total",
			Help: "Actions the agent attempted, by lock kind, action and result (done, dry-run, refused, conflict, forbidden, error).",
		}, []string{"kind", "action", "result"}),
		APIErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rebootwatch_api_errors_total",
			Help: "Kubernetes API calls that failed (transport error or HTTP status >= 400), by verb.",
		}, []string{"verb"}),
		FleetNodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rebootwatch_fleet_nodes",
			Help: "Nodes by reboot phase (idle, pending, draining, rebooting, recovering, done, down, unknown).",
		}, []string{"phase"}),
		FleetUpgraded: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rebootwatch_fleet_upgraded_nodes",
			Help: "Nodes running the fleet's target OS image and kernel (the newest seen).",
		}),
		FleetBlocked: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rebootwatch_fleet_blocked_seconds",
			Help: "Seconds the fleet has been stuck: its blocker (rebootwatch_fleet_blocked) is one that does not clear by itself (not a closed reboot window, kured's release delay or reboot-required unknown) and no node phase or lock holder changed; 0 when not stuck.",
		}),
		FleetBlocker: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rebootwatch_fleet_blocked",
			Help: "1 for the kind of blocker that stops the fleet now (the first waiting node's, or the fleet's as a whole), 0 for the other kinds; all 0 when nothing stops it.",
		}, []string{"kind"}),
		SlotsCapacity: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rebootwatch_slots_capacity",
			Help: "How many nodes each coordinator's slot group (a lock object, a system-upgrade-controller Plan, the Flatcar operator's slot) lets through at once; absent when not known.",
		}, []string{"kind", "owner"}),
		SlotsHeld: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rebootwatch_slots_held",
			Help: "How many nodes hold a slot of each coordinator's slot group; absent when its slots could not be read (unknown, not 0). Above rebootwatch_slots_capacity: the coordinator's own limit is broken.",
		}, []string{"kind", "owner"}),
		PerNode: newFleetCollector(),
		HandlerErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhttp_metric_handler_errors_total",
			Help: "Scrapes of /metrics that failed, by cause (gathering: the registry could not be gathered, the answer was 500; encoding: the answer could not be written whole).",
		}, []string{"cause"}),
	}
	m.PerNode.requiredN = -1
	m.Registry.MustRegister(m.Iterations, m.LastSuccess, m.IsLeader, m.HeldSeconds, m.Verdict, m.Actions, m.APIErrors,
		m.FleetNodes, m.FleetUpgraded, m.FleetBlocked, m.FleetBlocker, m.SlotsCapacity, m.SlotsHeld, m.HandlerErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, c := range []string{"gathering", "encoding"} {
		m.HandlerErrors.WithLabelValues(c)
	}
	for _, r := range []string{resultOK, resultDegraded, resultError} {
		m.Iterations.WithLabelValues(r)
	}
	for _, k := range model.AllBlockerKinds {
		m.FleetBlocker.WithLabelValues(string(k))
	}
	return m
}

// Gather is every family the agent exports, PerNode's included, as a
// prometheus.Gatherer has them (for tests and tools; Handler does not use
// it for PerNode).
func (m *Metrics) Gather() ([]*dto.MetricFamily, error) {
	per := prometheus.NewPedanticRegistry()
	if err := per.Register(m.PerNode); err != nil {
		return nil, err
	}
	return prometheus.Gatherers{m.Registry, per}.Gather()
}

// textFormat is the one exposition format the handler answers in:
// Prometheus' text format 0.0.4, which every scraper accepts.
var textFormat = expfmt.NewFormat(expfmt.TypeTextPlain)

// Handler serves /metrics in the text format (gzipped when the scraper
// accepts gzip): the registry's families through expfmt, then PerNode's
// written straight from the last judgement's slices. Those are one or two
// series per node, and built as client_golang metrics (a metric, its label
// pairs and its dto copy per series) a scrape at 5,000 nodes allocated
// about 4 MB that was all alive at once until the answer was written,
// which raised the next garbage collection's goal by as much
// (docs/performance.md, "The per-node series written as they are read").
// A registry that cannot be gathered answers 500 and writes nothing of
// PerNode, as promhttp does.
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(rsp http.ResponseWriter, req *http.Request) {
		mfs, err := m.Registry.Gather()
		if err != nil {
			m.HandlerErrors.WithLabelValues("gathering").Inc()
			http.Error(rsp, "An error has occurred while serving metrics:\n\n"+err.Error(), http.StatusInternalServerError)
			return
		}
		h := rsp.Header()
		h.Add("Vary", "Accept-Encoding")
		h.Set("Content-Type", string(textFormat))
		var out io.Writer = rsp
		var gz *gzip.Writer
		if acceptsGzip(req.Header.Get("Accept-Encoding")) {
			h.Set("Content-Encoding", "gzip")
			gz = gzip.NewWriter(rsp)
			out = gz
		}
		bw := bufio.NewWriterSize(out, 32<<10)
		enc := expfmt.NewEncoder(bw, textFormat)
		for _, mf := range mfs {
			if err = enc.Encode(mf); err != nil {
				break
			}
		}
		if err == nil {
			err = m.PerNode.writeText(bw)
		}
		if err == nil {
			err = bw.Flush()
		}
		if err == nil && gz != nil {
			err = gz.Close()
		}
		if err != nil {
			// The status is sent: the scraper sees a cut answer.
			m.HandlerErrors.WithLabelValues("encoding").Inc()
		}
	})
}

// acceptsGzip reports whether an Accept-Encoding header accepts gzip with
// a q-value above 0.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		for _, p := range strings.Split(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				return err == nil && q > 0
			}
		}
		return true
	}
	return false
}

// SetFleet sets the fleet's progress, its blocker's kind and its blocked time.
func (m *Metrics) SetFleet(f model.Fleet, b *model.FleetBlocker, blocked time.Duration) {
	for _, p := range model.AllPhases {
		m.FleetNodes.WithLabelValues(string(p)).Set(float64(f.Phases[p]))
	}
	m.FleetUpgraded.Set(float64(f.Upgraded))
	m.FleetBlocked.Set(blocked.Seconds())
	for _, k := range model.AllBlockerKinds {
		v := 0.0
		if b != nil && b.Kind == k {
			v = 1
		}
		m.FleetBlocker.WithLabelValues(string(k)).Set(v)
	}
}

// SetSlots replaces the slot series with every kind's slot groups.
func (m *Metrics) SetSlots(groups []model.SlotGroup) {
	m.SlotsCapacity.Reset()
	m.SlotsHeld.Reset()
	for _, g := range groups {
		kind, owner := labelValue(string(g.Kind)), labelValue(g.Owner)
		if g.Capacity > 0 {
			m.SlotsCapacity.WithLabelValues(kind, owner).Set(float64(g.Capacity))
		}
		if g.Known {
			m.SlotsHeld.WithLabelValues(kind, owner).Set(float64(len(g.Holders)))
		}
	}
}

// lockLabel is the lock label value: namespace/name. A kured multi-lock's
// entries share it (SetLocks keeps the worst verdict and the longest hold).
func lockLabel(s model.LockStatus) string { return s.Namespace + "/" + s.Name }

// SetLocks replaces the per-lock series with the statuses of one judgement.
func (m *Metrics) SetLocks(statuses []model.LockStatus, now time.Time) {
	m.HeldSeconds.Reset()
	m.Verdict.Reset()
	type key struct{ kind, lock string }
	verdicts := map[key]model.Verdict{}
	for _, s := range statuses {
		k := key{string(s.Kind), labelValue(lockLabel(s))}
		// A kured multi-lock yields several statuses for one object: the
		// worst verdict (the one needing attention) wins.
		if old, ok := verdicts[k]; !ok || rank(s.Verdict) > rank(old) {
			verdicts[k] = s.Verdict
		}
		if d, ok := s.HeldFor(now); ok {
			g := m.HeldSeconds.WithLabelValues(k.kind, k.lock)
			// Longest-held entry of the object.
			if cur := gaugeValue(g); d.Seconds() > cur {
				g.Set(d.Seconds())
			}
		}
	}
	for k, v := range verdicts {
		for _, each := range AllVerdicts {
			val := 0.0
			if each == v {
				val = 1
			}
			m.Verdict.WithLabelValues(k.kind, k.lock, string(each)).Set(val)
		}
	}
}

func rank(v model.Verdict) int {
	switch v {
	case model.VerdictFree:
		return 0
	case model.VerdictHeld:
		return 1
	case model.VerdictUnknown:
		return 2
	case model.VerdictAmbiguous:
		return 3
	}
	return 4 // ghost, orphaned, expired
}
