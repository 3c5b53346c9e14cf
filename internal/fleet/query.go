package fleet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	pmodel "github.com/prometheus/common/model"

	"github.com/rebootwatch/rebootwatch/internal/sanitize"
)

// MaxQueries bounds the queries of one refresh (issue 25 §2).
const MaxQueries = 6

// Defaults.
const (
	DefaultClusterLabel = "cluster"
	// DefaultStaleAfter: an agent judges every 60s by default; five
	// missed judgements, plus scrape and remote-write delay, is stale.
	DefaultStaleAfter = 5 * time.Minute
	// DefaultLookback is how far back the agent's last judgement time is
	// looked for once its series stopped (an agent that stopped reporting
	// stays listed, stale, that long).
	DefaultLookback = 24 * time.Hour
	DefaultTimeout  = 20 * time.Second
)

// Options configure the read.
type Options struct {
	// URL is the query endpoint's base URL (…/api/v1/query is appended;
	// Mimir's /prometheus prefix belongs in it).
	URL string
	// BearerTokenFile, if set, is read on each read for an
	// Authorization: Bearer token.
	BearerTokenFile string
	// Username and PasswordFile, if set, are HTTP basic auth.
	Username     string
	PasswordFile string
	// OrgID, if set, is sent as X-Scope-OrgID (Mimir, Cortex, Loki-style
	// multi-tenancy).
	OrgID              string
	InsecureSkipVerify bool
	// ClusterLabel is the label that names the cluster (default "cluster").
	ClusterLabel string
	// ContextFor maps a cluster label value to a kubeconfig context; a
	// cluster not in it maps to the context of its own name.
	ContextFor map[string]string
	StaleAfter time.Duration
	Lookback   time.Duration
	// Timeout bounds each query.
	Timeout time.Duration
	// Transport replaces the HTTP transport (tests).
	Transport http.RoundTripper
}

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

