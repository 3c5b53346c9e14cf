// Package prometheus is the Prometheus source: it polls
// `kured_reboot_required` (per node) through the client_golang api/v1
// client on an interval and reports model.RebootRequiredSet, optionally the
// firing alerts whose names match kured's blocking-alert regexp
// (model.AlertsFiring, the alert gate), and the "prometheus" source health:
// disabled (no URL), ok, stale (no successful poll within 2× the interval),
// error (with the message).
//
// It must only read, and only the configured URL.
package prometheus

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	pmodel "github.com/prometheus/common/model"

	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
)

// DefaultInterval is how often Prometheus is polled by default.
const DefaultInterval = 30 * time.Second

// DefaultQuery is kured's metric.
const DefaultQuery = "kured_reboot_required"

// Options configure the Prometheus source.
type Options struct {
	// URL is the Prometheus base URL; empty disables the source.
	URL string
	// BearerTokenFile, if set, is read on every request for an
	// Authorization: Bearer token (so a rotated token is picked up).
	BearerTokenFile string
	// InsecureSkipVerify skips TLS verification (lab clusters).
	InsecureSkipVerify bool
	// Interval is the poll interval (default 30s).
	Interval time.Duration
	// RequestTimeout bounds each query (default 20s, at most Interval*2).
	RequestTimeout time.Duration
	// Query is the PromQL query (default kured_reboot_required); each
	// sample's "node" label names the node, a non-zero value means required.
	Query string
	// AlertFilter, if set, is a regexp of alert names that block reboots
	// (kured's --alert-filter-regexp); firing alerts matching it are
	// reported as model.AlertsFiring.
	AlertFilter string
	// KuredAlerts, when set (and AlertFilter is not), makes the alert gate
	// follow kured's own blocker (kubereboot/kured
	// pkg/blockers/prometheus.go ActiveAlerts/matchesRegex): every active
	// alert blocks — pending ones too unless FiringOnly — except those
	// matching kured's --alert-filter-regexp (or only those, MatchOnly).
	KuredAlerts *KuredAlerts
	// FilterFrom says whose filter decides, for the gate's reason.
	FilterFrom string
	// Clock stamps health reports (default time.Now).
	Clock func() time.Time
	// Logger receives debug lines (default: discard).
	Logger *slog.Logger
	// Transport overrides the HTTP transport (tests); the token and TLS
	// options wrap around it.
	Transport http.RoundTripper
}

// KuredAlerts is kured's alert blocker configuration.
type KuredAlerts struct {
	Filter     string // --alert-filter-regexp ("" blocks on every alert)
	MatchOnly  bool   // --alert-filter-match-only
	FiringOnly bool   // --alert-firing-only
}

// Source polls Prometheus. Stop it by cancelling Start's context.
type Source struct {
	opts   Options
	log    *slog.Logger
	rep    *sources.Reporter
	api    v1.API
	filter *regexp.Regexp
	// kured: the gate follows kured's blocker (filter may then be nil).
	kured *KuredAlerts
	gate  bool         // an alert gate is configured
	sink  sources.Sink // serialised (sources.Serial): the poll and the stale check both report

	wg sync.WaitGroup // the poll and the stale check
}

