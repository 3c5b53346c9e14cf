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

	"github.com/rebootwatch/rebootwatch/internal/sanitize"
)

// NewLogger returns the agent's JSON logger at level (debug|info|warn|error).
// Its values come from the cluster: each string is bounded to
// sanitize.LogValueMax runes (start and end kept), and every line goes out
// with the runes a terminal would obey that encoding/json leaves raw (bidi
// controls, C1 controls, DEL) escaped as \uXXXX, so the JSON stays equal.
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
	return slog.New(slog.NewJSONHandler(escapingWriter{w}, &slog.HandlerOptions{Level: l, ReplaceAttr: boundAttr}))
}

// boundAttr bounds a string value to sanitize.LogValueMax runes. Reports
// (LockReport, SourceReport, BlockerReport) bound their own fields.
func boundAttr(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindString {
		if s := a.Value.String(); len(s) > sanitize.LogValueMax {
			a.Value = slog.StringValue(sanitize.Middle(s, sanitize.LogValueMax))
		}
	}
	return a
}

// escapingWriter passes each JSON line through sanitize.JSON. The handler
// writes a whole record in one Write; a short write of the escaped copy is
// reported as a short write of the original.
type escapingWriter struct{ w io.Writer }

func (e escapingWriter) Write(p []byte) (int, error) {
	q := sanitize.JSON(p)
	n, err := e.w.Write(q)
	if n < len(q) {
		if err == nil {
			err = io.ErrShortWrite
		}
		return min(n, len(p)), err
	}
	return len(p), err
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
