package notify

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rebootwatch/rebootwatch/model"
)

// recorder is a Send that records messages.
type recorder struct {
	mu   sync.Mutex
	msgs []string
	got  chan string
}

func newRecorder() *recorder { return &recorder{got: make(chan string, 100)} }

func (r *recorder) send(_ context.Context, text string) error {
	r.mu.Lock()
	r.msgs = append(r.msgs, text)
	r.mu.Unlock()
	r.got <- text
	return nil
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msgs...)
}

// syncBuffer is a log sink safe for the sender goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func count(n *Notifier, service, result string) float64 {
	return testutil.ToFloat64(n.Counter().WithLabelValues(service, result))
}

// TestPostNeverBlocks: with nobody sending, Post returns at once whatever
// the number of messages; beyond the queue they are dropped and counted.
func TestPostNeverBlocks(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	n := NewWithTargets([]Target{{Service: "generic", Send: func(ctx context.Context, _ string) error { <-block; return nil }}},
		Options{Queue: 2})
	for range 10 {
		n.Post("hello")
	}
	if got := count(n, "generic", ResultDropped); got != 8 {
		t.Fatalf("dropped %v, want 8 (queue 2, 10 posts)", got)
	}
}

// TestSendTimeoutCountsErrorAndRedacts: a service that never answers is cut
// by the timeout, counted as an error, and the log line names the service
// but none of the URL's secrets.
func TestSendTimeoutCountsErrorAndRedacts(t *testing.T) {
	var logs syncBuffer
	tg := Target{Service: "generic+https", secrets: secretsOf("generic+https://hooks.example.com/T0KEN-abc?key=s3cr3t-value"),
		Send: func(ctx context.Context, _ string) error {
			<-ctx.Done()
			return errors.New(`Post "https://hooks.example.com/T0KEN-abc?key=s3cr3t-value": ` + ctx.Err().Error())
		}}
	n := NewWithTargets([]Target{tg}, Options{Timeout: 50 * time.Millisecond, Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	n.Post("ghost")
	for count(n, "generic+https", ResultError) < 1 {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	out := logs.String()
	for _, secret := range []string{"T0KEN-abc", "s3cr3t-value", "hooks.example.com"} {
		if strings.Contains(out, secret) {
			t.Errorf("log leaks %q: %s", secret, out)
		}
	}
	if !strings.Contains(out, `"service":"generic+https"`) || !strings.Contains(out, "notification failed") {
		t.Errorf("log does not say which service failed: %s", out)
	}
}

// TestRateLimited: with a burst of 2 and an hour between messages, exactly
// two of five messages go out; the others wait in the queue.
func TestRateLimited(t *testing.T) {
	r := newRecorder()
	n := NewWithTargets([]Target{{Service: "generic", Send: r.send}}, Options{Burst: 2, Interval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	for i := range 5 {
		n.Post(string(rune('a' + i)))
	}
	<-r.got
	<-r.got
	cancel() // Run stops waiting for the limiter and returns
	<-done
	if got := r.all(); len(got) != 2 {
		t.Fatalf("sent %d messages, want 2 (burst): %v", len(got), got)
	}
}

// TestNewRejectsBadURLWithoutEchoingIt: an unknown service is an error
// naming its position and scheme, never the rest of the URL.
func TestNewRejectsBadURLWithoutEchoingIt(t *testing.T) {
	_, err := New(Options{URLs: []string{"generic+http://127.0.0.1:1/ok", "nosuchservice://user:p4ssw0rd@host/T0KEN"}})
	if err == nil {
		t.Fatal("an unknown service was accepted")
	}
	if !strings.Contains(err.Error(), "#2") || strings.Contains(err.Error(), "p4ssw0rd") || strings.Contains(err.Error(), "T0KEN") {
		t.Errorf("error %q: want the position, no secret", err)
	}
	n, err := New(Options{URLs: []string{"generic+http://127.0.0.1:1/ok", "slack://xoxb:123456789012-1234567890123-4s8p2j3k4l5m6n7b8v9c0x1z@C001CH4NN3L"}})
	if err != nil || n.Targets() != 2 {
		t.Fatalf("valid URLs: %v", err)
	}
}

// TestShoutrrrGenericWebhook sends through the real shoutrrr generic
// service to a loopback receiver; a failing receiver is counted as an error
// and its URL's token stays out of the log.
func TestShoutrrrGenericWebhook(t *testing.T) {
	bodies := make(chan string, 10)
	status := http.StatusOK
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		// The status is taken before the body is handed to the test, which
		// changes it once it has seen the first body: read after, the first
		// request could already answer 500.
		mu.Lock()
		code := status
		mu.Unlock()
		bodies <- r.URL.Path + " " + string(b)
		w.WriteHeader(code)
	}))
	defer srv.Close()
	var logs syncBuffer
	reg := prometheus.NewRegistry()
	n, err := New(Options{URLs: []string{"generic+" + srv.URL + "/hook/T0KEN-xyz"}, Registerer: reg,
		Log: slog.New(slog.NewJSONHandler(&logs, nil)), Interval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go n.Run(ctx)
	n.Post("lock \x1b[31mred\x1b[0m turned ghost")
	got := <-bodies
	if !strings.HasPrefix(got, "/hook/T0KEN-xyz rebootwatch: lock") || strings.Contains(got, "\x1b") {
		t.Errorf("receiver got %q: want the sanitised message on the hook path", got)
	}
	mu.Lock()
	status = http.StatusInternalServerError
	mu.Unlock()
	n.Post("second")
	<-bodies
	for count(n, "generic+http", ResultError) < 1 {
		time.Sleep(10 * time.Millisecond)
	}
	if count(n, "generic+http", ResultSent) != 1 {
		t.Errorf("sent %v, want 1", count(n, "generic+http", ResultSent))
	}
	if strings.Contains(logs.String(), "T0KEN-xyz") || strings.Contains(logs.String(), srv.URL) {
		t.Errorf("log leaks the URL: %s", logs.String())
	}
}

func status(ref string, holder string, v model.Verdict) model.LockStatus {
	return model.LockStatus{LockRef: model.LockRef{Kind: model.LockFleetlock, Namespace: "default", Name: ref}, Holder: holder,
		Verdict: v, Reason: "because"}
}

// TestJudgedNotifiesTransitionsOnce: a lock turning ghost, orphaned or
// expired is told once; a follower tracks without telling, so a new leader
// does not repeat it; held and free are never told.
func TestJudgedNotifiesTransitionsOnce(t *testing.T) {
	r := newRecorder()
	n := NewWithTargets([]Target{{Service: "generic", Send: r.send}}, Options{Queue: 100})
	t0 := time.Unix(1_800_000_000, 0)
	steps := []struct {
		statuses []model.LockStatus
		leader   bool
		want     int // messages queued by this step
	}{
		{[]model.LockStatus{status("a", "h1", model.VerdictHeld)}, true, 0},
		{[]model.LockStatus{status("a", "h1", model.VerdictGhost)}, true, 1},
		{[]model.LockStatus{status("a", "h1", model.VerdictGhost)}, true, 0}, // still ghost
		{[]model.LockStatus{status("a", "", model.VerdictFree)}, true, 0},
		{[]model.LockStatus{status("a", "h2", model.VerdictOrphaned)}, false, 0}, // follower: tracked only
		{[]model.LockStatus{status("a", "h2", model.VerdictOrphaned)}, true, 0},  // new leader: already seen
		{[]model.LockStatus{status("a", "h2", model.VerdictExpired), status("b", "h3", model.VerdictGhost)}, true, 2},
		{[]model.LockStatus{status("a", "h2", model.VerdictAmbiguous)}, true, 0},
	}
	total := 0
	for i, s := range steps {
		n.Judged(t0.Add(time.Duration(i)*time.Minute), s.statuses, nil, "p", s.leader)
		total += s.want
		if len(n.queue) != total {
			t.Fatalf("step %d: %d messages queued, want %d", i, len(n.queue), total)
		}
	}
	first := <-n.queue
	if !strings.Contains(first, "fleetlock lock default/a turned ghost, holder h1: because") ||
		!strings.Contains(first, "rebootwatch reap --kind fleetlock --lock default/a") {
		t.Errorf("ghost message %q", first)
	}
}

// TestJudgedBlocked: the fleet is blocked while its blocker (the blockers
// step's) is stuck — one that will not clear by itself — and nothing
// progresses; progress restarts the count; the bound is told once per
// blocked spell, naming the blocker.
func TestJudgedBlocked(t *testing.T) {
	n := NewWithTargets([]Target{{Service: "generic", Send: newRecorder().send}}, Options{Queue: 100})
	n.SetBlockedAfter(30 * time.Minute)
	t0 := time.Unix(1_800_000_000, 0)
	ghost := []model.LockStatus{status("a", "h1", model.VerdictGhost)}
	stuck := &model.FleetBlocker{Blocker: model.Blocker{Kind: model.BlockerLock, Node: "w3", Stalls: true,
		Reason: "w3 waits for the fleetlock lock, held by h1 for 2h, ghost: reap it", Clears: "reap it"}, Others: 2}
	window := &model.FleetBlocker{Blocker: model.Blocker{Kind: model.BlockerWindow, Node: "w3", Stalls: true, Reason: "w3 waits for kured's reboot window", Until: t0.Add(5 * time.Hour)}}
	unknown := &model.FleetBlocker{Blocker: model.Blocker{Kind: model.BlockerUnknown, Stalls: true, Reason: "reboot-required unknown"}}
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	check := func(got, want time.Duration) {
		t.Helper()
		if got != want {
			t.Fatalf("blocked %s, want %s", got, want)
		}
	}
	check(n.Judged(at(0), ghost, nil, "p1", true), 0)
	check(n.Judged(at(5), ghost, window, "p1", true), 0)  // a closed window clears by itself
	check(n.Judged(at(8), ghost, unknown, "p1", true), 0) // nothing to do as far as can be told
	check(n.Judged(at(10), ghost, stuck, "p1", false), 0) // stuck from now
	check(n.Judged(at(25), ghost, stuck, "p1", true), 15*time.Minute)
	check(n.Judged(at(30), ghost, stuck, "p2", true), 0) // a node moved
	check(n.Judged(at(59), ghost, stuck, "p2", true), 29*time.Minute)
	blockedMsgs := 0
	drain := func() {
		for len(n.queue) > 0 {
			if m := <-n.queue; strings.Contains(m, "no node has progressed for") {
				blockedMsgs++
				if !strings.Contains(m, "no node has progressed for 30m: w3 waits for the fleetlock lock, held by h1 for 2h, ghost: reap it (and 2 other node(s) blocked). To clear it: reap it.") {
					t.Errorf("blocked message %q does not name the blocker", m)
				}
			}
		}
	}
	drain()
	check(n.Judged(at(60), ghost, stuck, "p2", true), 30*time.Minute)
	check(n.Judged(at(90), ghost, stuck, "p2", true), 60*time.Minute)
	if drain(); blockedMsgs != 1 {
		t.Fatalf("%d blocked messages, want 1", blockedMsgs)
	}
	check(n.Judged(at(91), ghost, nil, "p2", true), 0)
	check(n.Judged(at(92), ghost, stuck, "p2", true), 0)
	check(n.Judged(at(122), ghost, stuck, "p2", true), 30*time.Minute)
	if drain(); blockedMsgs != 2 {
		t.Fatalf("%d blocked messages after a second spell, want 2", blockedMsgs)
	}
}

// TestActedOnlyDone: only performed actions are told.
func TestActedOnlyDone(t *testing.T) {
	n := NewWithTargets([]Target{{Service: "generic", Send: newRecorder().send}}, Options{Queue: 100})
	s := status("a", "h1", model.VerdictGhost)
	for _, o := range []model.Outcome{model.OutcomeRefused, model.OutcomeConflict, model.OutcomeDryRun, model.OutcomeError, model.OutcomeForbidden, model.OutcomeSkipped} {
		n.Acted(s, model.ActionReap, o, "x")
	}
	n.Acted(s, model.ActionReap, model.OutcomeDone, "reaped fleetlock:default/a held by h1")
	if len(n.queue) != 1 || !strings.Contains(<-n.queue, "reaped fleetlock:default/a") {
		t.Fatal("want exactly the done action told")
	}
}
