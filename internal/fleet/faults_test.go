package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testprom"
)

// fakeAgent is a scrape target exporting the series rebootwatch-agent
// exports for the fleet view, with the cluster label already on them (as
// a federated or remote-written series has it; "" for none). Its last
// judgement is 1.5s before each scrape (plus skew), as an agent judging
// every second is.
type fakeAgent struct {
	mu       sync.Mutex
	cluster  string
	leader   int
	phases   map[string]int
	upgraded int
	// verdicts: lock → verdict; holders: lock → holder/node pairs.
	verdicts map[string]string
	holders  map[string][2]string
	// lastShift moves the last judgement (a stale replica, a skewed
	// clock).
	lastShift time.Duration
	srv       *httptest.Server
}

func (a *fakeAgent) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var b strings.Builder
	lbl := func(kv ...string) string {
		var parts []string
		if a.cluster != "" {
			parts = append(parts, fmt.Sprintf("cluster=%q", a.cluster))
		}
		for i := 0; i+1 < len(kv); i += 2 {
			parts = append(parts, fmt.Sprintf("%s=%q", kv[i], kv[i+1]))
		}
		if len(parts) == 0 {
			return ""
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	last := time.Now().Add(-1500 * time.Millisecond).Add(a.lastShift)
	fmt.Fprintf(&b, "rebootwatch_agent_last_success_timestamp_seconds%s %.3f\n", lbl(), float64(last.UnixMilli())/1e3)
	fmt.Fprintf(&b, "rebootwatch_agent_leader%s %d\n", lbl(), a.leader)
	for _, p := range []string{"idle", "pending", "draining", "rebooting", "recovering", "done", "down", "unknown"} {
		fmt.Fprintf(&b, "rebootwatch_fleet_nodes%s %d\n", lbl("phase", p), a.phases[p])
	}
	fmt.Fprintf(&b, "rebootwatch_fleet_upgraded_nodes%s %d\n", lbl(), a.upgraded)
	fmt.Fprintf(&b, "rebootwatch_fleet_blocked_seconds%s 0\n", lbl())
	locks := make([]string, 0, len(a.verdicts))
	for l := range a.verdicts {
		locks = append(locks, l)
	}
	sort.Strings(locks)
	for _, l := range locks {
		for _, v := range []string{"free", "held", "ghost", "orphaned", "expired", "ambiguous", "unknown"} {
			x := 0
			if v == a.verdicts[l] {
				x = 1
			}
			fmt.Fprintf(&b, "rebootwatch_lock_verdict%s %d\n", lbl("kind", "kured", "lock", l, "verdict", v), x)
		}
		if h, ok := a.holders[l]; ok {
			fmt.Fprintf(&b, "rebootwatch_lock_holder%s %d\n", lbl("kind", "kured", "lock", l, "holder", h[0], "holder_node", h[1]),
				time.Now().Add(-time.Hour).Unix())
		}
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = io.WriteString(w, b.String())
}

func startFake(t *testing.T, a *fakeAgent) *fakeAgent {
	t.Helper()
	a.srv = httptest.NewServer(a)
	t.Cleanup(a.srv.Close)
	return a
}

func (a *fakeAgent) target() string { return strings.TrimPrefix(a.srv.URL, "http://") }

// kill stops the target as a SIGKILL does: its scrapes fail from now on.
func (a *fakeAgent) kill() {
	a.srv.CloseClientConnections()
	a.srv.Close()
}

// faultProxy stands between the reader and the real Prometheus: it fails
// the queries fail matches and adds warnings to every answer while warn
// is set (a Thanos-style partial response).
type faultProxy struct {
	prom string
	mu   sync.Mutex
	fail func(q string) bool
	warn string
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	fail, warn := p.fail, p.warn
	p.mu.Unlock()
	if fail != nil && fail(r.Form.Get("query")) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"status":"error","errorType":"unavailable","error":"store gateway unavailable"}`)
		return
	}
	resp, err := http.Get(p.prom + r.URL.Path + "?" + r.Form.Encode())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if warn != "" && resp.StatusCode == http.StatusOK {
		var doc map[string]any
		if json.Unmarshal(body, &doc) == nil {
			doc["warnings"] = []string{warn}
			body, _ = json.Marshal(doc)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

func (p *faultProxy) set(fail func(string) bool, warn string) {
	p.mu.Lock()
	p.fail, p.warn = fail, warn
	p.mu.Unlock()
}

func rowNamed(f Fleet, cluster string) (Row, bool) {
	for _, r := range f.Rows {
		if r.Cluster == cluster {
			return r, true
		}
	}
	return Row{}, false
}

func unlabelledRows(f Fleet) []Row {
	var out []Row
	for _, r := range f.Rows {
		if r.Cluster == "" {
			out = append(out, r)
		}
	}
	return out
}

func describe(f Fleet) string {
	var b bytes.Buffer
	Render(&b, f, "prom")
	return b.String()
}

// TestIntegrationFleetUnderPrometheusFaults (issue 33 §1) runs the fleet
// view against Debian's real Prometheus scraping fake agents every second:
//   - ha: two replicas one iteration apart (the leader has the moving node
//     draining, the other still pending); only the leader's series count,
//     and the other, stale or killed, changes nothing;
//   - two clusters without the cluster label, one with a ghost, the other
//     with an orphan: two rows, by scrape target, never merged;
//   - killed: an agent with a ghost, SIGKILLed: its row is stale at once,
//     keeping the ghost marked stale, also past --stale-after;
//   - skew: an agent whose clock is an hour ahead: unknown, "clock skew";
//   - a failed locks query makes the rows' locks unknown (exit 1), and an
//     answer with warnings is partial (exit 1).
func TestIntegrationFleetUnderPrometheusFaults(t *testing.T) {
	testprom.Binary(t)
	three := map[string]int{"done": 2}
	leader := startFake(t, &fakeAgent{cluster: "ha", leader: 1, phases: map[string]int{"done": 2, "draining": 1}, upgraded: 2,
		verdicts: map[string]string{"kube-system/kured": "held"}, holders: map[string][2]string{"kube-system/kured": {"n3", "n3"}}})
	follower := startFake(t, &fakeAgent{cluster: "ha", leader: 0, phases: map[string]int{"done": 2, "pending": 1}, upgraded: 2,
		verdicts: map[string]string{"kube-system/kured": "free"}, lastShift: -time.Hour})
	ghostX := startFake(t, &fakeAgent{leader: 1, phases: three, upgraded: 2,
		verdicts: map[string]string{"kube-system/kured": "ghost"}, holders: map[string][2]string{"kube-system/kured": {"gone-x", ""}}})
	orphanY := startFake(t, &fakeAgent{leader: 1, phases: three, upgraded: 2,
		verdicts: map[string]string{"kube-system/kured": "orphaned"}, holders: map[string][2]string{"kube-system/kured": {"n2", "n2"}}})
	killed := startFake(t, &fakeAgent{cluster: "killed", leader: 1, phases: map[string]int{"done": 2, "idle": 1}, upgraded: 2,
		verdicts: map[string]string{"kube-system/kured": "ghost"}, holders: map[string][2]string{"kube-system/kured": {"gone-k", ""}}})
	skew := startFake(t, &fakeAgent{cluster: "skew", leader: 1, phases: three, upgraded: 2,
		verdicts: map[string]string{"kube-system/kured": "free"}, lastShift: time.Hour})
	fine := startFake(t, &fakeAgent{cluster: "fine", leader: 1, phases: three, upgraded: 2,
		verdicts: map[string]string{"kube-system/kured": "free"}})
	var targets []string
	for _, a := range []*fakeAgent{leader, follower, ghostX, orphanY, killed, skew, fine} {
		targets = append(targets, a.target())
	}
	prom := testprom.Start(t, testprom.Options{Targets: targets})
	proxy := &faultProxy{prom: prom.URL}
	psrv := httptest.NewServer(proxy)
	t.Cleanup(psrv.Close)
	const staleAfter = 30 * time.Second
	rd, err := NewReader(Options{URL: psrv.URL, StaleAfter: staleAfter})
	if err != nil {
		t.Fatal(err)
	}
	read := func(at time.Time) Fleet { return rd.Read(context.Background(), at) }
	// Every target scraped at least twice.
	deadline := time.Now().Add(60 * time.Second)
	var f Fleet
	for {
		f = read(time.Now())
		r, ok := rowNamed(f, "fine")
		if f.Err == nil && ok && r.Status == StatusDone && len(f.Rows) >= 5 {
			time.Sleep(2 * time.Second)
			f = read(time.Now())
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fake agents never showed up:\n%s", describe(f))
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("first read:\n%s", describe(f))

	t.Run("HA replicas: only the leader counts", func(t *testing.T) {
		r, _ := rowNamed(f, "ha")
		if got := NodesCell(r); got != "2/3 upgraded · 1 in cycle" || r.Status != StatusInProgress {
			t.Errorf("row ha %s %q, want in-progress 2/3 upgraded · 1 in cycle (the leader's picture)\n%s", r.Status, got, describe(f))
		}
		if r.DataAgeSeconds == nil || *r.DataAgeSeconds > 10 {
			t.Errorf("row ha data age %v, want the leader's (seconds)", r.DataAgeSeconds)
		}
		if got := LockCell(r, f.At); !strings.Contains(got, "n3 held") {
			t.Errorf("row ha lock %q, want the leader's n3 held", got)
		}
		// The non-leader stops: nothing changes.
		follower.kill()
		time.Sleep(3 * time.Second)
		g := read(time.Now())
		r, _ = rowNamed(g, "ha")
		if r.Status != StatusInProgress || NodesCell(r) != "2/3 upgraded · 1 in cycle" || r.DataAgeSeconds == nil || *r.DataAgeSeconds > 10 {
			t.Errorf("after the non-leader stopped, row ha %s %q age %v\n%s", r.Status, NodesCell(r), r.DataAgeSeconds, describe(g))
		}
	})

	t.Run("no cluster label: a row per target, never merged", func(t *testing.T) {
		rows := unlabelledRows(f)
		if len(rows) != 2 {
			t.Fatalf("%d rows without the cluster label, want 2 (one per scrape target)\n%s", len(rows), describe(f))
		}
		got := map[Status]string{}
		for _, r := range rows {
			got[r.Status] = ClusterCell(r)
			if r.Context != "" {
				t.Errorf("a row without the cluster label maps to context %q, want none", r.Context)
			}
		}
		if !strings.Contains(got[StatusGhost], ghostX.target()) || !strings.Contains(got[StatusOrphaned], orphanY.target()) {
			t.Errorf("rows %v, want the ghost from %s and the orphan from %s\n%s", got, ghostX.target(), orphanY.target(), describe(f))
		}
	})

	t.Run("clock skew: unknown, and said", func(t *testing.T) {
		r, _ := rowNamed(f, "skew")
		if r.Status != StatusUnknown || AgeCell(r) != "skew" || !strings.Contains(strings.Join(r.Unknown, " "), "clock skew") {
			t.Errorf("row skew %s age %q unknown %q\n%s", r.Status, AgeCell(r), r.Unknown, describe(f))
		}
		if c := ExitCode(f); c != ExitError {
			t.Errorf("exit %d with a skewed clock, want 1", c)
		}
	})

	t.Run("a failed locks query makes the locks unknown", func(t *testing.T) {
		proxy.set(func(q string) bool { return strings.Contains(q, "rebootwatch_lock_verdict") }, "")
		defer proxy.set(nil, "")
		g := read(time.Now())
		r, _ := rowNamed(g, "fine")
		if r.Status == StatusDone || !strings.HasPrefix(LockCell(r, g.At), "unknown") {
			t.Errorf("row fine with its locks unread: %s %q\n%s", r.Status, LockCell(r, g.At), describe(g))
		}
		if c := ExitCode(g); c != ExitError {
			t.Errorf("exit %d, want 1", c)
		}
	})

	t.Run("warnings: shown, and the answer is partial", func(t *testing.T) {
		proxy.set(nil, "store 10.0.0.7:10901 unavailable: partial response")
		defer proxy.set(nil, "")
		g := read(time.Now())
		out := describe(g)
		if !strings.Contains(out, "store 10.0.0.7:10901 unavailable") || !strings.Contains(out, "partial") {
			t.Errorf("the warning is not shown:\n%s", out)
		}
		if c := ExitCode(g); c != ExitError {
			t.Errorf("exit %d with a partial answer, want 1", c)
		}
		doc, err := JSON(g, "prom")
		if err != nil || !bytes.Contains(doc, []byte("store 10.0.0.7:10901 unavailable")) {
			t.Errorf("JSON without the warning: %v\n%s", err, doc)
		}
	})

	t.Run("a killed agent is stale at once and keeps its ghost", func(t *testing.T) {
		killed.kill()
		stoppedAt := time.Now()
		var g Fleet
		var r Row
		for {
			time.Sleep(time.Second)
			g = read(time.Now())
			r, _ = rowNamed(g, "killed")
			if r.Status != StatusGhost || time.Since(stoppedAt) > 20*time.Second {
				break
			}
		}
		t.Logf("%s after the kill:\n%s", time.Since(stoppedAt).Round(time.Second), describe(g))
		if r.Status != StatusStale || !strings.Contains(LockCell(r, g.At), "ghost") || !strings.Contains(LockCell(r, g.At), "stale") {
			t.Errorf("row killed %s %q, want stale with its ghost marked stale", r.Status, LockCell(r, g.At))
		}
		if time.Since(stoppedAt) > 10*time.Second {
			t.Errorf("row killed changed %s after the kill, want within a couple of scrapes", time.Since(stoppedAt).Round(time.Second))
		}
		// Past --stale-after and beyond (the reader's clock moved on).
		for _, later := range []time.Duration{staleAfter + 5*time.Second, 10 * time.Minute} {
			h := read(time.Now().Add(later))
			r, _ := rowNamed(h, "killed")
			if r.Status != StatusStale || !strings.Contains(LockCell(r, h.At), "gone-k ghost") || !strings.Contains(LockCell(r, h.At), "stale") {
				t.Errorf("%s later, row killed %s %q, want stale keeping gone-k's ghost\n%s", later, r.Status, LockCell(r, h.At), describe(h))
			}
		}
		if g.Queries > MaxQueries {
			t.Errorf("%d queries, want at most %d", g.Queries, MaxQueries)
		}
	})
}
