package kubeclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
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

// getAtOnce makes n GETs at once (/api/v1/r0 …) and returns each one's
// body and error once all have ended, running meanwhile after starting them.
func getAtOnce(client *http.Client, url string, n int, meanwhile func()) ([]string, []error) {
	var wg sync.WaitGroup
	protos := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			resp, err := client.Get(url + fmt.Sprintf("/api/v1/r%d", i))
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			protos[i], errs[i] = string(b), err
		})
	}
	meanwhile()
	wg.Wait()
	return protos, errs
}

// TestOneDialForConcurrentFirstRequests: a session's first requests, all
// made at once before any connection exists, share one connection (one
// TLS handshake), over HTTP/2; they dialled one connection each before.
func TestOneDialForConcurrentFirstRequests(t *testing.T) {
	srv, conns, release := tlsServer(t)
	client := clientFor(t, srv.URL, 10*time.Second)
	const n = 8
	protos, errs := getAtOnce(client, srv.URL, n, func() {
		// Every request is out (or held) before the server answers any.
		time.Sleep(100 * time.Millisecond)
		release()
	})
	for i := range n {
		if errs[i] != nil || protos[i] != "HTTP/2.0" {
			t.Errorf("request %d: %q, %v", i, protos[i], errs[i])
		}
	}
	if got := conns.Load(); got != 1 {
		t.Errorf("%d connections for %d concurrent first requests, want 1", got, n)
	}
}

// TestOneDialHeldRequestsAreBounded: against a server that never finishes
// a TLS handshake, with the real transport, every request ends with a
// deadline error: on the timeout, or on its own shorter deadline. It
// cannot tell whether a request was held or dialled (were the gate to
// ignore a held request's context, the first's own timeout would release
// it, and it would end with a deadline error all the same):
// TestOneDialGate checks the gate's order of events.
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
	// The first request is dialling once the listener holds its connection.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		dialled := len(held) > 0
		mu.Unlock()
		if dialled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no request dialled the listener within 10s")
		}
	}
	// A held request with a shorter deadline of its own ends with it.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
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

// trackedBody is a request body that records whether it was closed.
type trackedBody struct {
	io.Reader
	closed atomic.Bool
}

func (b *trackedBody) Close() error { b.closed.Store(true); return nil }

// TestOneDialGate is the gate alone, in a synctest bubble: a request is
// still held when every goroutine is blocked, with no time passing, so
// the order of events is checked without a sleep. The first request goes
// on and the others wait; a held request whose context ends stops waiting
// with its context's error while the first is still out, and closes its
// body as a RoundTripper must; a first request that fails releases the
// others; a first request written on its connection releases them while
// it is still out.
func TestOneDialGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancelAll := context.WithCancel(context.Background())
		defer cancelAll()
		var mu sync.Mutex
		var sent []string
		sentNow := func() string {
			mu.Lock()
			defer mu.Unlock()
			return strings.Join(sent, " ")
		}
		// next stands for the transport: it records each request that
		// reached it; the first waits for end, or tells it was written
		// (as the transport does once the request is on its connection)
		// and then waits for its context, as every other request does.
		end := make(chan error)
		next := func(writes bool) http.RoundTripper {
			return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
				mu.Lock()
				sent = append(sent, req.URL.Path)
				mu.Unlock()
				if req.URL.Path == "/first" {
					if !writes {
						return nil, <-end
					}
					httptrace.ContextClientTrace(req.Context()).WroteRequest(httptrace.WroteRequestInfo{})
				}
				<-req.Context().Done()
				return nil, req.Context().Err()
			})
		}
		do := func(ctx context.Context, rt http.RoundTripper, path string, body io.ReadCloser) <-chan error {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://apiserver.test"+path, body)
			if err != nil {
				t.Fatal(err)
			}
			ch := make(chan error, 1)
			go func() {
				resp, err := rt.RoundTrip(req)
				if resp != nil {
					_ = resp.Body.Close()
				}
				ch <- err
			}()
			return ch
		}
		pending := func(ch <-chan error) bool {
			select {
			case err := <-ch:
				t.Errorf("ended (%v), want still out", err)
				return false
			default:
				return true
			}
		}

		// The first request cannot connect: the others are held.
		rt := (&oneDial{ready: make(chan struct{})}).wrap(next(false))
		first := do(ctx, rt, "/first", nil)
		synctest.Wait()
		hctx, hcancel := context.WithCancel(ctx)
		body := &trackedBody{Reader: strings.NewReader("{}")}
		held := do(hctx, rt, "/held", body)
		other := do(ctx, rt, "/other", nil)
		synctest.Wait()
		if got := sentNow(); got != "/first" {
			t.Fatalf("sent %q while the first is out, want /first alone", got)
		}
		pending(held)
		pending(other)

		// A held request's own context ends its wait; the first is
		// still out and the other still held.
		hcancel()
		synctest.Wait()
		select {
		case err := <-held:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("held request: %v, want its context's error", err)
			}
		default:
			t.Fatal("a held request whose context ended is still waiting")
		}
		if !body.closed.Load() {
			t.Error("a held request that ended did not close its body (RoundTripper's contract)")
		}
		pending(first)
		pending(other)
		if got := sentNow(); got != "/first" {
			t.Errorf("sent %q, want /first alone", got)
		}

		// The first fails: the other goes on.
		end <- errors.New("dial failed")
		synctest.Wait()
		if err := <-first; err == nil || err.Error() != "dial failed" {
			t.Errorf("first request: %v", err)
		}
		if got := sentNow(); got != "/first /other" {
			t.Errorf("sent %q once the first failed, want /first /other", got)
		}
		cancelAll()
		if err := <-other; !errors.Is(err, context.Canceled) {
			t.Errorf("other request: %v", err)
		}

		// A first request written on its connection releases the others
		// while it is still out.
		mu.Lock()
		sent = nil
		mu.Unlock()
		ctx2, cancel2 := context.WithCancel(context.Background())
		defer cancel2()
		rt = (&oneDial{ready: make(chan struct{})}).wrap(next(true))
		first = do(ctx2, rt, "/first", nil)
		synctest.Wait()
		second := do(ctx2, rt, "/second", nil)
		synctest.Wait()
		if got := sentNow(); got != "/first /second" {
			t.Errorf("sent %q once the first was written, want /first /second", got)
		}
		pending(first)
		cancel2()
		for _, ch := range []<-chan error{first, second} {
			if err := <-ch; !errors.Is(err, context.Canceled) {
				t.Errorf("request ended with %v, want its context's error", err)
			}
		}
	})
}

