package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
)

// NewLogger returns the agent's JSON logger at level (debug|info|warn|error).
func NewLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	switch strings.ToLower(level) {
	case "debug":
		l = slog.LevelDebug
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

// Servers are the bound health and metrics listeners.
type Servers struct {
	HealthAddr  string // where /healthz and /readyz answer
	MetricsAddr string // where /metrics answers (the same as HealthAddr when both flags are equal)
	servers     []*http.Server
	errs        chan error
}

// Listen binds the health and metrics addresses (one server when they are
// equal) and serves until Shutdown. A bind error is returned at once.
func Listen(healthAddr, metricsAddr string, h *Health, m *Metrics) (*Servers, error) {
	s := &Servers{errs: make(chan error, 2)}
	healthMux := http.NewServeMux()
	healthMux.Handle("/healthz", h.HealthzHandler())
	healthMux.Handle("/readyz", h.ReadyzHandler())
	var lns []net.Listener
	hl, err := net.Listen("tcp", healthAddr)
	if err != nil {
		return nil, fmt.Errorf("--health-probe-bind-address %s: %w", healthAddr, err)
	}
	lns = append(lns, hl)
	s.HealthAddr = hl.Addr().String()
	muxes := []*http.ServeMux{healthMux}
	if metricsAddr == healthAddr {
		healthMux.Handle("/metrics", m.Handler())
		s.MetricsAddr = s.HealthAddr
	} else {
		ml, err := net.Listen("tcp", metricsAddr)
		if err != nil {
			hl.Close()
			return nil, fmt.Errorf("--metrics-bind-address %s: %w", metricsAddr, err)
		}
		lns = append(lns, ml)
		s.MetricsAddr = ml.Addr().String()
		mm := http.NewServeMux()
		mm.Handle("/metrics", m.Handler())
		muxes = append(muxes, mm)
	}
	for i, ln := range lns {
		srv := &http.Server{Handler: muxes[i], ReadHeaderTimeout: 10 * time.Second}
		s.servers = append(s.servers, srv)
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.errs <- err
			}
		}()
	}
	return s, nil
}

// Err delivers a serve error (the agent should stop: its probes are gone).
func (s *Servers) Err() <-chan error { return s.errs }

// Shutdown stops the servers.
func (s *Servers) Shutdown(ctx context.Context) {
	for _, srv := range s.servers {
		_ = srv.Shutdown(ctx)
	}
}
