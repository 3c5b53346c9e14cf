package agent

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	rwmodel "github.com/rebootwatch/rebootwatch/model"
)

// perNodeMetrics is a Metrics with n nodes (every third blocked), hostile
// node names (quotes, backslashes, a newline, bytes that are not UTF-8),
// held lock entries with and without a start time, and
// the reboot-required count set.
func perNodeMetrics(n int) *Metrics {
	m := NewMetrics()
	nodes := make([]NodeSeries, 0, n+2)
	for i := 0; i < n; i++ {
		ns := NodeSeries{Node: fmt.Sprintf("node-%05d", i), Phase: rwmodel.AllPhases[i%len(rwmodel.AllPhases)]}
		if i%3 == 0 {
			ns.Blocker = rwmodel.AllBlockerKinds[i%len(rwmodel.AllBlockerKinds)]
		}
		nodes = append(nodes, ns)
	}
	nodes = append(nodes,
		NodeSeries{Node: "quote\"back\\slash\nnewline", Phase: rwmodel.PhasePending, Blocker: rwmodel.BlockerDrain},
		NodeSeries{Node: "ünïcödé-節點", Phase: rwmodel.PhaseDone},
		NodeSeries{Node: "not-utf8-\xff\xfe", Phase: rwmodel.PhaseDown, Blocker: rwmodel.BlockerLonghorn})
	m.SetNodes(nodes)
	now := time.Unix(1764000000, 123456789)
	kured := rwmodel.LockRef{Kind: rwmodel.LockKured, Namespace: "kube-system", Name: "kured"}
	statuses := []rwmodel.LockStatus{
		{LockRef: kured, Holder: "node-00001", HolderNodes: []string{"node-00001"}, Verdict: rwmodel.VerdictHeld, Created: now},
		{LockRef: kured, Holder: `a "ghost" \ holder`, Verdict: rwmodel.VerdictGhost, Entry: 1},
	}
	m.SetHolders(statuses)
	m.SetRebootRequired(n / 2)
	return m
}

// familiesText is the text exposition of the named families, each
// family's series sorted, so that two sources of the same series compare
// equal whatever order they wrote them in.
func familiesText(t *testing.T, mfs []*dto.MetricFamily, keep func(string) bool) string {
	t.Helper()
	sort.Slice(mfs, func(i, j int) bool { return mfs[i].GetName() < mfs[j].GetName() })
	var b strings.Builder
	for _, mf := range mfs {
		if !keep(mf.GetName()) {
			continue
		}
		var lines []string
		for _, x := range mf.Metric {
			one := &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Metric: []*dto.Metric{x}}
			var s strings.Builder
			if _, err := expfmt.MetricFamilyToText(&s, one); err != nil {
				t.Fatal(err)
			}
			ls := strings.Split(strings.TrimSuffix(s.String(), "\n"), "\n")
			lines = append(lines, ls[len(ls)-1])
		}
		sort.Strings(lines)
		fmt.Fprintf(&b, "# %s %s %s\n%s\n", mf.GetName(), mf.GetType(), mf.GetHelp(), strings.Join(lines, "\n"))
	}
	return b.String()
}

func parseExposition(t *testing.T, body string) []*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	byName, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("the served answer is not valid text exposition: %v\n%.600s", err, body)
	}
	var out []*dto.MetricFamily
	for _, mf := range byName {
		out = append(out, mf)
	}
	return out
}

// stable keeps the families whose series do not change between two reads
// of an idle agent (not the Go and process collectors').
func stable(name string) bool {
	return strings.HasPrefix(name, "rebootwatch_") || strings.HasPrefix(name, "promhttp_")
}

// TestMetricsTextIsWhatTheRegistryWouldWrite holds the handler's own
// writing of the per-node series to client_golang's: the served answer,
// parsed back by expfmt, has every family Gather has, with the same series,
// values, help and type, hostile and non-ASCII label values included.
func TestMetricsTextIsWhatTheRegistryWouldWrite(t *testing.T) {
	m := perNodeMetrics(50)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != string(expfmt.NewFormat(expfmt.TypeTextPlain)) {
		t.Errorf("Content-Type %q", ct)
	}
	body := rec.Body.String()
	got := familiesText(t, parseExposition(t, body), stable)
	gathered, err := m.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := familiesText(t, gathered, stable)
	if got != want {
		t.Fatalf("served:\n%s\nwant (gathered):\n%s", got, want)
	}
	for _, s := range []string{
		`rebootwatch_node_phase{node="quote\"back\\slash\\nnewline",phase="pending"} 1`,
		`rebootwatch_node_blocked{kind="drain",node="quote\"back\\slash\\nnewline"} 1`,
		`rebootwatch_node_phase{node="ünïcödé-節點",phase="done"} 1`,
		`holder="a \"ghost\" \\ holder"`,
		`rebootwatch_fleet_reboot_required_nodes 25`,
		`holder="node-00001",holder_node="node-00001",kind="kured",lock="kube-system/kured"} 1.7640000001234567e+09`,
	} {
		if !strings.Contains(body, s) {
			t.Errorf("served answer lacks %s", s)
		}
	}
	for _, name := range []string{phaseName, blockedName, requiredName, holderName} {
		if n := strings.Count(body, "# TYPE "+name+" gauge\n"); n != 1 {
			t.Errorf("%s has %d TYPE lines, want 1", name, n)
		}
	}
}

