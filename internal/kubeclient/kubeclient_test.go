package kubeclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// hang is a server that answers nothing until released.
func hangServer(t *testing.T) (*httptest.Server, func()) {
	release := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") == "true" && r.URL.Query().Get("stream") == "ok" {
			// A healthy watch: headers now, then a slow body.
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
			_, _ = io.WriteString(w, "late")
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	stop := func() { once.Do(func() { close(release) }) }
	t.Cleanup(func() { stop(); srv.Close() })
	return srv, stop
}

func TestTimeoutTransport(t *testing.T) {
	srv, release := hangServer(t)
	rt := &timeoutTransport{next: http.DefaultTransport, timeout: 200 * time.Millisecond}
	client := &http.Client{Transport: rt}

	// A non-watch request that never answers times out.
	_, err := client.Get(srv.URL + "/api/v1/nodes")
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("list: %v, want a deadline error", err)
	}
	// A watch that never answers its headers times out.
	_, err = client.Get(srv.URL + "/api/v1/nodes?watch=true")
	if err == nil {
		t.Fatal("black-holed watch did not time out")
	}
	// A watch whose headers arrived lives past the timeout.
	resp, err := client.Get(srv.URL + "/api/v1/nodes?watch=true&stream=ok")
	if err != nil {
		t.Fatalf("healthy watch: %v", err)
	}
	time.Sleep(400 * time.Millisecond) // past the timeout: the stream must still be readable
	release()
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "late" {
		t.Fatalf("watch body %q, %v: the stream was cut", body, err)
	}
	// A request that carries its own deadline keeps it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/nodes", nil)
	if resp, err := client.Do(req); err != nil {
		t.Fatalf("released server: %v", err)
	} else {
		resp.Body.Close()
	}
}

// TestProtobufConfig: the derived config asks for protobuf (JSON still
// accepted) and the caller's config, which custom resources' clients use,
// keeps its content types.
func TestProtobufConfig(t *testing.T) {
	cfg := &rest.Config{Host: "https://example.invalid", UserAgent: "rebootwatch"}
	p := ProtobufConfig(cfg)
	if p.ContentType != "application/vnd.kubernetes.protobuf" || p.AcceptContentTypes != "application/vnd.kubernetes.protobuf,application/json" {
		t.Errorf("content types %q, accept %q", p.ContentType, p.AcceptContentTypes)
	}
	if p.Host != cfg.Host || p.UserAgent != cfg.UserAgent {
		t.Errorf("host %q, user agent %q: not cfg's", p.Host, p.UserAgent)
	}
	if cfg.ContentType != "" || cfg.AcceptContentTypes != "" {
		t.Errorf("cfg changed: %q, %q", cfg.ContentType, cfg.AcceptContentTypes)
	}
}

// tlsServer is an HTTP/2 TLS server that counts the connections it
// accepted and answers every request once released.
func tlsServer(t *testing.T) (srv *httptest.Server, conns *atomic.Int64, release func()) {
	conns = &atomic.Int64{}
	ch := make(chan struct{})
	var once sync.Once
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-ch:
		case <-r.Context().Done():
		}
		_, _ = io.WriteString(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	release = func() { once.Do(func() { close(ch) }) }
	t.Cleanup(func() { release(); srv.Close() })
	return srv, conns, release
}

// clientFor is the HTTP client client-go builds from WatchConfig.
func clientFor(t *testing.T, host string, timeout time.Duration) *http.Client {
	t.Helper()
	c, err := rest.HTTPClientFor(WatchConfig(&rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, timeout))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestOneDialForConcurrentFirstRequests: a session's first requests, all
// made at once before any connection exists, share one connection (one
// TLS handshake), over HTTP/2; they dialled one connection each before.
func TestOneDialForConcurrentFirstRequests(t *testing.T) {
	srv, conns, release := tlsServer(t)
	client := clientFor(t, srv.URL, 10*time.Second)
	const n = 8
	var wg sync.WaitGroup
	protos := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			resp, err := client.Get(srv.URL + fmt.Sprintf("/api/v1/r%d", i))
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			protos[i], errs[i] = string(b), err
		})
	}
	// Every request is out (or held) before the server answers any.
	time.Sleep(100 * time.Millisecond)
	release()
	wg.Wait()
	for i := range n {
		if errs[i] != nil || protos[i] != "HTTP/2.0" {
			t.Errorf("request %d: %q, %v", i, protos[i], errs[i])
		}
	}
	if got := conns.Load(); got != 1 {
		t.Errorf("%d connections for %d concurrent first requests, want 1", got, n)
	}
}

// TestOneDialHeldRequestsAreBounded: while the first request cannot get a
// connection, the requests held behind it still end within the timeout, or
// with their own context; and once the first has failed, the others go on.
func TestOneDialHeldRequestsAreBounded(t *testing.T) {
	// A listener that accepts and never answers: the TLS handshake hangs.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})
	client := clientFor(t, "https://"+ln.Addr().String(), 300*time.Millisecond)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = client.Get("https://" + ln.Addr().String() + "/api/v1/nodes")
		})
	}
	// A held request with a shorter deadline of its own ends with it.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	time.Sleep(20 * time.Millisecond) // the first request is dialling by now
	req, _ := http.NewRequestWithContext(ctx, "GET", "https://"+ln.Addr().String()+"/api/v1/pods", nil)
	_, ownErr := client.Do(req)
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("request %d: %v, want a deadline error", i, err)
		}
	}
	if !errors.Is(ownErr, context.DeadlineExceeded) {
		t.Errorf("held request with its own deadline: %v", ownErr)
	}
}
