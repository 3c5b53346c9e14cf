package fleet

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/rebootwatch/rebootwatch/model"
)

// verdictRank orders lock verdicts worst first (the row's status follows
// its worst lock).
var verdictRank = map[string]int{"ghost": 0, "orphaned": 1, "expired": 2, "ambiguous": 3, "unknown": 4, "held": 5, "free": 6}

func rankOf(v string) int {
	if r, ok := verdictRank[v]; ok {
		return r
	}
	return 4 // an unknown word is as good as an unknown verdict
}

// Build turns the answers of one refresh, evaluated at now, into the
// fleet's rows, worst first. It is pure: tests feed it fixtures.
func Build(now time.Time, a Answers, o Options) Fleet {
	if o.ClusterLabel == "" {
		o.ClusterLabel = DefaultClusterLabel
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = DefaultStaleAfter
	}
	f := Fleet{At: now, ClusterLabel: o.ClusterLabel, StaleAfter: o.StaleAfter}
	if len(a.Errors) > 0 {
		var ids []string
		for id := range a.Errors {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		var msgs []string
		for _, id := range ids {
			msgs = append(msgs, id+": "+a.Errors[id].Error())
		}
		f.Err = errors.New("could not read the endpoint: " + strings.Join(msgs, "; "))
	}
	rows := map[string]*Row{}
	row := func(s *pmodel.Sample) *Row {
		c := string(s.Metric[pmodel.LabelName(o.ClusterLabel)])
		r := rows[c]
		if r == nil {
			ctx := c
			if m, ok := o.ContextFor[c]; ok {
				ctx = m
			}
			r = &Row{Cluster: c, Context: ctx}
			rows[c] = r
		}
		return r
	}
	intp := func(v pmodel.SampleValue) *int {
		n := int(math.Round(float64(v)))
		return &n
	}
	// Rows: one per cluster the agents report from, or kured and
	// kube-state-metrics do.
	for _, c := range a.Clusters {
		row(&pmodel.Sample{Metric: pmodel.Metric{pmodel.LabelName(o.ClusterLabel): pmodel.LabelValue(c)}})
	}
	var kuredRR = map[string]*int{}
	for _, s := range append(append(pmodel.Vector(nil), a.Vectors[QScalars]...), a.Vectors[QFallback]...) {
		if math.IsNaN(float64(s.Value)) {
			continue
		}
		r := row(s)
		switch string(s.Metric[tag]) {
		case partKuredRR:
			kuredRR[r.Cluster] = intp(s.Value)
		case partLast:
			t := time.Unix(0, int64(float64(s.Value)*1e9))
			age := now.Sub(t).Seconds()
			if age < 0 {
				age = 0
			}
			r.LastJudgement, r.DataAgeSeconds = &t, &age
		case partRR:
			r.RebootRequired = intp(s.Value)
		case partCordoned:
			r.Cordoned = intp(s.Value)
		case partKSMNodes:
			if r.Nodes == nil {
				r.Nodes = intp(s.Value)
			}
		case partLeaseNodes:
			if r.Nodes == nil {
				r.Nodes = intp(s.Value)
			}
		case partBlocked:
			r.BlockedSeconds = float64(s.Value)
		case partUpgraded:
			r.Upgraded = intp(s.Value)
		}
	}
	for _, s := range a.Vectors[QPhases] {
		r := row(s)
		if r.Phases == nil {
			r.Phases = map[string]int{}
		}
		r.Phases[string(s.Metric["phase"])] = int(math.Round(float64(s.Value)))
	}
	for c, n := range kuredRR {
		if r := rows[c]; r.RebootRequired == nil {
			r.RebootRequired = n
		}
	}
	var verdicts, holders, blockers pmodel.Vector
	for _, s := range a.Vectors[QLocks] {
		switch string(s.Metric[tag]) {
		case partVerdict:
			verdicts = append(verdicts, s)
		case partHolder:
			holders = append(holders, s)
		case partBlocker:
			blockers = append(blockers, s)
		}
	}
	verdictOf := map[string]map[string]string{} // cluster → kind/lock → worst verdict
	for _, s := range verdicts {
		r := row(s)
		k := string(s.Metric["kind"]) + "\x00" + string(s.Metric["lock"])
		v := string(s.Metric["verdict"])
		m := verdictOf[r.Cluster]
		if m == nil {
			m = map[string]string{}
			verdictOf[r.Cluster] = m
		}
		if old, ok := m[k]; !ok || rankOf(v) < rankOf(old) {
			m[k] = v
		}
	}
	for c, m := range verdictOf {
		r := rows[c]
		r.Verdicts = map[string]int{}
		for _, v := range m {
			r.Verdicts[v]++
		}
	}
	for _, s := range holders {
		r := row(s)
		l := Lock{Kind: string(s.Metric["kind"]), Lock: string(s.Metric["lock"]), Holder: string(s.Metric["holder"]),
			HolderNode: string(s.Metric["holder_node"]), Verdict: "unknown"}
		if v, ok := verdictOf[r.Cluster][l.Kind+"\x00"+l.Lock]; ok {
			l.Verdict = v
		}
		if s.Value > 0 {
			t := time.Unix(0, int64(float64(s.Value)*1e9))
			l.Since = &t
		}
		r.Locks = append(r.Locks, l)
	}
	for _, s := range blockers {
		r := row(s)
		k := string(s.Metric["kind"])
		if r.Blocker == "" || model.BlockerKind(k).Rank() < model.BlockerKind(r.Blocker).Rank() {
			r.Blocker = k
		}
	}
	for _, r := range rows {
		judge(r, now, o.StaleAfter)
		f.Rows = append(f.Rows, *r)
	}
	Sort(f.Rows)
	return f
}

// judge sets a row's sources, status and what it cannot know.
func judge(r *Row, now time.Time, staleAfter time.Duration) {
	sort.SliceStable(r.Locks, func(i, j int) bool {
		a, b := r.Locks[i], r.Locks[j]
		if ra, rb := rankOf(a.Verdict), rankOf(b.Verdict); ra != rb {
			return ra < rb
		}
		if a.Lock != b.Lock {
			return a.Lock < b.Lock
		}
		return a.Holder < b.Holder
	})
	agent := r.LastJudgement != nil
	if agent {
		r.Sources = append(r.Sources, SourceAgent)
	}
	if r.RebootRequired != nil {
		r.Sources = append(r.Sources, SourceKured)
	} else {
		r.Unknown = append(r.Unknown, "reboot-required: kured_reboot_required is not exported")
	}
	if r.Cordoned != nil {
		r.Sources = append(r.Sources, SourceKSM)
	}
	if !agent {
		r.Status = StatusNoAgent
		r.Unknown = append(r.Unknown, "lock holder and verdict, node phases and blockers: no rebootwatch-agent reports in this cluster")
		return
	}
	if age := now.Sub(*r.LastJudgement); age > staleAfter {
		r.Status = StatusStale
		r.Unknown = append(r.Unknown, fmt.Sprintf("the agent's last judgement is %s old (stale after %s): its figures are not current",
			humanSeconds(age.Seconds()), humanSeconds(staleAfter.Seconds())))
		return
	}
	// The phases and the verdicts come from the same scrape: with phases
	// and no verdict series, the agent judged no lock object.
	if r.Phases == nil {
		r.Status = StatusUnknown
		r.Unknown = append(r.Unknown, "the agent reports, but its node phases are not in Prometheus (yet)")
		return
	}
	worst := ""
	for v := range r.Verdicts {
		if worst == "" || rankOf(v) < rankOf(worst) {
			worst = v
		}
	}
	switch {
	case worst == "ghost":
		r.Status = StatusGhost
	case worst == "orphaned":
		r.Status = StatusOrphaned
	case worst == "expired":
		r.Status = StatusExpired
	case worst == "ambiguous":
		r.Status = StatusAmbiguous
	case worst != "" && rankOf(worst) == 4:
		r.Status = StatusUnknown
	case r.BlockedSeconds > 0:
		r.Status = StatusBlocked
	case r.InCycle() > 0 || r.Phases["pending"] > 0 || len(r.Locks) > 0:
		r.Status = StatusInProgress
	default:
		r.Status = StatusDone
	}
}

// NodeCount is the row's node count: the agent's phases' sum, else what
// kube-state-metrics counts (nil: unknown).
func (r Row) NodeCount() *int {
	if r.Phases != nil {
		n := 0
		for _, v := range r.Phases {
			n += v
		}
		return &n
	}
	return r.Nodes
}

func humanSeconds(s float64) string {
	return model.HumanDuration(time.Duration(s * float64(time.Second)))
}
