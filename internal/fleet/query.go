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
)

// tag is the label the queries add to tell their parts apart.
const tag = "rebootwatch_fleet"

// The parts of the queries (values of the tag label).
const (
	partLast       = "last"        // agent's last success
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

func part(name, expr string) string {
	return fmt.Sprintf(`label_replace(%s, %q, %q, "", "")`, expr, tag, name)
}

// Queries are the PromQL queries of a refresh's first step, by id, each
// aggregated per cluster over series the agents export once per cluster
// or per lock, so their cost grows with the clusters, not their nodes
// (the per-node series are read only for one cluster's detail). max, not
// sum, across an agent's replicas: every replica exports the same
// judgement.
func Queries(o Options) map[string]string {
	c := o.ClusterLabel
	lb := pmodel.Duration(o.Lookback).String()
	return map[string]string{
		QScalars: strings.Join([]string{
			part(partLast, fmt.Sprintf("max by (%s) (last_over_time(rebootwatch_agent_last_success_timestamp_seconds[%s]))", c, lb)),
			part(partRR, fmt.Sprintf("max by (%s) (rebootwatch_fleet_reboot_required_nodes)", c)),
			part(partBlocked, fmt.Sprintf("max by (%s) (rebootwatch_fleet_blocked_seconds)", c)),
			part(partUpgraded, fmt.Sprintf("max by (%s) (rebootwatch_fleet_upgraded_nodes)", c)),
		}, " or "),
		QPhases: fmt.Sprintf("max by (%s, phase) (rebootwatch_fleet_nodes)", c),
		QLocks: strings.Join([]string{
			part(partVerdict, fmt.Sprintf("max by (%s, kind, lock, verdict) (rebootwatch_lock_verdict) == 1", c)),
			part(partHolder, fmt.Sprintf("max by (%s, kind, lock, holder, holder_node) (rebootwatch_lock_holder)", c)),
			part(partBlocker, fmt.Sprintf("max by (%s, kind) (rebootwatch_fleet_blocked) == 1", c)),
		}, " or "),
	}
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
// then, for the clusters the agents do not count reboot-required in, the
// fallback query. At most 5 queries (MaxQueries is 6).
func (r *Reader) Read(ctx context.Context, now time.Time) Fleet {
	before := r.Queries()
	a := Answers{Vectors: map[string]pmodel.Vector{}, Errors: map[string]error{}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		vals, err := r.labelValues(ctx, now)
		if err != nil {
			a.Errors[QClusters] = err // only this goroutine writes this key before Wait
			return
		}
		a.Clusters = vals
	}()
	first := r.query(ctx, Queries(r.o), now)
	wg.Wait()
	for id, v := range first.Vectors {
		a.Vectors[id] = v
	}
	for id, err := range first.Errors {
		a.Errors[id] = err
	}
	if need := NeedFallback(a, r.o); len(need) > 0 {
		second := r.query(ctx, map[string]string{QFallback: FallbackQuery(r.o, need)}, now)
		for id, v := range second.Vectors {
			a.Vectors[id] = v
		}
		for id, err := range second.Errors {
			a.Errors[id] = err
		}
	}
	f := Build(now, a, r.o)
	f.Queries = r.Queries() - before
	return f
}

// labelValues asks which clusters kured's and kube-state-metrics' series
// carry over the last five minutes (an index read: no samples).
func (r *Reader) labelValues(ctx context.Context, now time.Time) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	r.queries.Add(1)
	vals, _, _, err := r.api.LabelValues(ctx, r.o.ClusterLabel, fallbackMatches, now.Add(-5*time.Minute), now)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = string(v)
	}
	return out, nil
}

func (r *Reader) query(ctx context.Context, qs map[string]string, now time.Time) Answers {
	a := Answers{Vectors: map[string]pmodel.Vector{}, Errors: map[string]error{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for id, q := range qs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := r.instant(ctx, q, now)
			mu.Lock()
			defer mu.Unlock()
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

func (r *Reader) instant(ctx context.Context, q string, now time.Time) (pmodel.Vector, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	r.queries.Add(1)
	val, _, _, err := r.api.Query(ctx, q, now)
	if err != nil {
		return nil, err
	}
	v, ok := val.(pmodel.Vector)
	if !ok {
		return nil, fmt.Errorf("query answered %s, want a vector", val.Type())
	}
	return v, nil
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

// ErrorText is a query error for a terminal: one line, URL secrets masked.
func ErrorText(err error) string {
	return sanitize.Short(err.Error(), 300)
}

// DetailNode is one node of a cluster's detail, from its agent's series.
type DetailNode struct {
	Node    string `json:"node"`
	Phase   string `json:"phase"`
	Blocker string `json:"blocker,omitempty"`
}

// DetailQuery is the one query of a cluster's detail: each node's phase
// and its first blocker's kind.
func DetailQuery(o Options, cluster string) string {
	sel := fmt.Sprintf("{%s=%s}", o.ClusterLabel, promString(cluster))
	return fmt.Sprintf("max by (node, phase) (rebootwatch_node_phase%s) or max by (node, kind) (rebootwatch_node_blocked%s)", sel, sel)
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

// Detail reads one cluster's nodes (one query): blocked nodes first, then
// those in a cycle, pending, and the rest, by name.
func (r *Reader) Detail(ctx context.Context, cluster string, now time.Time) ([]DetailNode, error) {
	v, err := r.instant(ctx, DetailQuery(r.o, cluster), now)
	if err != nil {
		return nil, err
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
