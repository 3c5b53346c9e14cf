package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fleetEndpoint answers the fleet's queries with two clusters: "a" fine
// and "b" holding a ghost lock. Every request must be a read: an instant
// query or the cluster label's values.
func fleetEndpoint(t *testing.T, now time.Time, stale bool) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	last := float64(now.Add(-10 * time.Second).Unix())
	if stale {
		last = float64(now.Add(-time.Hour).Unix())
	}
	vec := func(samples ...string) string {
		return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(samples, ",") + `]}}`
	}
	s := func(v float64, labels string) string {
		return fmt.Sprintf(`{"metric":{%s},"value":[%d,"%g"]}`, labels, now.Unix(), v)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if (r.URL.Path != "/api/v1/query" && r.URL.Path != "/api/v1/label/cluster/values") || (r.Method != http.MethodGet && r.Method != http.MethodPost) {
			t.Errorf("not a query: %s %s", r.Method, r.URL.Path)
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v1/label/cluster/values" {
			_, _ = w.Write([]byte(`{"status":"success","data":[]}`))
			return
		}
		_ = r.ParseForm()
		q := r.Form.Get("query")
		var body string
		switch {
		case strings.Contains(q, "rebootwatch_agent_last_success") && stale:
			// The agents stopped an hour ago: only their last judgement
			// is left.
			body = vec(s(last, `"cluster":"a","rebootwatch_fleet":"last"`), s(last, `"cluster":"b","rebootwatch_fleet":"last"`))
		case strings.Contains(q, "rebootwatch_agent_last_success"):
			body = vec(s(last, `"cluster":"a","rebootwatch_fleet":"last"`), s(last, `"cluster":"b","rebootwatch_fleet":"last"`),
				s(last, `"cluster":"a","rebootwatch_fleet":"live"`), s(last, `"cluster":"b","rebootwatch_fleet":"live"`),
				s(last, `"cluster":"a","rebootwatch_fleet":"leader-last"`), s(last, `"cluster":"b","rebootwatch_fleet":"leader-last"`),
				s(0, `"cluster":"a","rebootwatch_fleet":"blocked"`), s(0, `"cluster":"b","rebootwatch_fleet":"blocked"`),
				s(0, `"cluster":"a","rebootwatch_fleet":"rr"`), s(1, `"cluster":"b","rebootwatch_fleet":"rr"`))
		case strings.Contains(q, "rebootwatch_node_phase") && !stale:
			body = vec(s(1, `"node":"n2","phase":"idle"`), s(1, `"node":"n2","kind":"lock-held"`), s(1, `"node":"n3","phase":"idle"`))
		case strings.Contains(q, "rebootwatch_lock_verdict") && !stale:
			body = vec(s(1, `"cluster":"a","kind":"kured","lock":"kube-system/kured","verdict":"free","rebootwatch_fleet":"verdict"`),
				s(1, `"cluster":"b","kind":"kured","lock":"kube-system/kured","verdict":"ghost","rebootwatch_fleet":"verdict"`),
				s(0, `"cluster":"b","kind":"kured","lock":"kube-system/kured","holder":"gone","holder_node":"","rebootwatch_fleet":"holder"`))
		case strings.Contains(q, "rebootwatch_fleet_nodes") && !stale:
			body = vec(s(3, `"cluster":"a","phase":"done"`), s(3, `"cluster":"b","phase":"idle"`))
		default:
			body = vec()
		}
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestFleetSnapshot(t *testing.T) {
	now := time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)
	srv, n := fleetEndpoint(t, now, false)
	env, out, errb := testEnv(now)
	code := run(context.Background(), []string{"fleet", "--snapshot", "--prometheus-url", srv.URL, "--context-for", "b=prod-b"}, env)
	if code != ExitAttention {
		t.Fatalf("exit %d, want %d (a ghost); stderr %s\n%s", code, ExitAttention, errb, out)
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[2], "b ") || !strings.Contains(lines[2], "ghost") || !strings.HasPrefix(lines[3], "a ") {
		t.Errorf("want b (ghost) first, then a:\n%s", out)
	}
	if n.Load() > 6 {
		t.Errorf("%d queries, want at most 6", n.Load())
	}

	env, out, _ = testEnv(now)
	code = run(context.Background(), []string{"fleet", "--snapshot", "-o", "json", "--prometheus-url", srv.URL, "--context-for", "b=prod-b"}, env)
	var d struct {
		Schema   string
		ExitCode int
		Clusters []struct{ Cluster, Context, Status string }
	}
	if err := json.Unmarshal(out.Bytes(), &d); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if code != ExitAttention || d.ExitCode != code || d.Schema != "rebootwatch.fleet/v1" || len(d.Clusters) != 2 ||
		d.Clusters[0].Cluster != "b" || d.Clusters[0].Context != "prod-b" || d.Clusters[0].Status != "ghost" {
		t.Errorf("exit %d, document %+v", code, d)
	}
}

// Every agent stale: exit 2, never 0 — the figures are old.
func TestFleetSnapshotStaleIsNotFine(t *testing.T) {
	now := time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)
	srv, _ := fleetEndpoint(t, now, true)
	env, out, _ := testEnv(now)
	if code := run(context.Background(), []string{"fleet", "--snapshot", "--prometheus-url", srv.URL}, env); code != ExitAttention {
		t.Fatalf("exit %d, want %d:\n%s", code, ExitAttention, out)
	}
	if !strings.Contains(out.String(), "stale") {
		t.Errorf("no stale row:\n%s", out)
	}
}

func TestFleetUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fleet", "--snapshot"}, "--prometheus-url"},
		{[]string{"fleet", "--prometheus-url", "http://p"}, "needs a terminal"},
		{[]string{"fleet", "--snapshot", "--prometheus-url", "http://p", "--context-for", "b"}, "LABEL=CONTEXT"},
		{[]string{"fleet", "--snapshot", "--prometheus-url", "http://p", "--cluster-label", "a-b"}, "label name"},
	} {
		env, _, errb := testEnv(time.Now())
		if code := run(context.Background(), tc.args, env); code != ExitError || !strings.Contains(errb.String(), tc.want) ||
			strings.Count(strings.TrimSpace(errb.String()), "\n") > 0 {
			t.Errorf("%q: exit %d, stderr %q; want 1 and one line naming %s", tc.args, code, errb, tc.want)
		}
	}
}

// fleet watch prints every cluster once, then only the changes; an
// endpoint that cannot be read at the first read exits 1.
func TestFleetWatchUnreadableEndpoint(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "nope", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	env, _, errb := testEnv(time.Now())
	if code := run(context.Background(), []string{"fleet", "watch", "--prometheus-url", srv.URL}, env); code != ExitError {
		t.Fatalf("exit %d, stderr %s", code, errb)
	}
}

func TestFleetWatchPrintsEachClusterOnce(t *testing.T) {
	now := time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)
	srv, _ := fleetEndpoint(t, now, false)
	env, _, errb := testEnv(now)
	out := &lockedBuffer{}
	env.Stdout = out
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// b keeps its ghost: the watch runs until interrupted.
	go func() {
		for !strings.Contains(out.String(), "a done") {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	code := run(ctx, []string{"fleet", "watch", "--until-done", "--interval", "1s", "--prometheus-url", srv.URL}, env)
	if code != ExitInterrupted {
		t.Fatalf("exit %d, stderr %s\n%s", code, errb, out)
	}
	if !strings.Contains(out.String(), " b ghost · lock gone ghost") {
		t.Errorf("watch output:\n%s", out)
	}
}