// TestMetricsTextLeavesOutEmptyFamilies: with no nodes, holders or known
// reboot-required count, no per-node family appears, not even its HELP, as
// a gathered registry has none.
func TestMetricsTextLeavesOutEmptyFamilies(t *testing.T) {
	m := NewMetrics()
	m.SetNodes([]NodeSeries{{Node: "a", Phase: rwmodel.PhaseIdle}})
	_, body := serve(m.Handler())
	for _, name := range []string{blockedName, requiredName, holderName} {
		if strings.Contains(body, name) {
			t.Errorf("%s written with no series:\n%s", name, grepLines(body, "# HELP "+name, name))
		}
	}
	if !strings.Contains(body, `rebootwatch_node_phase{node="a",phase="idle"} 1`) {
		t.Errorf("node a's phase not served")
	}
}

// TestMetricsHandlerGzip: gzip when the scraper accepts it, not when it
// refuses it (q=0) or does not ask; the same series either way.
func TestMetricsHandlerGzip(t *testing.T) {
	m := perNodeMetrics(20)
	get := func(ae string) (string, string) {
		req := httptest.NewRequest("GET", "/metrics", nil)
		if ae != "" {
			req.Header.Set("Accept-Encoding", ae)
		}
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, req)
		body := rec.Body.Bytes()
		if rec.Header().Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("%q: %v", ae, err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				t.Fatalf("%q: %v", ae, err)
			}
		}
		return rec.Header().Get("Content-Encoding"), string(body)
	}
	_, plain := get("")
	want := familiesText(t, parseExposition(t, plain), stable)
	for ae, enc := range map[string]string{
		"":                        "",
		"gzip":                    "gzip",
		"deflate, gzip;q=0.5":     "gzip",
		"GZIP":                    "gzip",
		"gzip;q=0":                "",
		"identity":                "",
		"br, gzip ; q=1.0, *;q=0": "gzip",
	} {
		gotEnc, body := get(ae)
		if gotEnc != enc {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q, want %q", ae, gotEnc, enc)
		}
		if got := familiesText(t, parseExposition(t, body), stable); got != want {
			t.Errorf("Accept-Encoding %q: other series than uncompressed:\n%s", ae, got)
		}
	}
}

type failingCollector struct{ d *prometheus.Desc }

func (c failingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.d }
func (c failingCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(c.d, errors.New("cannot read"))
}

// TestMetricsHandlerGatherError: a registry that cannot be gathered answers
// 500 naming the error, writes no series, and counts it.
func TestMetricsHandlerGatherError(t *testing.T) {
	m := perNodeMetrics(3)
	m.Registry.MustRegister(failingCollector{prometheus.NewDesc("rebootwatch_test_broken", "broken", nil, nil)})
	code, body := serve(m.Handler())
	if code != 500 || !strings.Contains(body, "cannot read") || strings.Contains(body, phaseName) {
		t.Fatalf("status %d, body %q", code, body)
	}
	if v := counterValue(t, m.HandlerErrors.WithLabelValues("gathering")); v != 1 {
		t.Fatalf("gathering errors %v, want 1", v)
	}
}

// counterValue reads a counter's value.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var d dto.Metric
	if err := c.Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetCounter().GetValue()
}

// BenchmarkMetricsScrape is one scrape of /metrics, uncompressed and
// gzipped, at 5,000 nodes (every third blocked) and two held entries:
// what each scrape allocates.
func BenchmarkMetricsScrape(b *testing.B) {
	m := perNodeMetrics(5000)
	h := m.Handler()
	for _, ae := range []string{"identity", "gzip"} {
		b.Run(ae, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/metrics", nil)
			req.Header.Set("Accept-Encoding", ae)
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatal(rec.Code)
				}
			}
		})
	}
}

// brokenWriter is a ResponseWriter whose body cannot be written.
type brokenWriter struct{ h http.Header }

func (w *brokenWriter) Header() http.Header       { return w.h }
func (w *brokenWriter) Write([]byte) (int, error) { return 0, errors.New("connection reset") }
func (w *brokenWriter) WriteHeader(int)           {}

// TestMetricsHandlerWriteError: an answer that cannot be written whole is
// counted as an encoding error, plain and gzipped.
func TestMetricsHandlerWriteError(t *testing.T) {
	m := perNodeMetrics(3000)
	for i, ae := range []string{"", "gzip"} {
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Header.Set("Accept-Encoding", ae)
		m.Handler().ServeHTTP(&brokenWriter{h: http.Header{}}, req)
		if v := counterValue(t, m.HandlerErrors.WithLabelValues("encoding")); v != float64(i+1) {
			t.Fatalf("Accept-Encoding %q: encoding errors %v, want %d", ae, v, i+1)
		}
	}
}
