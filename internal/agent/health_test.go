package agent

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time      { return c.t }
func (c *fakeClock) Add(d time.Duration) { c.t = c.t.Add(d) }
func newFakeClock() *fakeClock           { return &fakeClock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)} }
func serve(h http.Handler) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	return rec.Code, rec.Body.String()
}

func TestHealthz(t *testing.T) {
	clk := newFakeClock()
	h := NewHealth(clk.Now, 10*time.Second)
	check := func(wantOK bool, wantText string) {
		t.Helper()
		code, body := serve(h.HealthzHandler())
		if (code == 200) != wantOK || !strings.Contains(body, wantText) {
			t.Fatalf("healthz %d %q, want ok=%v containing %q", code, body, wantOK, wantText)
		}
	}
	// Grace from start: 3× interval.
	check(true, "no successful iteration yet")
	clk.Add(30 * time.Second)
	check(true, "ok")
	clk.Add(time.Millisecond)
	check(false, "over 3× interval")

	h.Iteration(nil)
	check(true, "last successful iteration 0s ago")
	// Failed iterations do not count; the last error is reported.
	clk.Add(20 * time.Second)
	h.Iteration(errors.New("node list: context deadline exceeded"))
	check(true, "ok")
	clk.Add(10*time.Second + time.Millisecond)
	h.Iteration(errors.New("node list: context deadline exceeded"))
	check(false, "last error: node list: context deadline exceeded")
	// Healthy again after one success.
	h.Iteration(nil)
	check(true, "ok")
}

func TestReadyz(t *testing.T) {
	h := NewHealth(newFakeClock().Now, time.Second)
	if code, body := serve(h.ReadyzHandler()); code != 503 || !strings.Contains(body, "not synced") {
		t.Fatalf("before sync: %d %q", code, body)
	}
	h.SetSynced(false, "nodes: forbidden")
	if code, body := serve(h.ReadyzHandler()); code != 503 || !strings.Contains(body, "nodes: forbidden") {
		t.Fatalf("sync failing: %d %q", code, body)
	}
	h.SetSynced(true, "")
	if code, _ := serve(h.ReadyzHandler()); code != 200 {
		t.Fatalf("synced: %d", code)
	}
}
