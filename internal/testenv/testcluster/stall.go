package testcluster

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"path"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// StallingProxy sits between a client and the cluster's apiserver and
// passes every request on, except that while a resource is held (Hold) it
// stalls that resource's watches the way a broken proxy or load balancer
// does: the watch is accepted, the apiserver's headers reach the client,
// and then nothing more — no events, no error, no end. Lists and probes of
// the same resource still pass. Release ends the held streams (cleanly, as
// a server ending a watch), so the client watches again and is served.
type StallingProxy struct {
	// Config reaches the apiserver through the proxy (plain HTTP to the
	// proxy, which authenticates as the configuration it was made with).
	Config *rest.Config

	proxy *httputil.ReverseProxy

	mu      sync.Mutex
	held    map[string]chan struct{}                        // resource -> closed on release
	holding map[string]int                                  // resource -> streams held now
	lists   map[string]int                                  // resource -> lists without a limit passed on
	open    map[string]map[*http.Request]context.CancelFunc // resource -> watches passed on
}

type holdKey struct{}

// StallingProxy starts a stalling proxy to the apiserver that
// authenticates as cfg; it stops with the test.
func (c *Cluster) StallingProxy(t testing.TB, cfg *rest.Config) *StallingProxy {
	t.Helper()
	p := &StallingProxy{proxy: c.ReverseProxy(t, cfg), held: map[string]chan struct{}{}, holding: map[string]int{}, lists: map[string]int{},
		open: map[string]map[*http.Request]context.CancelFunc{}}
	p.proxy.ModifyResponse = func(resp *http.Response) error {
		if release, ok := resp.Request.Context().Value(holdKey{}).(chan struct{}); ok {
			resp.Body = &heldBody{upstream: resp.Body, release: release, done: resp.Request.Context().Done()}
		}
		return nil
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	t.Cleanup(p.ReleaseAll)
	p.Config = &rest.Config{Host: srv.URL, QPS: -1}
	return p
}

// resourceOf is the resource a collection request names: the last
// segment of its path (/api/v1/nodes, /apis/apps/v1/namespaces/x/daemonsets).
func resourceOf(r *http.Request) string { return path.Base(r.URL.Path) }

func isWatch(r *http.Request) bool {
	w := r.URL.Query().Get("watch")
	return w == "true" || w == "1"
}

func (p *StallingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !isWatch(r) {
		if r.Method == http.MethodGet && r.URL.Query().Get("limit") == "" {
			p.mu.Lock()
			p.lists[resourceOf(r)]++
			p.mu.Unlock()
		}
		p.proxy.ServeHTTP(w, r)
		return
	}
	res := resourceOf(r)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	p.mu.Lock()
	release, held := p.held[res]
	if held {
		ctx = context.WithValue(ctx, holdKey{}, release)
		p.holding[res]++
	} else {
		if p.open[res] == nil {
			p.open[res] = map[*http.Request]context.CancelFunc{}
		}
		p.open[res][r] = cancel
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		if held {
			p.holding[res]--
		} else {
			delete(p.open[res], r)
		}
		p.mu.Unlock()
	}()
	defer func() {
		// A cut stream aborts the handler; that is the point.
		if v := recover(); v != nil && v != http.ErrAbortHandler {
			panic(v)
		}
	}()
	p.proxy.ServeHTTP(w, r.WithContext(ctx))
}

// Hold stalls the watches of resource ("nodes", "daemonsets", "leases",
// "poddisruptionbudgets", "pods", "volumes"): it cuts those open now (so
// the client watches again) and holds every new one until Release.
func (p *StallingProxy) Hold(resource string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.held[resource]; !ok {
		p.held[resource] = make(chan struct{})
	}
	for _, cancel := range p.open[resource] {
		cancel()
	}
}

// Lists returns how many GETs of resource without a limit (whole lists,
// not probes or pages; a GET of one object counts under its name) were
// passed on.
func (p *StallingProxy) Lists(resource string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lists[resource]
}

// Holding returns how many watches of resource are held now.
func (p *StallingProxy) Holding(resource string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.holding[resource]
}

// Release ends the held watches of resource (as a server ends a watch:
// the client watches again) and passes its watches on again.
func (p *StallingProxy) Release(resource string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.held[resource]; ok {
		close(c)
		delete(p.held, resource)
	}
}

// ReleaseAll releases every held resource.
func (p *StallingProxy) ReleaseAll() {
	p.mu.Lock()
	var all []string
	for res := range p.held {
		all = append(all, res)
	}
	p.mu.Unlock()
	for _, res := range all {
		p.Release(res)
	}
}

// heldBody is a held watch's body: it gives nothing until released (then
// it ends) or the request ends.
type heldBody struct {
	upstream io.ReadCloser
	release  chan struct{}
	done     <-chan struct{}
}

func (b *heldBody) Read([]byte) (int, error) {
	select {
	case <-b.release:
		return 0, io.EOF
	case <-b.done:
		return 0, context.Canceled
	}
}

func (b *heldBody) Close() error { return b.upstream.Close() }