// Start validates the options and starts polling; it returns at once. With
// no URL it reports `disabled` and does nothing else.
func Start(ctx context.Context, o Options, sink sources.Sink) (*Source, error) {
	if sink == nil {
		return nil, errors.New("prometheus source: no sink")
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = sources.DefaultRequestTimeout
	}
	if o.Query == "" {
		o.Query = DefaultQuery
	}
	s := &Source{opts: o, log: o.Logger, sink: sources.Serial(sink)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if s.filter, s.kured, s.gate, err = alertGate(o); err != nil {
		return nil, err
	}
	if s.gate {
		// The gate must know a filter is set before the first answer, so
		// that "not asked yet" never reads as "nothing fires".
		s.sink(model.AlertsFiring{Unknown: true, From: o.FilterFrom})
	}
	s.rep = sources.NewReporter(model.SourcePrometheus, o.Interval, s.sink, o.Clock)
	if o.URL == "" {
		s.rep.Set(model.StatusDisabled, "no --prometheus-url given")
		return s, nil
	}
	if s.api, err = newAPI(o, false); err != nil {
		return nil, err
	}
	s.wg.Go(func() { s.run(ctx) })
	return s, nil
}

// alertGate reads the alert gate's options: the filter (nil: every alert),
// kured's blocker settings when the gate follows kured's, and whether an
// alert gate is configured at all.
func alertGate(o Options) (filter *regexp.Regexp, kured *KuredAlerts, gate bool, err error) {
	if o.AlertFilter != "" {
		re, err := regexp.Compile(o.AlertFilter)
		if err != nil {
			return nil, nil, false, fmt.Errorf("prometheus alert filter %q: %w", o.AlertFilter, err)
		}
		filter, gate = re, true
	} else if k := o.KuredAlerts; k != nil {
		if k.Filter != "" {
			re, err := regexp.Compile(k.Filter)
			if err != nil {
				return nil, nil, false, fmt.Errorf("kured's alert filter %q: %w", k.Filter, err)
			}
			filter = re
		}
		kured, gate = k, true
	}
	if gate && o.URL == "" {
		return nil, nil, false, errors.New("a blocking-alert filter needs a Prometheus URL")
	}
	return filter, kured, gate, nil
}

// newAPI is the client of o.URL, with o's token and TLS options. oneShot
// keeps no connection open after a request (one query, then nothing).
func newAPI(o Options, oneShot bool) (v1.API, error) {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("prometheus URL %q: want http(s)://host[:port][/path]", sanitize.MaskURL(o.URL))
	}
	if o.BearerTokenFile != "" {
		tok, err := os.ReadFile(o.BearerTokenFile)
		if err != nil {
			return nil, fmt.Errorf("prometheus token file: %w", err)
		}
		if strings.TrimSpace(string(tok)) == "" {
			// Sending no Authorization header would look like a
			// Prometheus that needs none: say so instead.
			return nil, fmt.Errorf("prometheus token file %s is empty: no token to send", o.BearerTokenFile)
		}
	}
	var rt http.RoundTripper
	if o.Transport != nil {
		rt = o.Transport
	} else {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DisableKeepAlives = oneShot
		if o.InsecureSkipVerify {
			tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // asked for, lab clusters
		}
		rt = tr
	}
	if o.BearerTokenFile != "" {
		rt = &bearerFile{path: o.BearerTokenFile, next: rt}
	}
	c, err := api.NewClient(api.Config{Address: o.URL, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("prometheus client: %w", err)
	}
	return v1.NewAPI(c), nil
}

// QueryAlerts asks Prometheus now, once, which blocking alerts fire, as the
// source's poll does with the same options (o.AlertFilter, else
// o.KuredAlerts), and returns their sorted names. filter is false when no
// alert gate is configured: nothing is asked then. It is the read the lock
// engine's actor makes before a write (the wiring injects it:
// sources/sourceset.FreshReaders); o.RequestTimeout bounds it (default 20s).
func QueryAlerts(ctx context.Context, o Options) (names []string, filter bool, err error) {
	re, kured, gate, err := alertGate(o)
	if err != nil || !gate {
		return nil, false, err
	}
	a, err := newAPI(o, true)
	if err != nil {
		return nil, true, err
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = sources.DefaultRequestTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, o.RequestTimeout)
	defer cancel()
	s := &Source{api: a, filter: re, kured: kured}
	names, err = s.firingAlerts(ctx)
	return names, true, err
}

// Wait returns once every goroutine of the source has ended: call it after
// cancelling Start's context, so nothing of the source outlives its owner.
func (s *Source) Wait() { s.wg.Wait() }

// Health returns the source's current health.
func (s *Source) Health() model.SourceHealth { return s.rep.Health() }

// WaitForSync waits until the first poll succeeded or failed (at once when
// disabled), or ctx ends.
func (s *Source) WaitForSync(ctx context.Context) error {
	return s.rep.Wait(ctx, "prometheus source")
}

func (s *Source) run(ctx context.Context) {
	// The poll runs in its own goroutine so a hung request shows as stale
	// before it times out.
	s.wg.Go(func() {
		t := time.NewTicker(s.opts.Interval)
		defer t.Stop()
		for {
			s.poll(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	t := time.NewTicker(s.opts.Interval / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.checkStale()
		}
	}
}

// checkStale marks the source stale when it had synced but no poll
// succeeded within 2× the interval.
func (s *Source) checkStale() {
	h := s.rep.Health()
	if h.Status != model.StatusOK || h.LastSync.IsZero() {
		return
	}
	now := time.Now
	if s.opts.Clock != nil {
		now = s.opts.Clock
	}
	if age := now().Sub(h.LastSync); age > 2*s.opts.Interval {
		s.rep.Set(model.StatusStale, fmt.Sprintf("no successful query for %s", age.Round(time.Second)))
	}
}

func (s *Source) poll(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	values, err := s.queryRebootRequired(qctx)
	if err == nil && s.gate {
		var firing []string
		firing, err = s.firingAlerts(qctx)
		if err == nil {
			s.sink(model.AlertsFiring{Names: firing, From: s.opts.FilterFrom})
		}
	}
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		s.log.Debug("prometheus poll failed", "err", err)
		s.rep.Set(model.StatusError, err.Error())
		return
	}
	s.sink(model.RebootRequiredSet{Values: values})
	msg := ""
	if len(values) == 0 {
		msg = fmt.Sprintf("no %s series", s.opts.Query)
	}
	s.rep.OK(msg)
}

// queryRebootRequired runs the query and maps node -> required.
func (s *Source) queryRebootRequired(ctx context.Context) (map[string]bool, error) {
	val, _, _, err := s.api.Query(ctx, s.opts.Query, time.Time{})
	if err != nil {
		return nil, fmt.Errorf("query %s: %s", s.opts.Query, errMessage(err))
	}
	vec, ok := val.(pmodel.Vector)
	if !ok {
		return nil, fmt.Errorf("query %s: got %s, want an instant vector", s.opts.Query, val.Type())
	}
	return VectorToValues(vec), nil
}

// VectorToValues maps each sample's node label to whether its value is
// non-zero; several series for one node (several kured pods, several
// scrapes) count as required if any says so. Samples without a node label
// are ignored.
func VectorToValues(vec pmodel.Vector) map[string]bool {
	out := make(map[string]bool, len(vec))
	for _, smp := range vec {
		node := string(smp.Metric["node"])
		if node == "" {
			continue
		}
		out[node] = out[node] || smp.Value != 0
	}
	return out
}

// firingAlerts returns the sorted names of firing alerts that match the filter.
func (s *Source) firingAlerts(ctx context.Context) ([]string, error) {
	res, err := s.api.Alerts(ctx)
	if err != nil {
		return nil, fmt.Errorf("alerts: %s", errMessage(err))
	}
	if s.kured != nil {
		return KuredBlocking(res.Alerts, s.filter, *s.kured), nil
	}
	return FilterFiring(res.Alerts, s.filter), nil
}

// KuredBlocking returns the distinct names of the alerts kured's blocker
// counts, sorted: active (firing, or pending too unless FiringOnly), and
// matching re exactly when MatchOnly (re nil: every alert).
func KuredBlocking(alerts []v1.Alert, re *regexp.Regexp, k KuredAlerts) []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range alerts {
		if a.State != v1.AlertStateFiring && (k.FiringOnly || a.State != v1.AlertStatePending) {
			continue
		}
		name := string(a.Labels[pmodel.AlertNameLabel])
		if name == "" || seen[name] || (re != nil && re.MatchString(name) != k.MatchOnly) {
			continue
		}
		seen[name] = true
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// FilterFiring returns the distinct names of firing alerts matching re, sorted.
func FilterFiring(alerts []v1.Alert, re *regexp.Regexp) []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range alerts {
		if a.State != v1.AlertStateFiring {
			continue
		}
		name := string(a.Labels[pmodel.AlertNameLabel])
		if name == "" || seen[name] || (re != nil && !re.MatchString(name)) {
			continue
		}
		seen[name] = true
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func errMessage(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "request timed out"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		// The URL may carry a secret in its query (?token=…): masked as
		// net/url already masks a password.
		masked := *ue
		masked.URL = sanitize.MaskURL(ue.URL)
		return strings.TrimSpace(masked.Error())
	}
	var pe *v1.Error
	if errors.As(err, &pe) && pe.Msg != "" {
		return pe.Msg
	}
	return strings.TrimSpace(err.Error())
}

// bearerFile adds the token read from a file to every request.
type bearerFile struct {
	path string
	next http.RoundTripper
}

func (b *bearerFile) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := os.ReadFile(b.path)
	if err != nil {
		return nil, fmt.Errorf("read token file: %w", err)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	return b.next.RoundTrip(r)
}
