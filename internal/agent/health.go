package agent

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Health holds what /healthz and /readyz answer. /healthz fails when no
// iteration succeeded within 3× the interval (counted from start until the
// first one), so the kubelet restarts an agent whose loop wedged or whose
// API calls keep failing; /readyz reflects whether the informers synced.
type Health struct {
	mu       sync.Mutex
	clock    func() time.Time
	interval time.Duration
	started  time.Time
	lastOK   time.Time
	lastErr  string
	synced   bool
	syncErr  string
}

// NewHealth starts the health clock now (per clock).
func NewHealth(clock func() time.Time, interval time.Duration) *Health {
	return &Health{clock: clock, interval: interval, started: clock()}
}

// Iteration records the end of one iteration: err nil means it succeeded.
func (h *Health) Iteration(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		h.lastOK = h.clock()
		h.lastErr = ""
		return
	}
	h.lastErr = err.Error()
}

// SetSynced records the informers' sync state; msg says why when not synced.
func (h *Health) SetSynced(ok bool, msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.synced, h.syncErr = ok, msg
}

// Healthy reports liveness and a one-line reason.
func (h *Health) Healthy() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clock()
	limit := 3 * h.interval
	ref, what := h.lastOK, "last successful iteration"
	if ref.IsZero() {
		ref, what = h.started, "start (no successful iteration yet)"
	}
	age := now.Sub(ref)
	if age <= limit {
		return true, fmt.Sprintf("ok: %s %s ago (limit %s)", what, age.Round(time.Millisecond), limit)
	}
	msg := fmt.Sprintf("unhealthy: %s %s ago, over 3× interval (%s)", what, age.Round(time.Millisecond), limit)
	if h.lastErr != "" {
		msg += "; last error: " + h.lastErr
	}
	return false, msg
}

// Ready reports readiness and a one-line reason.
func (h *Health) Ready() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.synced {
		return true, "ok: informers synced"
	}
	msg := "not ready: informers not synced"
	if h.syncErr != "" {
		msg += ": " + h.syncErr
	}
	return false, msg
}

// HealthzHandler serves /healthz.
func (h *Health) HealthzHandler() http.Handler { return probeHandler(h.Healthy) }

// ReadyzHandler serves /readyz.
func (h *Health) ReadyzHandler() http.Handler { return probeHandler(h.Ready) }

func probeHandler(check func() (bool, string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		ok, msg := check()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, msg)
	})
}
