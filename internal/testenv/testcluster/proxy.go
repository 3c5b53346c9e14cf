package testcluster

import (
	"context"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// ReverseProxy returns a reverse proxy to the cluster's apiserver that
// authenticates as cfg (its TLS client certificate or bearer token) and
// flushes as bytes arrive, so that watches stream through it. Tests put it
// behind their own handler to record, rewrite or cut requests.
func (c *Cluster) ReverseProxy(t testing.TB, cfg *rest.Config) *httputil.ReverseProxy {
	t.Helper()
	target, err := url.Parse(c.URL)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport:     tr,
		FlushInterval: -1,
	}
}

// Watches keeps the watch requests a test proxy forwards, so that the test
// can cut them all at once (CutAll), as a broken connection would.
type Watches struct {
	mu   sync.Mutex
	open map[*http.Request]context.CancelFunc
}

// Forward serves the watch request r through next until it ends or CutAll
// cuts it; the abort of a cut stream is not a failure.
func (ws *Watches) Forward(next http.Handler, w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithCancel(r.Context())
	ws.mu.Lock()
	if ws.open == nil {
		ws.open = map[*http.Request]context.CancelFunc{}
	}
	ws.open[r] = cancel
	ws.mu.Unlock()
	defer func() {
		ws.mu.Lock()
		delete(ws.open, r)
		ws.mu.Unlock()
		cancel()
	}()
	defer func() {
		// A cut stream aborts the handler; that is the point.
		if v := recover(); v != nil && v != http.ErrAbortHandler {
			panic(v)
		}
	}()
	next.ServeHTTP(w, r.WithContext(ctx))
}

// CutAll cuts every open watch.
func (ws *Watches) CutAll() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, cancel := range ws.open {
		cancel()
	}
}