func (o *Options) defaults() error {
	if o.ClusterLabel == "" {
		o.ClusterLabel = DefaultClusterLabel
	}
	if !labelName.MatchString(o.ClusterLabel) {
		return fmt.Errorf("--cluster-label %q is not a Prometheus label name", sanitize.Short(o.ClusterLabel, 80))
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = DefaultStaleAfter
	}
	if o.Lookback <= 0 {
		o.Lookback = DefaultLookback
	}
	if o.Lookback < o.StaleAfter {
		o.Lookback = o.StaleAfter
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	u, err := url.Parse(o.URL)
	if o.URL == "" {
		return errors.New("fleet needs --prometheus-url: the query endpoint where every cluster's metrics are (Prometheus, Thanos, Mimir, VictoriaMetrics)")
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("prometheus URL %q: want http(s)://host[:port][/path]", sanitize.MaskURL(o.URL))
	}
	if o.BearerTokenFile != "" && o.Username != "" {
		return errors.New("give a bearer token or basic auth, not both")
	}
	if (o.Username == "") != (o.PasswordFile == "") {
		return errors.New("basic auth needs both --prometheus-username and --prometheus-password-file")
	}
	return nil
}

// The queries' ids: the keys of Answers.Vectors.
const (
	QScalars  = "scalars"  // the agents' per-cluster figures, tagged with the tag label
	QPhases   = "phases"   // rebootwatch_fleet_nodes by cluster and phase
	QLocks    = "locks"    // each lock's verdict, each held entry, the fleet blocker's kind (tagged)
	QClusters = "clusters" // the cluster label's values on kured's and kube-state-metrics' series
	QFallback = "fallback" // kured's and kube-state-metrics' figures of the clusters the agents do not cover
	QStopped  = "stopped"  // the last lock state of the agents whose series stopped (tagged)
)

// tag is the label the queries add to tell their parts apart.
const tag = "rebootwatch_fleet"

// The parts of the queries (values of the tag label).
const (
	partLast       = "last"        // agent's last success, any replica, over the lookback
	partLive       = "live"        // agent's last success, any replica, now (absent: its series stopped)
	partLeaderLast = "leader-last" // the leading replica's last success, now
	partNodes      = "nodes"       // the most nodes one leading replica counts
	partRR         = "rr"          // agent's count of nodes needing a reboot
	partBlocked    = "blocked"     // rebootwatch_fleet_blocked_seconds
	partUpgraded   = "upgraded"    // rebootwatch_fleet_upgraded_nodes
	partVerdict    = "verdict"     // rebootwatch_lock_verdict == 1
	partHolder     = "holder"      // rebootwatch_lock_holder
	partBlocker    = "blocker"     // rebootwatch_fleet_blocked == 1
	partKuredRR    = "kured-rr"    // sum of kured_reboot_required
	partCordoned   = "cordoned"    // sum of kube_node_spec_unschedulable
	partKSMNodes   = "ksm-nodes"   // count of kube_node_spec_unschedulable
	partLeaseNodes = "lease-nodes" // count of Node-owned Leases
)

// SkewTolerance is how far in the future an agent's last judgement may be
// before the row says the clocks disagree: beyond it the agent's clock (or
// the reader's) is wrong, and no data age can be told.
const SkewTolerance = time.Minute

// The labels that tell apart the agents of series without the cluster
// label: each such scrape target is a row of its own, never merged.
const (
	jobLabel      = "job"
	instanceLabel = "instance"
)

// leaderSeries is the leader gauge every agent exports: 1 on the replica
// that leads (always, without leader election), 0 on the others.
const leaderSeries = "rebootwatch_agent_leader"

func part(name, expr string) string {
	return fmt.Sprintf(`label_replace(%s, %q, %q, "", "")`, expr, tag, name)
}

// grouping is one of the two ways series are aggregated: by the cluster
// label where they carry it, by scrape target (job, instance) where they
// do not.
type grouping struct {
	match string // the cluster label's matcher
	by    string // the aggregation labels
}

func groupings(c string) []grouping {
	return []grouping{
		{match: fmt.Sprintf(`%s!=""`, c), by: c},
		{match: fmt.Sprintf(`%s=""`, c), by: strings.Join([]string{c, jobLabel, instanceLabel}, ", ")},
	}
}

// with returns the aggregation labels with extra ones appended.
func (g grouping) with(extra string) string {
	if extra == "" {
		return g.by
	}
	return g.by + ", " + extra
}

// leaderOnly keeps the series of metric (with the grouping's matcher) that
// come from the leading replica: the same scrape target's
// rebootwatch_agent_leader is 1. own are the metric's own labels.
func (g grouping) leaderOnly(metric, own string) string {
	on := ""
	if own != "" {
		on = " ignoring(" + own + ")"
	}
	return fmt.Sprintf("(%s{%s} and%s (%s{%s} == 1))", metric, g.match, on, leaderSeries, g.match)
}

// Queries are the PromQL queries of a refresh's first step, by id, each
// aggregated per cluster over series the agents export once per cluster
// or per lock, so their cost grows with the clusters, not their nodes
// (the per-node series are read only for one cluster's detail). Only the
// leading replica's series count (rebootwatch_agent_leader == 1 on the
// same scrape target): two replicas one iteration apart disagree, and a
// max across them would count a node moving between phases twice. The
// last-success times are read from every replica, to tell an agent that
// reports but has no leader from one whose series stopped. Series without
// the cluster label are grouped by scrape target (job, instance), never
// merged into one row.
func Queries(o Options) map[string]string {
	c := o.ClusterLabel
	lb := pmodel.Duration(o.Lookback).String()
	const last = "rebootwatch_agent_last_success_timestamp_seconds"
	var scalars, phases, locks []string
	for _, g := range groupings(c) {
		lastAny := fmt.Sprintf("last_over_time(%s{%s}[%s])", last, g.match, lb)
		if g.by != c {
			// A target without the cluster label is listed only if it
			// led within the lookback: a replica that never led is not
			// a cluster of its own.
			lastAny = fmt.Sprintf("(%s and (last_over_time(%s{%s}[%s]) == 1))", lastAny, leaderSeries, g.match, lb)
		}
		scalars = append(scalars,
			part(partLast, fmt.Sprintf("max by (%s) (%s)", g.by, lastAny)),
			part(partLive, fmt.Sprintf("max by (%s) (%s{%s})", g.by, last, g.match)),
			part(partLeaderLast, fmt.Sprintf("max by (%s) %s", g.by, g.leaderOnly(last, ""))),
			part(partNodes, fmt.Sprintf("max by (%s) (sum without (phase) %s)", g.by, g.leaderOnly("rebootwatch_fleet_nodes", "phase"))),
			part(partRR, fmt.Sprintf("max by (%s) %s", g.by, g.leaderOnly("rebootwatch_fleet_reboot_required_nodes", ""))),
			part(partBlocked, fmt.Sprintf("max by (%s) %s", g.by, g.leaderOnly("rebootwatch_fleet_blocked_seconds", ""))),
			part(partUpgraded, fmt.Sprintf("max by (%s) %s", g.by, g.leaderOnly("rebootwatch_fleet_upgraded_nodes", ""))),
		)
		phases = append(phases, fmt.Sprintf("max by (%s) %s", g.with("phase"), g.leaderOnly("rebootwatch_fleet_nodes", "phase")))
		locks = append(locks,
			part(partVerdict, fmt.Sprintf("max by (%s) %s == 1", g.with("kind, lock, verdict"), g.leaderOnly("rebootwatch_lock_verdict", "kind, lock, verdict"))),
			part(partHolder, fmt.Sprintf("max by (%s) %s", g.with("kind, lock, holder, holder_node"),
				g.leaderOnly("rebootwatch_lock_holder", "kind, lock, holder, holder_node"))),
			part(partBlocker, fmt.Sprintf("max by (%s) %s == 1", g.with("kind"), g.leaderOnly("rebootwatch_fleet_blocked", "kind"))),
		)
	}
	return map[string]string{
		QScalars: strings.Join(scalars, " or "),
		QPhases:  strings.Join(phases, " or "),
		QLocks:   strings.Join(locks, " or "),
	}
}

// Stopped is an agent whose series stopped (its last success is in the
// lookback, not now): the lock state it last exported is read as of its
// last judgement (QStopped).
type Stopped struct {
	Key  Key
	Last time.Time
}

// StoppedQuery is the second step's query of the agents whose series
// stopped: the lock verdicts and holders their leader exported in the
// --stale-after after its last judgement (a range ending then, with @), so
// a killed agent's row keeps the last lock state it knew, marked stale,
// and a lock it had stopped exporting before is not brought back.
func StoppedQuery(o Options, stopped []Stopped, now time.Time) string {
	c := o.ClusterLabel
	w := pmodel.Duration(o.StaleAfter).String()
	var parts []string
	for _, s := range stopped {
		g := groupings(c)[0]
		if s.Key.Cluster == "" {
			g = groupings(c)[1]
		}
		sel := s.Key.selector(c)
		end := s.Last.Add(o.StaleAfter)
		if end.After(now) {
			end = now
		}
		at := float64(end.UnixMilli()) / 1e3
		over := func(metric string) string {
			return fmt.Sprintf("last_over_time(%s{%s}[%s] @ %.3f)", metric, sel, w, at)
		}
		leader := fmt.Sprintf("(%s == 1)", over(leaderSeries))
		parts = append(parts,
			part(partVerdict, fmt.Sprintf("max by (%s) ((%s and ignoring(kind, lock, verdict) %s) == 1)",
				g.with("kind, lock, verdict"), over("rebootwatch_lock_verdict"), leader)),
			part(partHolder, fmt.Sprintf("max by (%s) (%s and ignoring(kind, lock, holder, holder_node) %s)",
				g.with("kind, lock, holder, holder_node"), over("rebootwatch_lock_holder"), leader)),
		)
	}
	return strings.Join(parts, " or ")
}

// Key names a row: the cluster label's value, or, for series without it,
// the scrape target (job, instance) they come from.
type Key struct {
	Cluster  string
	Job      string
	Instance string
}

// keyOf is the row a series belongs to.
func keyOf(m pmodel.Metric, clusterLabel string) Key {
	k := Key{Cluster: string(m[pmodel.LabelName(clusterLabel)])}
	if k.Cluster == "" {
		k.Job, k.Instance = string(m[jobLabel]), string(m[instanceLabel])
	}
	return k
}

// selector is the PromQL matchers of the key's series.
func (k Key) selector(clusterLabel string) string {
	if k.Cluster != "" {
		return fmt.Sprintf("%s=%s", clusterLabel, promString(k.Cluster))
	}
	return fmt.Sprintf(`%s="",%s=%s,%s=%s`, clusterLabel, jobLabel, promString(k.Job), instanceLabel, promString(k.Instance))
}

// fallbackMatches are the series whose cluster label values say which
// clusters kured or kube-state-metrics report from (QClusters).
var fallbackMatches = []string{"kured_reboot_required", "kube_node_spec_unschedulable", `kube_lease_owner{owner_kind="Node"}`}

// FallbackQuery is the second step's query: kured's and
// kube-state-metrics' figures of the given clusters only (those without an
// agent's reboot-required count), so kured_reboot_required and the nodes
// of kube-state-metrics are read per node only where the agents do not
// already count them.
func FallbackQuery(o Options, clusters []string) string {
	c := o.ClusterLabel
	alts := make([]string, len(clusters))
	for i, x := range clusters {
		alts[i] = regexp.QuoteMeta(x)
	}
	sel := fmt.Sprintf("%s=~%s", c, promString(strings.Join(alts, "|")))
	return strings.Join([]string{
		// kured runs one pod per node, each exporting its own node's
		// series: no replicas to take the max over.
		part(partKuredRR, fmt.Sprintf("sum by (%s) (kured_reboot_required{%s})", c, sel)),
		part(partCordoned, fmt.Sprintf("sum by (%s) (max by (%s, node) (kube_node_spec_unschedulable{%s}))", c, c, sel)),
		part(partKSMNodes, fmt.Sprintf("count by (%s) (max by (%s, node) (kube_node_spec_unschedulable{%s}))", c, c, sel)),
		part(partLeaseNodes, fmt.Sprintf(`count by (%s) (max by (%s, lease) (kube_lease_owner{owner_kind="Node",%s}))`, c, c, sel)),
	}, " or ")
}

// Answers are the queries' results by id; a missing id is a query that
// failed (Errors says why).
type Answers struct {
	Vectors map[string]pmodel.Vector
	// Clusters are the cluster label's values on kured's and
	// kube-state-metrics' series (QClusters).
	Clusters []string
	Errors   map[string]error
	// Warnings are what the endpoint said about answers it gave (a
	// Thanos or Mimir partial response: a store or querier did not
	// answer), by query id.
	Warnings map[string][]string
}

// NeedFallback are the clusters the second step reads kured and
// kube-state-metrics for: every cluster seen, by the agents or on those
// series, without an agent's reboot-required count.
func NeedFallback(a Answers, o Options) []string {
	c := pmodel.LabelName(o.ClusterLabel)
	seen := map[string]bool{}
	covered := map[string]bool{}
	for _, s := range a.Vectors[QScalars] {
		name := string(s.Metric[c])
		seen[name] = true
		if string(s.Metric[tag]) == partRR {
			covered[name] = true
		}
	}
	for _, x := range a.Clusters {
		seen[x] = true
	}
	var out []string
	for x := range seen {
		if !covered[x] && x != "" {
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

// NeedStopped are the agents whose series stopped: a last success in the
// lookback, none now, and not in the future (a skewed clock's time says
// nothing about when the agent stopped).
func NeedStopped(a Answers, o Options, now time.Time) []Stopped {
	if _, failed := a.Errors[QScalars]; failed {
		return nil
	}
	last := map[Key]time.Time{}
	live := map[Key]bool{}
	for _, s := range a.Vectors[QScalars] {
		k := keyOf(s.Metric, o.ClusterLabel)
		switch string(s.Metric[tag]) {
		case partLast:
			last[k] = unixTime(s.Value)
		case partLive:
			live[k] = true
		}
	}
	var out []Stopped
	for k, t := range last {
		if !live[k] && !t.After(now.Add(SkewTolerance)) {
			out = append(out, Stopped{Key: k, Last: t})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Key, out[j].Key
		if a.Cluster != b.Cluster {
			return a.Cluster < b.Cluster
		}
		if a.Job != b.Job {
			return a.Job < b.Job
		}
		return a.Instance < b.Instance
	})
	return out
}

func unixTime(v pmodel.SampleValue) time.Time {
	return time.Unix(0, int64(float64(v)*1e9))
}

// Reader reads the endpoint; it counts the queries it sent.
type Reader struct {
	o       Options
	api     v1.API
	queries atomic.Int64
}

// NewReader checks o and makes the endpoint's client.
func NewReader(o Options) (*Reader, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	rt := o.Transport
	if rt == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if o.InsecureSkipVerify {
			tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // asked for, lab endpoints
		}
		rt = tr
	}
	rt = &authHeaders{o: o, next: rt}
	c, err := api.NewClient(api.Config{Address: o.URL, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("prometheus client: %w", err)
	}
	return &Reader{o: o, api: v1.NewAPI(c)}, nil
}

// Options are the reader's options with their defaults.
func (r *Reader) Options() Options { return r.o }

// Queries is how many queries the reader has sent.
func (r *Reader) Queries() int { return int(r.queries.Load()) }

// Read reads the fleet at now in two steps: the first's queries at once
// (Queries, and the clusters kured and kube-state-metrics report from),
// then, at once, for the clusters the agents do not count reboot-required
// in, the fallback query, and for the agents whose series stopped, their
// last lock state. At most MaxQueries (6) queries.
func (r *Reader) Read(ctx context.Context, now time.Time) Fleet {
	before := r.Queries()
	a := Answers{Vectors: map[string]pmodel.Vector{}, Errors: map[string]error{}, Warnings: map[string][]string{}}
	var wg sync.WaitGroup
	wg.Add(1)
	var clusterWarns []string
	go func() {
		defer wg.Done()
		vals, warns, err := r.labelValues(ctx, now)
		clusterWarns = warns // only this goroutine writes it before Wait
		if err != nil {
			a.Errors[QClusters] = err // only this goroutine writes this key before Wait
			return
		}
		a.Clusters = vals
	}()
	first := r.query(ctx, Queries(r.o), now)
	wg.Wait()
	if len(clusterWarns) > 0 {
		a.Warnings[QClusters] = clusterWarns
	}
	a.merge(first)
	second := map[string]string{}
	if need := NeedFallback(a, r.o); len(need) > 0 {
		second[QFallback] = FallbackQuery(r.o, need)
	}
	if stopped := NeedStopped(a, r.o, now); len(stopped) > 0 {
		second[QStopped] = StoppedQuery(r.o, stopped, now)
	}
	if len(second) > 0 {
		a.merge(r.query(ctx, second, now))
	}
	f := Build(now, a, r.o)
	f.Queries = r.Queries() - before
	return f
}

func (a *Answers) merge(b Answers) {
	for id, v := range b.Vectors {
		a.Vectors[id] = v
	}
	for id, err := range b.Errors {
		a.Errors[id] = err
	}
	for id, w := range b.Warnings {
		a.Warnings[id] = w
	}
}

// labelValues asks which clusters kured's and kube-state-metrics' series
// carry over the last five minutes (an index read: no samples).
func (r *Reader) labelValues(ctx context.Context, now time.Time) ([]string, []string, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	r.queries.Add(1)
	vals, warns, _, err := r.api.LabelValues(ctx, r.o.ClusterLabel, fallbackMatches, now.Add(-5*time.Minute), now)
	if err != nil {
		return nil, warns, err
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = string(v)
	}
	return out, warns, nil
}

func (r *Reader) query(ctx context.Context, qs map[string]string, now time.Time) Answers {
	a := Answers{Vectors: map[string]pmodel.Vector{}, Errors: map[string]error{}, Warnings: map[string][]string{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for id, q := range qs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, warns, err := r.instant(ctx, q, now)
			mu.Lock()
			defer mu.Unlock()
			if len(warns) > 0 {
				a.Warnings[id] = warns
			}
			if err != nil {
				a.Errors[id] = err
				return
			}
			a.Vectors[id] = v
		}()
	}
	wg.Wait()
	return a
}

func (r *Reader) instant(ctx context.Context, q string, now time.Time) (pmodel.Vector, []string, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	r.queries.Add(1)
	val, warns, _, err := r.api.Query(ctx, q, now)
	if err != nil {
		return nil, warns, err
	}
	v, ok := val.(pmodel.Vector)
	if !ok {
		return nil, warns, fmt.Errorf("query answered %s, want a vector", val.Type())
	}
	return v, warns, nil
}

// authHeaders adds the bearer token (read on each request, so a rotated
// token is picked up), basic auth and X-Scope-OrgID.
type authHeaders struct {
	o    Options
	next http.RoundTripper
}

func (h *authHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if h.o.BearerTokenFile != "" {
		tok, err := readSecret(h.o.BearerTokenFile, "token")
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if h.o.Username != "" {
		pw, err := readSecret(h.o.PasswordFile, "password")
		if err != nil {
			return nil, err
		}
		req.SetBasicAuth(h.o.Username, pw)
	}
	if h.o.OrgID != "" {
		req.Header.Set("X-Scope-OrgID", h.o.OrgID)
	}
	return h.next.RoundTrip(req)
}

func readSecret(path, what string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s file: %w", what, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		// Sending nothing would look like an endpoint that needs no auth.
		return "", fmt.Errorf("%s file %s is empty", what, path)
	}
	return s, nil
}

// ErrorText is a query error for a terminal: one line, long enough for a
// cause in full (the cause is said once per query group, see
// endpointError), cut only past 1,000 characters.
func ErrorText(err error) string {
	return sanitize.Short(err.Error(), 1000)
}

// DetailNode is one node of a cluster's detail, from its agent's series.
type DetailNode struct {
	Node    string `json:"node"`
	Phase   string `json:"phase"`
	Blocker string `json:"blocker,omitempty"`
}

// DetailQuery is the one query of a row's detail: each node's phase and
// its first blocker's kind, from the leading replica only.
func DetailQuery(o Options, k Key) string {
	g := grouping{match: k.selector(o.ClusterLabel)}
	return fmt.Sprintf("max by (node, phase) %s or max by (node, kind) %s",
		g.leaderOnly("rebootwatch_node_phase", "node, phase"), g.leaderOnly("rebootwatch_node_blocked", "node, kind"))
}

// promString quotes s as a PromQL string literal.
func promString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\x%02x`, r)
				continue
			}
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Detail reads one row's nodes (one query): blocked nodes first, then
// those in a cycle, pending, and the rest, by name. A partial answer (the
// endpoint's warnings) is an error: the list may miss nodes.
func (r *Reader) Detail(ctx context.Context, k Key, now time.Time) ([]DetailNode, error) {
	v, warns, err := r.instant(ctx, DetailQuery(r.o, k), now)
	if err != nil {
		return nil, err
	}
	if len(warns) > 0 {
		return BuildDetail(v), fmt.Errorf("partial answer: %s", sanitize.Short(strings.Join(warns, "; "), 300))
	}
	return BuildDetail(v), nil
}

// BuildDetail turns the detail query's answer into nodes.
func BuildDetail(v pmodel.Vector) []DetailNode {
	by := map[string]*DetailNode{}
	for _, s := range v {
		name := string(s.Metric["node"])
		n := by[name]
		if n == nil {
			n = &DetailNode{Node: name, Phase: "unknown"}
			by[name] = n
		}
		if p, ok := s.Metric["phase"]; ok {
			n.Phase = string(p)
		}
		if k, ok := s.Metric["kind"]; ok {
			n.Blocker = string(k)
		}
	}
	out := make([]DetailNode, 0, len(by))
	for _, n := range by {
		out = append(out, *n)
	}
	order := func(n DetailNode) int {
		switch {
		case n.Blocker != "":
			return 0
		case n.Phase == "down":
			return 1
		case n.Phase == "draining" || n.Phase == "rebooting" || n.Phase == "recovering":
			return 2
		case n.Phase == "pending":
			return 3
		}
		return 4
	}
	sort.Slice(out, func(i, j int) bool {
		if oi, oj := order(out[i]), order(out[j]); oi != oj {
			return oi < oj
		}
		return out[i].Node < out[j].Node
	})
	return out
}
