package fleet

import (
	"errors"
	"fmt"
	"math"
	"net/url"
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

// What each query feeds, for the rows when it failed.
var feeds = map[string]string{
	QScalars:  "the agent's last judgement, reboot-required and blocked time",
	QPhases:   "node phases",
	QLocks:    "lock holders, verdicts and the fleet's blocker",
	QFallback: "kured's and kube-state-metrics' figures",
	QStopped:  "the last lock state the stopped agent exported",
}

// agentState is what the scalars say of one row's agent.
type agentState struct {
	live       bool       // some replica's last success is in Prometheus now
	leaderLast *time.Time // the leading replica's last success, now
	nodes      *int       // the most nodes one leading replica counts
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
		f.Err = endpointError(a.Errors)
	}
	var wids []string
	for id := range a.Warnings {
		wids = append(wids, id)
	}
	sort.Strings(wids)
	for _, id := range wids {
		for _, w := range a.Warnings[id] {
			f.Warnings = append(f.Warnings, id+": "+w)
		}
	}
	rows := map[Key]*Row{}
	agents := map[Key]*agentState{}
	row := func(s *pmodel.Sample) *Row {
		k := keyOf(s.Metric, o.ClusterLabel)
		r := rows[k]
		if r == nil {
			r = &Row{Cluster: k.Cluster, Job: k.Job, Instance: k.Instance, Unlabelled: k.Cluster == ""}
			if !r.Unlabelled {
				// A label value names one context exactly, or none:
				// it is never read as a list.
				r.Context = k.Cluster
				if m, ok := o.ContextFor[k.Cluster]; ok {
					r.Context = m
				}
			}
			rows[k] = r
			agents[k] = &agentState{}
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
		if c == "" {
			continue
		}
		row(&pmodel.Sample{Metric: pmodel.Metric{pmodel.LabelName(o.ClusterLabel): pmodel.LabelValue(c)}})
	}
	var kuredRR = map[Key]*int{}
	for _, s := range append(append(pmodel.Vector(nil), a.Vectors[QScalars]...), a.Vectors[QFallback]...) {
		if math.IsNaN(float64(s.Value)) {
			continue
		}
		r := row(s)
		st := agents[r.Key()]
		switch string(s.Metric[tag]) {
		case partKuredRR:
			kuredRR[r.Key()] = intp(s.Value)
		case partLast:
			t := unixTime(s.Value)
			age := now.Sub(t).Seconds()
			r.LastJudgement, r.DataAgeSeconds = &t, &age
		case partLive:
			st.live = true
		case partLeaderLast:
			t := unixTime(s.Value)
			st.leaderLast = &t
		case partNodes:
			st.nodes = intp(s.Value)
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
	for k, n := range kuredRR {
		if r := rows[k]; r.RebootRequired == nil {
			r.RebootRequired = n
		}
	}
	var verdicts, holders, blockers pmodel.Vector
	for _, s := range append(append(pmodel.Vector(nil), a.Vectors[QLocks]...), a.Vectors[QStopped]...) {
		switch string(s.Metric[tag]) {
		case partVerdict:
			verdicts = append(verdicts, s)
		case partHolder:
			holders = append(holders, s)
		case partBlocker:
			blockers = append(blockers, s)
		}
	}
	verdictOf := map[Key]map[string]string{} // row → kind/lock → worst verdict
	for _, s := range verdicts {
		r := row(s)
		k := string(s.Metric["kind"]) + "\x00" + string(s.Metric["lock"])
		v := string(s.Metric["verdict"])
		m := verdictOf[r.Key()]
		if m == nil {
			m = map[string]string{}
			verdictOf[r.Key()] = m
		}
		if old, ok := m[k]; !ok || rankOf(v) < rankOf(old) {
			m[k] = v
		}
	}
	for k, m := range verdictOf {
		r := rows[k]
		r.Verdicts = map[string]int{}
		for _, v := range m {
			r.Verdicts[v]++
		}
	}
	seenHolder := map[Key]map[string]bool{}
	for _, s := range holders {
		r := row(s)
		l := Lock{Kind: string(s.Metric["kind"]), Lock: string(s.Metric["lock"]), Holder: string(s.Metric["holder"]),
			HolderNode: string(s.Metric["holder_node"]), Verdict: "unknown"}
		id := l.Kind + "\x00" + l.Lock + "\x00" + l.Holder + "\x00" + l.HolderNode
		if seenHolder[r.Key()] == nil {
			seenHolder[r.Key()] = map[string]bool{}
		}
		if seenHolder[r.Key()][id] {
			continue
		}
		seenHolder[r.Key()][id] = true
		if v, ok := verdictOf[r.Key()][l.Kind+"\x00"+l.Lock]; ok {
			l.Verdict = v
		}
		if s.Value > 0 {
			t := unixTime(s.Value)
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
	_, stoppedFailed := a.Errors[QStopped]
	for k, r := range rows {
		var unread []string
		for _, id := range []string{QScalars, QPhases, QLocks, QFallback} {
			if err, ok := a.Errors[id]; ok {
				unread = append(unread, feeds[id]+": the query failed ("+err.Error()+")")
			}
		}
		judge(r, agents[k], unread, stoppedFailed, now, o.StaleAfter)
		f.Rows = append(f.Rows, *r)
	}
	Sort(f.Rows)
	return f
}

// judge sets a row's sources, status and what it cannot know. unread are
// the figures whose query failed; stoppedFailed says the stopped agents'
// last lock state could not be read.
func judge(r *Row, st *agentState, unread []string, stoppedFailed bool, now time.Time, staleAfter time.Duration) {
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
	if r.Unlabelled {
		r.Unknown = append(r.Unknown, fmt.Sprintf("the series carry no cluster label: this row is the agent scraped as job %q, instance %q, listed apart (another cluster without the label is another row; no context is known to open)",
			r.Job, r.Instance))
	}
	// A query that failed feeds no row: what it should have given is
	// unknown, never "none".
	r.Unread = append(r.Unread, unread...)
	r.Unknown = append(r.Unknown, unread...)
	agent := r.LastJudgement != nil
	if agent {
		r.Sources = append(r.Sources, SourceAgent)
	}
	if r.RebootRequired != nil {
		r.Sources = append(r.Sources, SourceKured)
	} else if !failed(unread, QScalars) && !failed(unread, QFallback) {
		r.Unknown = append(r.Unknown, "reboot-required: kured_reboot_required is not exported")
	}
	if r.Cordoned != nil {
		r.Sources = append(r.Sources, SourceKSM)
	}
	if !agent {
		if failed(unread, QScalars) {
			r.Status = StatusUnknown
			return
		}
		r.Status = StatusNoAgent
		r.Unknown = append(r.Unknown, "lock holder and verdict, node phases and blockers: no rebootwatch-agent reports in this cluster")
		return
	}
	last := *r.LastJudgement
	if st.leaderLast != nil {
		// The leader's judgement is the one the row shows: a replica
		// that does not lead says nothing of its age.
		last = *st.leaderLast
		r.LastJudgement = &last
	}
	age := now.Sub(last)
	ageS := age.Seconds()
	r.DataAgeSeconds = &ageS
	if -age > SkewTolerance {
		// A judgement in the future is a clock that is wrong (the
		// agent's or this one's): no age can be told from it.
		r.Status = StatusUnknown
		r.Unread = append(r.Unread, "data age: clock skew")
		r.Unknown = append(r.Unknown, fmt.Sprintf("clock skew: the agent's last judgement is %s in the future (its clock or this one is wrong): its data's age cannot be told",
			humanSeconds(-ageS)))
		return
	}
	if age < 0 {
		ageS = 0
	}
	switch {
	case !st.live:
		// Its series stopped (Prometheus's staleness markers end them
		// when the target goes): stale at once, whatever the age.
		r.Status = StatusStale
		r.Unknown = append(r.Unknown, fmt.Sprintf("the agent's series stopped (its last judgement %s ago): the lock state shown is the last it exported, not current",
			humanSeconds(ageS)))
		if stoppedFailed {
			r.Unread = append(r.Unread, feeds[QStopped]+": the query failed")
		}
		return
	case age > staleAfter:
		r.Status = StatusStale
		r.Unknown = append(r.Unknown, fmt.Sprintf("the agent's last judgement is %s old (stale after %s): its figures are not current",
			humanSeconds(ageS), humanSeconds(staleAfter.Seconds())))
		return
	case st.leaderLast == nil:
		r.Status = StatusUnknown
		r.Phases, r.Verdicts, r.Locks = nil, nil, nil
		r.Unknown = append(r.Unknown, "the agent reports, but no replica leads now (leader election under way?): only the leader's figures count")
		return
	}
	if failed(unread, QScalars) || failed(unread, QLocks) || failed(unread, QPhases) {
		r.Status = StatusUnknown
		return
	}
	// The phases and the verdicts come from the same scrape: with phases
	// and no verdict series, the agent judged no lock object.
	if r.Phases == nil {
		r.Status = StatusUnknown
		r.Unknown = append(r.Unknown, "the agent reports, but its node phases are not in Prometheus (yet)")
		return
	}
	if st.nodes != nil && *r.NodeCount() > *st.nodes {
		// Two replicas that both say they lead, a judgement apart: their
		// phases cannot be added up.
		r.Status = StatusUnknown
		r.Unread = append(r.Unread, "node phases: replicas disagree")
		r.Unknown = append(r.Unknown, fmt.Sprintf("node phases: more than one replica says it leads and they disagree (%d nodes by phase, %d by one replica)",
			*r.NodeCount(), *st.nodes))
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

// failed reports whether one of unread is the query id's.
func failed(unread []string, id string) bool {
	for _, u := range unread {
		if strings.HasPrefix(u, feeds[id]+":") {
			return true
		}
	}
	return false
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

// endpointError says why queries failed, each cause once: the queries that
// failed for one cause are named together. A request that never got an
// answer (*url.Error: refused, timed out, TLS) is told by its cause, not by
// the request's URL, whose query string (the PromQL, the time range) would
// push the cause out of a line; an answer the endpoint gave (an HTTP
// status, a PromQL error) is told as it is.
func endpointError(errs map[string]error) error {
	byCause := map[string][]string{}
	for id, err := range errs {
		c := err.Error()
		var ue *url.Error
		if errors.As(err, &ue) && ue.Err != nil {
			c = ue.Err.Error()
		}
		byCause[c] = append(byCause[c], id)
	}
	causes := make([]string, 0, len(byCause))
	for c, ids := range byCause {
		sort.Strings(ids)
		causes = append(causes, strings.Join(ids, ", ")+": "+c)
	}
	sort.Strings(causes)
	return errors.New("could not read the endpoint: " + strings.Join(causes, "; "))
}
