// Package kubeclient holds the client-go configuration that the CLI and the
// agent share: every API request bounded by a timeout, without cutting the
// long-lived watch streams that informers hold open, and a session's first
// requests sharing one HTTP/2 connection instead of each dialling its own.
//
// It must not start informers, judge anything or read kubeconfigs: callers
// bring a rest.Config and get one back.
package kubeclient

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
)

// WatchConfig derives the config for informers from cfg. An http.Client
// timeout would cut every watch stream, so it is replaced by a transport that
// bounds every non-watch request as a whole and every watch until the server
// answers (a black-holed API times out either way; a healthy watch lives on).
func WatchConfig(cfg *rest.Config, timeout time.Duration) *rest.Config {
	w := rest.CopyConfig(cfg)
	w.Timeout = 0
	prev := w.WrapTransport
	gate := &oneDial{ready: make(chan struct{})}
	w.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		// The gate is innermost: cfg's own wrappers (the agent's count of
		// failed API calls) see a request that ends while held as they
		// see any failed request. The timeout bounds the wait there too.
		rt = gate.wrap(rt)
		if prev != nil {
			rt = prev(rt)
		}
		return &timeoutTransport{next: rt, timeout: timeout}
	}
	return w
}

// oneDial holds a session's first requests until the first of them has
// been written on its connection. They all start at once (every source
// lists at start), before any connection exists, and Go's transport then
// dials and TLS-handshakes once per request: HTTP/2 is only known after
// the handshake, and every connection but one is closed unused (the
// apiserver paid for each handshake all the same). Once the first request
// is written, the others share its HTTP/2 connection. A server or proxy
// that speaks only HTTP/1.1 carries one request per connection: there the
// others dial their own once the first is written, as they did without
// the gate, one dial later. A request whose context ends while held fails
// with its context's error; a first request that fails releases the
// others. Only a session's first requests wait: once released, the gate
// stays open (a connection lost later is dialled again as Go's transport
// does).
type oneDial struct {
	first atomic.Bool
	once  sync.Once
	ready chan struct{}
}

func (g *oneDial) release() { g.once.Do(func() { close(g.ready) }) }

func (g *oneDial) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if g.first.CompareAndSwap(false, true) {
			// This request dials. Its connection is shared once the
			// transport has written the request on it (by then an HTTP/2
			// connection is in the transport's pool).
			trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { g.release() }}
			resp, err := next.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
			g.release()
			return resp, err
		}
		select {
		case <-g.ready:
		case <-req.Context().Done():
			// A RoundTripper must close the body, errors included.
			if req.Body != nil {
				_ = req.Body.Close()
			}
			return nil, req.Context().Err()
		}
		return next.RoundTrip(req)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// ProtobufConfig derives from cfg the config for clients of built-in types:
// they travel as protobuf (nodes at a fraction of JSON's decoding cost),
// with JSON still accepted. Custom resources (Longhorn) only speak JSON:
// their clients keep cfg.
func ProtobufConfig(cfg *rest.Config) *rest.Config {
	p := rest.CopyConfig(cfg)
	p.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	p.ContentType = "application/vnd.kubernetes.protobuf"
	return p
}

// timeoutTransport bounds requests that have no deadline of their own.
type timeoutTransport struct {
	next    http.RoundTripper
	timeout time.Duration
}

func (t *timeoutTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if _, ok := req.Context().Deadline(); ok || t.timeout <= 0 {
		return t.next.RoundTrip(req)
	}
	isWatch := req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1"
	var (
		ctx    context.Context
		cancel context.CancelFunc
		timer  *time.Timer
	)
	if isWatch {
		ctx, cancel = context.WithCancel(req.Context())
		timer = time.AfterFunc(t.timeout, cancel)
	} else {
		ctx, cancel = context.WithTimeout(req.Context(), t.timeout)
	}
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if timer != nil && !timer.Stop() && err == nil {
		// The deadline fired as the answer arrived: the body is unusable.
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("%s %s: no answer within %s: %w", req.Method, req.URL.Path, t.timeout, context.DeadlineExceeded)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelBody releases the request's context when the body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
	once   sync.Once
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.cancel)
	return err
}

// errorCounting returns a WrapTransport that reports each failed API call
