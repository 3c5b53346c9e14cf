package fleet

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	pmodel "github.com/prometheus/common/model"
)

// endpoint serves /api/v1/query from the fixture: each query's answer is
// the fixture's vector of the id whose query text it is.
func endpoint(t *testing.T, o Options, check func(*http.Request)) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	o.ClusterLabel = DefaultClusterLabel
	o.Lookback = DefaultLookback
	byText := map[string]pmodel.Vector{}
	a := fixture()
	for id, q := range Queries(o) {
		byText[q] = a.Vectors[id]
	}
	// The second step asks for the clusters without an agent's
	// reboot-required count: c (stale), d (no agent), f and the hostile
	// one (agents without it).
	byText[FallbackQuery(o, NeedFallback(a, o))] = a.Vectors[QFallback]
	// And the last lock state of c, whose agent stopped.
	o.StaleAfter = DefaultStaleAfter
	byText[StoppedQuery(o, NeedStopped(a, o, fixtureNow), fixtureNow)] = a.Vectors[QStopped]
	var n atomic.Int64
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		mu.Lock()
		check(r)
		mu.Unlock()
		if r.URL.Path == "/api/v1/label/cluster/values" {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": a.Clusters})
			return
		}
		if err := r.ParseForm(); err != nil || r.URL.Path != "/api/v1/query" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		vec, ok := byText[r.Form.Get("query")]
		if !ok {
			t.Errorf("unexpected query %s", r.Form.Get("query"))
			http.Error(w, `{"status":"error","errorType":"bad_data","error":"unexpected query"}`, http.StatusBadRequest)
			return
		}
		if vec == nil {
			vec = pmodel.Vector{}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "vector", "result": vec}})
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// One refresh sends at most MaxQueries queries, each with the tenant
// header and the credentials asked for, and builds the fixture's rows.
func TestReadSendsFewQueriesWithAuth(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var bad []string
	srv, n := endpoint(t, Options{}, func(r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != "ops" || p != "s3cret" || r.Header.Get("X-Scope-OrgID") != "tenant-1" {
			bad = append(bad, r.Header.Get("Authorization")+" / "+r.Header.Get("X-Scope-OrgID"))
		}
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			bad = append(bad, r.Method)
		}
	})
	rd, err := NewReader(Options{URL: srv.URL, Username: "ops", PasswordFile: pw, OrgID: "tenant-1"})
	if err != nil {
		t.Fatal(err)
	}
	f := rd.Read(context.Background(), fixtureNow)
	if f.Err != nil {
		t.Fatal(f.Err)
	}
	if f.Queries > MaxQueries || int(n.Load()) > MaxQueries {
		t.Errorf("%d queries (%d requests), want at most %d", f.Queries, n.Load(), MaxQueries)
	}
	if len(bad) > 0 {
		t.Errorf("requests without the credentials or tenant: %q", bad)
	}
	if len(f.Rows) != 7 || f.Rows[0].Cluster != "b" {
		t.Errorf("rows %+v", f.Rows)
	}
}

func TestReadBearerToken(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(tok, []byte("abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var got atomic.Value
	srv, _ := endpoint(t, Options{}, func(r *http.Request) { got.Store(r.Header.Get("Authorization")) })
	rd, err := NewReader(Options{URL: srv.URL, BearerTokenFile: tok})
	if err != nil {
		t.Fatal(err)
	}
	if f := rd.Read(context.Background(), fixtureNow); f.Err != nil {
		t.Fatal(f.Err)
	}
	if got.Load() != "Bearer abc" {
		t.Errorf("Authorization %q", got.Load())
	}
}

// An endpoint that fails is "could not read" (exit 1), with why; no row
// is invented.
func TestReadFailureIsUnread(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream down", http.StatusBadGateway)
	}))
	defer srv.Close()
	rd, err := NewReader(Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	f := rd.Read(context.Background(), fixtureNow)
	if f.Err == nil || ExitCode(f) != ExitError || len(f.Rows) != 0 {
		t.Fatalf("err %v, exit %d, rows %d", f.Err, ExitCode(f), len(f.Rows))
	}
}

func TestOptionsRejected(t *testing.T) {
	for _, o := range []Options{
		{},
		{URL: "prom:9090"},
		{URL: "http://p", ClusterLabel: "clu-ster"},
		{URL: "http://p", Username: "u"},
		{URL: "http://p", Username: "u", PasswordFile: "x", BearerTokenFile: "y"},
	} {
		if _, err := NewReader(o); err == nil {
			t.Errorf("%+v accepted", o)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("error is not one line: %q", err)
		}
	}
}
