package agent

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, addr, path string) int {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestListenSeparateAndShared(t *testing.T) {
	h := NewHealth(time.Now, time.Minute)
	h.SetSynced(true, "")
	m := NewMetrics()

	s, err := Listen("127.0.0.1:0", "localhost:0", h, m)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	if s.HealthAddr == s.MetricsAddr {
		t.Fatalf("separate addresses share %s", s.HealthAddr)
	}
	for _, tc := range []struct {
		addr, path string
		code       int
	}{
		{s.HealthAddr, "/healthz", 200}, {s.HealthAddr, "/readyz", 200}, {s.HealthAddr, "/metrics", 404},
		{s.MetricsAddr, "/metrics", 200}, {s.MetricsAddr, "/healthz", 404},
	} {
		if got := get(t, tc.addr, tc.path); got != tc.code {
			t.Errorf("%s%s: %d, want %d", tc.addr, tc.path, got, tc.code)
		}
	}

	shared, err := Listen("127.0.0.1:0", "127.0.0.1:0", h, m)
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Shutdown(context.Background())
	if shared.HealthAddr != shared.MetricsAddr {
		t.Fatalf("equal flags gave two servers: %s %s", shared.HealthAddr, shared.MetricsAddr)
	}
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if got := get(t, shared.HealthAddr, p); got != 200 {
			t.Errorf("shared %s: %d", p, got)
		}
	}

	// A taken port is a clear error naming the flag.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := Listen(ln.Addr().String(), "127.0.0.1:0", h, m); err == nil || !strings.Contains(err.Error(), "--health-probe-bind-address") {
		t.Errorf("taken health port: %v", err)
	}
	if _, err := Listen("127.0.0.1:0", ln.Addr().String(), h, m); err == nil || !strings.Contains(err.Error(), "--metrics-bind-address") {
		t.Errorf("taken metrics port: %v", err)
	}
}
