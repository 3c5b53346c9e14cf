package prometheus

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	pmodel "github.com/prometheus/common/model"

	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
	"github.com/rebootwatch/rebootwatch/sources/sourcetest"
)

func health(c *model.Cluster) model.SourceHealth {
	h, _ := c.Source(model.SourcePrometheus)
	return h
}

func rr(c *model.Cluster, node string) string {
	v, known := c.RebootRequired(node)
	if !known {
		return "unknown"
	}
	return fmt.Sprint(v)
}

// fakeProm answers /api/v1/query and /api/v1/alerts like Prometheus.
type fakeProm struct {
	mode  atomic.Value // "ok", "error", "hang"
	auth  atomic.Value // last Authorization header
	block chan struct{}
}

func (f *fakeProm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.auth.Store(r.Header.Get("Authorization"))
	switch f.mode.Load() {
	case "error":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		fmt.Fprint(w, `{"status":"error","errorType":"execution","error":"query processing would load too many samples"}`)
		return
	case "hang":
		select {
		case <-f.block:
		case <-r.Context().Done():
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/api/v1/query":
		_ = r.ParseForm()
		if r.Form.Get("query") != "kured_reboot_required" {
			http.Error(w, "unexpected query "+r.Form.Get("query"), http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[
{"metric":{"__name__":"kured_reboot_required","node":"w-1","pod":"kured-a"},"value":[1700000000,"1"]},
{"metric":{"__name__":"kured_reboot_required","node":"w-2","pod":"kured-b"},"value":[1700000000,"0"]},
{"metric":{"__name__":"kured_reboot_required","node":"w-2","pod":"kured-old"},"value":[1700000000,"0"]},
{"metric":{"__name__":"kured_reboot_required","pod":"nolabel"},"value":[1700000000,"1"]}]}}`)
	case "/api/v1/alerts":
		fmt.Fprint(w, `{"status":"success","data":{"alerts":[
{"labels":{"alertname":"NodeDown","severity":"critical"},"annotations":{},"state":"firing","activeAt":"2026-11-29T10:00:00Z","value":"1"},
{"labels":{"alertname":"NodeDown","instance":"b"},"annotations":{},"state":"firing","activeAt":"2026-11-29T10:00:00Z","value":"1"},
{"labels":{"alertname":"DiskFull"},"annotations":{},"state":"pending","activeAt":"2026-11-29T10:00:00Z","value":"1"},
{"labels":{"alertname":"Watchdog"},"annotations":{},"state":"firing","activeAt":"2026-11-29T10:00:00Z","value":"1"}]}}`)
	default:
		http.NotFound(w, r)
	}
}

func newFake(t *testing.T) (*fakeProm, *httptest.Server) {
	f := &fakeProm{block: make(chan struct{})}
	f.mode.Store("ok")
	srv := httptest.NewServer(f)
	t.Cleanup(func() { close(f.block); srv.Close() })
	return f, srv
}

func start(t *testing.T, o Options) (*sourcetest.Recorder, *Source) {
	t.Helper()
	r := sourcetest.NewRecorder("t").WithTimeout(30 * time.Second)
	return r, sourcetest.Start(t, r, func(ctx context.Context, sink sources.Sink) (*Source, error) { return Start(ctx, o, sink) })
}

func TestDisabledWithoutURL(t *testing.T) {
	r, s := start(t, Options{})
	if h := s.Health(); h.Status != model.StatusDisabled {
		t.Fatalf("%+v", h)
	}
	if h := r.Source(model.SourcePrometheus); h.Status != model.StatusDisabled {
		t.Fatalf("model: %+v", h)
	}
}

func TestValuesTokenAlerts(t *testing.T) {
	f, srv := newFake(t)
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, _ := start(t, Options{URL: srv.URL, BearerTokenFile: tok, Interval: time.Hour, AlertFilter: "^Node"})
	var (
		h          model.SourceHealth
		w1, w2, w3 string
		alerts     []string
		known      bool
	)
	r.Read(func(c *model.Cluster) {
		h = health(c)
		w1, w2, w3 = rr(c, "w-1"), rr(c, "w-2"), rr(c, "w-3")
		alerts, known = c.FiringAlerts()
	})
	if h.Status != model.StatusOK || h.LastSync.IsZero() || h.Interval != time.Hour {
		t.Fatalf("health %+v", h)
	}
	if w1 != "true" || w2 != "false" || w3 != "unknown" {
		t.Errorf("reboot required: w-1 %s, w-2 %s, w-3 %s", w1, w2, w3)
	}
	if got := f.auth.Load(); got != "Bearer s3cret" {
		t.Errorf("Authorization %q", got)
	}
	if !known || strings.Join(alerts, ",") != "NodeDown" {
		t.Errorf("alerts %v known=%v", alerts, known)
	}
}

func TestErrorAndRecovery(t *testing.T) {
	f, srv := newFake(t)
	f.mode.Store("error")
	r, _ := start(t, Options{URL: srv.URL, Interval: 50 * time.Millisecond})
	h := r.Source(model.SourcePrometheus)
	if h.Status != model.StatusError || !strings.Contains(h.Message, "too many samples") || !strings.Contains(h.Message, "kured_reboot_required") {
		t.Fatalf("health %+v", h)
	}
	f.mode.Store("ok")
	r.Eventually(t, "recovered", func(c *model.Cluster) bool {
		return health(c).Status == model.StatusOK && rr(c, "w-1") == "true"
	})
}

func TestStaleWhileHung(t *testing.T) {
	f, srv := newFake(t)
	r, s := start(t, Options{URL: srv.URL, Interval: 50 * time.Millisecond, RequestTimeout: time.Minute})
	if h := s.Health(); h.Status != model.StatusOK {
		t.Fatalf("health %+v", h)
	}
	f.mode.Store("hang")
	r.Eventually(t, "stale", func(c *model.Cluster) bool {
		h := health(c)
		return h.Status == model.StatusStale && strings.HasPrefix(h.Message, "no successful query for")
	})
}

func TestBadOptions(t *testing.T) {
	sink := func(model.Event) {}
	for _, o := range []Options{
		{URL: "localhost:9090"},
		{URL: "ftp://x"},
		{URL: "http://127.0.0.1:1", AlertFilter: "("},
		{URL: "http://127.0.0.1:1", BearerTokenFile: "/nonexistent/token"},
	} {
		if _, err := Start(context.Background(), o, sink); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

func TestVectorAndFilter(t *testing.T) {
	vec := pmodel.Vector{
		{Metric: pmodel.Metric{"node": "a"}, Value: 0},
		{Metric: pmodel.Metric{"node": "a"}, Value: 1},
		{Metric: pmodel.Metric{"node": "b"}, Value: 0},
	}
	got := VectorToValues(vec)
	if len(got) != 2 || !got["a"] || got["b"] {
		t.Errorf("%v", got)
	}
	alerts := []v1.Alert{
		{Labels: pmodel.LabelSet{"alertname": "B"}, State: v1.AlertStateFiring},
		{Labels: pmodel.LabelSet{"alertname": "A"}, State: v1.AlertStateFiring},
		{Labels: pmodel.LabelSet{"alertname": "C"}, State: v1.AlertStateInactive},
	}
	if got := FilterFiring(alerts, nil); strings.Join(got, ",") != "A,B" {
		t.Errorf("%v", got)
	}
	if got := FilterFiring(alerts, regexp.MustCompile("^B$")); strings.Join(got, ",") != "B" {
		t.Errorf("%v", got)
	}
}

func TestTLSSkipVerify(t *testing.T) {
	f := &fakeProm{block: make(chan struct{})}
	f.mode.Store("ok")
	srv := httptest.NewUnstartedServer(f)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	srv.StartTLS()
	t.Cleanup(func() { close(f.block); srv.Close() })

	// A self-signed certificate is refused unless verification is skipped.
	_, s := start(t, Options{URL: srv.URL, Interval: time.Hour})
	if h := s.Health(); h.Status != model.StatusError || !strings.Contains(h.Message, "certificate") {
		t.Errorf("verifying: %+v", h)
	}
	_, s = start(t, Options{URL: srv.URL, Interval: time.Hour, InsecureSkipVerify: true})
	if h := s.Health(); h.Status != model.StatusOK {
		t.Errorf("skipping verification: %+v", h)
	}
}

// An empty token file is an error, not a silent request without auth.
func TestEmptyTokenFileIsAnError(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), Options{URL: "http://127.0.0.1:1", BearerTokenFile: tok}, func(model.Event) {})
	if err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Fatalf("err %v", err)
	}
}

// A secret in the URL's query never reaches an error message.
func TestQuerySecretsAreMasked(t *testing.T) {
	r, _ := start(t, Options{URL: "http://127.0.0.1:1/?token=s3cret&x=y", Interval: time.Hour})
	h := r.Source(model.SourcePrometheus)
	if h.Status != model.StatusError || strings.Contains(h.Message, "s3cret") || !strings.Contains(h.Message, "token=xxxxx") {
		t.Fatalf("health %+v", h)
	}
	if _, err := Start(context.Background(), Options{URL: "ftp://u:pw@h/?token=s3cret"}, func(model.Event) {}); err == nil || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "pw") {
		t.Fatalf("err %v", err)
	}
}

// kured's blocker (pkg/blockers/prometheus.go): every active alert blocks,
// pending too unless firing-only; the regexp names alerts to ignore, or with
// match-only the only ones that block.
func TestKuredBlocking(t *testing.T) {
	al := func(name string, st v1.AlertState) v1.Alert {
		return v1.Alert{Labels: pmodel.LabelSet{pmodel.AlertNameLabel: pmodel.LabelValue(name)}, State: st}
	}
	alerts := []v1.Alert{al("Watchdog", v1.AlertStateFiring), al("DiskFull", v1.AlertStateFiring), al("Slow", v1.AlertStatePending),
		al("Gone", v1.AlertStateInactive), al("DiskFull", v1.AlertStateFiring)}
	re := regexp.MustCompile("^Watchdog$")
	for _, tc := range []struct {
		re   *regexp.Regexp
		k    KuredAlerts
		want string
	}{
		{nil, KuredAlerts{}, "DiskFull,Slow,Watchdog"},
		{re, KuredAlerts{}, "DiskFull,Slow"},
		{re, KuredAlerts{FiringOnly: true}, "DiskFull"},
		{re, KuredAlerts{MatchOnly: true}, "Watchdog"},
	} {
		if got := strings.Join(KuredBlocking(alerts, tc.re, tc.k), ","); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.k, got, tc.want)
		}
	}
}
