package longhorn

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
	"github.com/rebootwatch/rebootwatch/sources/sourcetest"
)

// createVol creates a Volume with its status set through the status
// subresource, as longhorn-manager does.
// volumeNamespace is the shared apiserver with Longhorn's CRD served, a
// longhorn-system namespace of the test's own and its volumes resource.
func volumeNamespace(t *testing.T) (*testcluster.Cluster, string, dynamic.ResourceInterface) {
	t.Helper()
	c := testcluster.Shared(t)
	c.EnsureLonghornCRD(t)
	ns := c.Namespace(t, "longhorn-system")
	return c, ns, c.Dynamic(t).Resource(VolumeGVR).Namespace(ns)
}

func createVol(t testing.TB, ri dynamic.ResourceInterface, name, robustness, node string) {
	t.Helper()
	ctx := context.Background()
	u := volume(name, robustness, 3, node)
	status := u.Object["status"]
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	u.SetNamespace("")
	out, err := ri.Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out.Object["status"] = status
	if _, err := ri.UpdateStatus(ctx, out, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func setRobustness(t testing.TB, ri dynamic.ResourceInterface, name, robustness string) {
	t.Helper()
	ctx := context.Background()
	u, err := ri.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(u.Object, robustness, "status", "robustness")
	if _, err := ri.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch ended")
		}
		return ev
	case <-time.After(sourcetest.IntegrationTimeout):
		t.Fatal("no watch event")
	}
	return watch.Event{}
}

// nextChange is next without the BOOKMARKs: a watch that allows them gets
// one whenever the apiserver sends its periodic bookmark, between any two
// changes.
func nextChange(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	for {
		if ev := next(t, w); ev.Type != watch.Bookmark {
			return ev
		}
	}
}

// TestWatchDecoderAgainstRealAPIServer reads the real apiserver's watch
// stream of volumes through restVolumes: a WatchList's initial ADDED events
// and the BOOKMARK that ends them (annotated, with a resourceVersion), a
// robustness change (MODIFIED), a delete (DELETED), and a watch from a
// resourceVersion the server no longer has (an ERROR carrying a 410
// Status, which makes a reflector list again).
func TestWatchDecoderAgainstRealAPIServer(t *testing.T) {
	t.Parallel()
	c, ns, ri := volumeNamespace(t)
	createVol(t, ri, "pvc-a", "degraded", "w-1")
	createVol(t, ri, "pvc-b", "healthy", "w-2")
	rc, err := NewREST(c.Admin)
	if err != nil {
		t.Fatal(err)
	}
	rv := restVolumes{c: rc, ns: ns}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	w, err := rv.Watch(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	seen := map[string]model.Volume{}
	for len(seen) < 2 {
		ev := next(t, w)
		v, ok := ev.Object.(*Volume)
		if ev.Type != watch.Added || !ok || v.ResourceVersion == "" || v.UID == "" {
			t.Fatalf("initial event %s %#v", ev.Type, ev.Object)
		}
		seen[v.Name] = v.Model()
	}
	if a := seen["pvc-a"]; a.Robustness != model.RobustnessDegraded || a.Replicas != 3 || a.Node != "w-1" || a.State != "attached" || a.Namespace != ns {
		t.Errorf("pvc-a %+v", a)
	}
	ev := next(t, w)
	bm, ok := ev.Object.(*Volume)
	if ev.Type != watch.Bookmark || !ok || bm.ResourceVersion == "" || bm.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
		t.Fatalf("want the initial-events-end BOOKMARK, got %s %#v", ev.Type, ev.Object)
	}

	setRobustness(t, ri, "pvc-a", "healthy")
	ev = nextChange(t, w)
	if v, ok := ev.Object.(*Volume); ev.Type != watch.Modified || !ok || v.Name != "pvc-a" || v.Robustness != model.RobustnessHealthy {
		t.Fatalf("want pvc-a MODIFIED healthy, got %s %#v", ev.Type, ev.Object)
	}
	if err := ri.Delete(ctx, "pvc-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ev = nextChange(t, w)
	if v, ok := ev.Object.(*Volume); ev.Type != watch.Deleted || !ok || v.Name != "pvc-b" {
		t.Fatalf("want pvc-b DELETED, got %s %#v", ev.Type, ev.Object)
	}

	// A resourceVersion older than the server's window: 410 Gone, as an
	// ERROR event on the stream.
	old, err := rv.Watch(ctx, metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Stop()
	ev = next(t, old)
	st, ok := ev.Object.(*metav1.Status)
	if ev.Type != watch.Error || !ok {
		t.Fatalf("want an ERROR with a Status, got %s %#v", ev.Type, ev.Object)
	}
	if err := apierrors.FromObject(st); !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Fatalf("want 410 expired, got %v (%+v)", err, st)
	}

	// The list the informer falls back to, and the probe: a *VolumeList
	// with a resourceVersion to watch from.
	obj, err := rv.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l := obj.(*VolumeList); len(l.Items) != 1 || l.Items[0].Name != "pvc-a" || l.ResourceVersion == "" {
		t.Fatalf("list %+v", l)
	}
}

// goneProxy sits between an informer and the real apiserver. Armed, it
// cuts the open volume watches and answers the informer's resuming watch
// (a resourceVersion, no initial events) as if that resourceVersion had
// left the server's window: it asks the apiserver for resourceVersion 1,
// which the apiserver answers with its own 410 ERROR event. Only a fresh
// list of the volumes (a list without limit, or a WatchList) disarms it.
type goneProxy struct {
	proxy *httputil.ReverseProxy
	armed atomic.Bool

	watches testcluster.Watches

	mu      sync.Mutex
	gone    int    // resuming watches answered with 410
	relists int    // fresh lists after a 410
	first   string // the informer's first request: "list" or "watch"
}

func newGoneProxy(t *testing.T, c *testcluster.Cluster) (*goneProxy, *rest.Config) {
	t.Helper()
	p := &goneProxy{proxy: c.ReverseProxy(t, c.Admin)}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, &rest.Config{Host: srv.URL, QPS: -1}
}

func (p *goneProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.URL.Path, "/volumes") {
		p.proxy.ServeHTTP(w, r)
		return
	}
	q := r.URL.Query()
	isWatch := q.Get("watch") == "true" || q.Get("watch") == "1"
	fresh := (isWatch && q.Get("sendInitialEvents") == "true") || (!isWatch && q.Get("limit") == "")
	p.mu.Lock()
	if p.first == "" && q.Get("limit") != "1" {
		p.first = map[bool]string{true: "watch", false: "list"}[isWatch]
	}
	switch {
	case fresh && p.armed.Load():
		p.armed.Store(false)
		if p.gone > 0 {
			p.relists++
		}
	case isWatch && p.armed.Load() && q.Get("resourceVersion") != "":
		q.Set("resourceVersion", "1")
		r.URL.RawQuery = q.Encode()
		p.gone++
	}
	p.mu.Unlock()
	if !isWatch {
		p.proxy.ServeHTTP(w, r)
		return
	}
	p.watches.Forward(p.proxy, w, r)
}

