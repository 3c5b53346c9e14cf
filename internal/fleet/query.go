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

// The queries' ids: the keys of Answers.
const (
	QScalars  = "scalars"  // per-cluster figures, tagged with the rw label
	QPhases   = "phases"   // rebootwatch_fleet_nodes by cluster and phase
	QVerdicts = "verdicts" // each lock's current verdict
	QHolders  = "holders"  // each held entry
	QBlockers = "blockers" // the fleet blocker's kind
)

// tag is the label Queries adds to tell the scalars query's parts apart.
const tag = "rebootwatch_fleet"

// The parts of the scalars query (values of the tag label).
const (
	partLast       = "last"        // agent's last success
	partRR         = "rr"          // sum of kured_reboot_required
	partCordoned   = "cordoned"    // sum of kube_node_spec_unschedulable
	partKSMNodes   = "ksm-nodes"   // count of kube_node_spec_unschedulable
	partLeaseNodes = "lease-nodes" // count of Node-owned Leases
	partBlocked    = "blocked"     // rebootwatch_fleet_blocked_seconds
	partUpgraded   = "upgraded"    // rebootwatch_fleet_upgraded_nodes
)

// Queries are the PromQL queries of one refresh, by id: fewer than
// MaxQueries, each aggregated per cluster so its answer grows with the
// clusters, not their nodes. max, not sum, across an agent's replicas:
// every replica exports the same judgement.
func Queries(o Options) map[string]string {
	c := o.ClusterLabel
	part := func(name, expr string) string {
		return fmt.Sprintf(`label_replace(%s, %q, %q, "", "")`, expr, tag, name)
	}
	lb := pmodel.Duration(o.Lookback).String()
	scalars := strings.Join([]string{
		part(partLast, fmt.Sprintf("max by (%s) (last_over_time(rebootwatch_agent_last_success_timestamp_seconds[%s]))", c, lb)),
		part(partRR, fmt.Sprintf("sum by (%s) (max by (%s, node) (kured_reboot_required))", c, c)),
		part(partCordoned, fmt.Sprintf("sum by (%s) (max by (%s, node) (kube_node_spec_unschedulable))", c, c)),
		part(partKSMNodes, fmt.Sprintf("count by (%s) (max by (%s, node) (kube_node_spec_unschedulable))", c, c)),
		part(partLeaseNodes, fmt.Sprintf(`count by (%s) (max by (%s, lease) (kube_lease_owner{owner_kind="Node"}))`, c, c)),
		part(partBlocked, fmt.Sprintf("max by (%s) (rebootwatch_fleet_blocked_seconds)", c)),
		part(partUpgraded, fmt.Sprintf("max by (%s) (rebootwatch_fleet_upgraded_nodes)", c)),
	}, " or ")
	return map[string]string{
		QScalars:  scalars,
		QPhases:   fmt.Sprintf("max by (%s, phase) (rebootwatch_fleet_nodes)", c),
		QVerdicts: fmt.Sprintf("max by (%s, kind, lock, verdict) (rebootwatch_lock_verdict) == 1", c),
		QHolders:  fmt.Sprintf("max by (%s, kind, lock, holder, holder_node) (rebootwatch_lock_holder)", c),
		QBlockers: fmt.Sprintf("max by (%s, kind) (rebootwatch_fleet_blocked) == 1", c),
	}
}

// Answers are the queries' results by id; a missing id is a query that
// failed (Errors says why).
type Answers struct {
	Vectors map[string]pmodel.Vector
	Errors  map[string]error
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

// Read sends the refresh's queries at once, evaluated at now, and builds
// the fleet from their answers.
func (r *Reader) Read(ctx context.Context, now time.Time) Fleet {
	before := r.Queries()
	a := r.query(ctx, Queries(r.o), now)
	f := Build(now, a, r.o)
	f.Queries = r.Queries() - before
	return f
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