// TestOneDialHTTP1: a server that speaks only HTTP/1.1 (no h2 in its TLS
// handshake) carries one request per connection: the first requests made
// at once each get a connection and are all out together, since the gate
// waits for the first to be written, not answered (the server answers none
// until every one has arrived).
func TestOneDialHTTP1(t *testing.T) {
	const n = 4
	var arrived atomic.Int64
	all := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if arrived.Add(1) == n {
			close(all)
		}
		select {
		case <-all:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, r.Proto)
	}))
	var conns atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	client := clientFor(t, srv.URL, 30*time.Second)
	protos, errs := getAtOnce(client, srv.URL, n, func() {})
	for i := range n {
		if errs[i] != nil || protos[i] != "HTTP/1.1" {
			t.Errorf("request %d: %q, %v", i, protos[i], errs[i])
		}
	}
	if got := conns.Load(); got != n {
		t.Errorf("%d connections for %d concurrent HTTP/1.1 requests, want %d", got, n, n)
	}
}

// TestOneDialHeldFailuresReachWrappers: a request that ends while held
// behind the first is seen by the config's own WrapTransport as any failed
// request is (the agent counts failed API calls there,
// rebootwatch_api_errors_total).
func TestOneDialHeldFailuresReachWrappers(t *testing.T) {
	// A listener that accepts and never answers: the first request's TLS
	// handshake hangs, holding the gate.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for {
			select {
			case c := <-accepted:
				c.Close()
			default:
				return
			}
		}
	})
	var mu sync.Mutex
	var failed []string
	url := "https://" + ln.Addr().String()
	cfg := &rest.Config{Host: url, TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
			return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
				resp, err := rt.RoundTrip(req)
				if err != nil {
					mu.Lock()
					failed = append(failed, req.URL.Path)
					mu.Unlock()
				}
				return resp, err
			})
		}}
	client, err := rest.HTTPClientFor(WatchConfig(cfg, 0))
	if err != nil {
		t.Fatal(err)
	}
	do := func(ctx context.Context, path string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+path, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if resp != nil {
			_ = resp.Body.Close()
		}
		return err
	}
	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	first := make(chan error, 1)
	go func() { first <- do(ctx1, "/api/v1/nodes") }()
	accepted <- <-accepted // the first request has dialled: it holds the gate

	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if err := do(ctx2, "/api/v1/pods"); !errors.Is(err, context.Canceled) {
		t.Errorf("held request: %v, want its context's error", err)
	}
	mu.Lock()
	seen := slices.Contains(failed, "/api/v1/pods")
	got := strings.Join(failed, " ")
	mu.Unlock()
	if !seen {
		t.Errorf("failures the config's wrapper saw: %q, want the held request's (/api/v1/pods) among them", got)
	}
	cancel1()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Errorf("first request: %v", err)
	}
}