// armAndCut arms the proxy and cuts every open watch.
func (p *goneProxy) armAndCut() {
	p.armed.Store(true)
	p.watches.CutAll()
}

func (p *goneProxy) counts() (gone, relists int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gone, p.relists
}

// TestInformerRelistsOnGoneAgainstRealAPIServer: the typed informer lists
// first (not a WatchList), keeps the model right through a real apiserver's watch events — a robustness
// change, a delete — and, when its watch breaks and the apiserver answers
// the resumed watch with 410 Gone (an ERROR event), it lists again and
// picks up what changed meanwhile; the source stays ok. (The 410 ERROR
// event itself, as decoded, is checked by TestWatchDecoderAgainstRealAPIServer:
// the reflector lists again after most broken watches, so this test shows
// the way through, that one what the decoder makes of it.)
func TestInformerRelistsOnGoneAgainstRealAPIServer(t *testing.T) {
	t.Parallel()
	c, ns, ri := volumeNamespace(t)
	createVol(t, ri, "pvc-a", "degraded", "w-1")
	createVol(t, ri, "pvc-b", "healthy", "w-2")
	createVol(t, ri, "pvc-c", "healthy", "w-3")

	p, cfg := newGoneProxy(t, c)
	rc, err := NewREST(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := sourcetest.NewRecorder("it").WithTimeout(sourcetest.IntegrationTimeout)
	sourcetest.Start(t, r, func(ctx context.Context, sink sources.Sink) (*Source, error) {
		return Start(ctx, Options{Client: dyn, REST: rc, Namespace: ns}, sink)
	})
	r.Eventually(t, "three volumes, pvc-a degraded", func(c *model.Cluster) bool {
		s := c.VolumeSummary()
		return s != nil && s.Total == 3 && s.Degraded == 1
	})
	// The first picture is a list (the apiserver serves a custom
	// resource's list faster than a WatchList's events), then a watch.
	p.mu.Lock()
	first := p.first
	p.mu.Unlock()
	if first != "list" {
		t.Errorf("the informer's first request was a %s, want a list", first)
	}

	setRobustness(t, ri, "pvc-a", "healthy")
	r.Eventually(t, "pvc-a healthy (MODIFIED)", func(c *model.Cluster) bool { return c.VolumeSummary().Healthy == 3 })
	if err := ri.Delete(context.Background(), "pvc-c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "pvc-c gone (DELETED)", func(c *model.Cluster) bool { return c.VolumeSummary().Total == 2 })

	// The watch breaks; its resumption is answered 410 Gone until the
	// informer lists again. Meanwhile pvc-b degrades and pvc-a goes.
	p.armAndCut()
	setRobustness(t, ri, "pvc-b", "faulted")
	if err := ri.Delete(context.Background(), "pvc-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "relisted: only pvc-b, faulted", func(c *model.Cluster) bool {
		s := c.VolumeSummary()
		return s.Total == 1 && s.Faulted == 1
	})
	gone, relists := p.counts()
	if gone == 0 || relists == 0 {
		t.Errorf("410s answered %d, fresh lists after them %d: the informer did not go through a 410 and a relist", gone, relists)
	}
	if h := r.Source(model.SourceLonghorn); h.Status != model.StatusOK {
		t.Errorf("longhorn %+v after the relist", h)
	}
	// And it watches again: a change after the relist arrives.
	setRobustness(t, ri, "pvc-b", "healthy")
	r.Eventually(t, "pvc-b healthy after the relist", func(c *model.Cluster) bool { return c.VolumeSummary().Healthy == 1 })
}
