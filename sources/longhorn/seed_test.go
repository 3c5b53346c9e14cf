package longhorn

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources/sourcetest"
)

// seedAPI is a Longhorn API whose seed and informer see different volumes:
// the seed's reads (the Table, the other namespaces' list, single volumes)
// are served from seed, the informer's list and probes from informer.
// Watches stay open, silent, until the client leaves. holdSeed and
// holdList, when not nil, hold the seed's Table and the informer's list
// (not its limit=1 probes) until they are closed.
type seedAPI struct {
	seed, informer     *fakeLonghornAPI
	holdSeed, holdList chan struct{}
}

func (a *seedAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	hold := func(c chan struct{}) bool {
		if c == nil {
			return true
		}
		select {
		case <-c:
			return true
		case <-r.Context().Done():
			return false
		}
	}
	switch {
	case q.Get("watch") == "true":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	case strings.Contains(r.Header.Get("Accept"), "as=Table"):
		if hold(a.holdSeed) {
			a.seed.ServeHTTP(w, r)
		}
	case q.Has("fieldSelector") || strings.Contains(r.URL.Path, "/volumes/"):
		a.seed.ServeHTTP(w, r)
	case q.Get("limit") == "1" || hold(a.holdList):
		a.informer.ServeHTTP(w, r)
	}
}

// logLines records the messages of a source's debug lines.
type logLines struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.msgs = append(l.msgs, r.Message)
	l.mu.Unlock()
	return nil
}
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logLines) WithGroup(string) slog.Handler      { return l }

// wait waits until a line starting with prefix was logged.
func (l *logLines) wait(t *testing.T, prefix string) {
	t.Helper()
	deadline := time.Now().Add(sourcetest.DefaultTimeout)
	for {
		l.mu.Lock()
		found := slices.ContainsFunc(l.msgs, func(m string) bool { return strings.HasPrefix(m, prefix) })
		msgs := slices.Clone(l.msgs)
		l.mu.Unlock()
		if found {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("never logged %q; logged %q", prefix, msgs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startSeeded starts a seeded source on api without waiting for its first
// sync (which the test may be holding); the test's cleanup stops it and
// waits for all of it to end. It returns the recorder, the source, every
// Longhorn status reported in order, and the source's debug lines.
func startSeeded(t *testing.T, api *seedAPI, o Options) (*sourcetest.Recorder, *Source, func() []model.SourceStatus, *logLines) {
	t.Helper()
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	rc, err := NewREST(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	logs := &logLines{}
	o.Client, o.REST, o.Seed, o.Logger = newFake(), rc, true, slog.New(logs)
	if o.AuditInterval == 0 {
		o.AuditInterval = time.Hour
	}
	r := sourcetest.NewRecorder("test")
	var mu sync.Mutex
	var statuses []model.SourceStatus
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, o, func(ev model.Event) {
		if sc, ok := ev.(model.SourceChanged); ok && sc.Health.Name == model.SourceLonghorn {
			mu.Lock()
			statuses = append(statuses, sc.Health.Status)
			mu.Unlock()
		}
		r.Sink(ev)
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); s.Wait() })
	return r, s, func() []model.SourceStatus {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(statuses)
	}, logs
}

func volumesOf(c *model.Cluster) map[string]model.Robustness {
	out := map[string]model.Robustness{}
	for _, v := range c.Volumes() {
		out[v.Name] = v.Robustness
	}
	return out
}

func longhornStatus(c *model.Cluster) model.SourceStatus {
	h, _ := c.Source(model.SourceLonghorn)
	return h.Status
}

// TestSeedPaintsFirstAndGoesAtTheSync (issue 35 §1): while the informer's
// list is held, the seed's volumes are in the model and the source is ok;
// once the informer synced, what it says wins (pvc-a degraded), and pvc-b,
// which only the seed read (deleted before the informer's list), is gone.
func TestSeedPaintsFirstAndGoesAtTheSync(t *testing.T) {
	api := &seedAPI{
		seed:     &fakeLonghornAPI{vols: []*unstructured.Unstructured{volume("pvc-a", "healthy", 3, "w-1"), volume("pvc-b", "healthy", 3, "w-2")}},
		informer: &fakeLonghornAPI{vols: []*unstructured.Unstructured{volume("pvc-a", "degraded", 3, "w-1")}},
		holdList: make(chan struct{}),
	}
	r, _, statuses, _ := startSeeded(t, api, Options{})
	r.Eventually(t, "the seed's two volumes, ok, while the informer's list is held", func(c *model.Cluster) bool {
		return reflect.DeepEqual(volumesOf(c), map[string]model.Robustness{"pvc-a": "healthy", "pvc-b": "healthy"}) &&
			longhornStatus(c) == model.StatusOK
	})
	close(api.holdList)
	r.Eventually(t, "the informer's picture: pvc-a degraded, pvc-b gone", func(c *model.Cluster) bool {
		return reflect.DeepEqual(volumesOf(c), map[string]model.Robustness{"pvc-a": "degraded"}) &&
			longhornStatus(c) == model.StatusOK
	})
	if got := statuses(); !reflect.DeepEqual(got, []model.SourceStatus{model.StatusOK}) {
		t.Errorf("statuses %v, want only ok", got)
	}
}

// TestSeedAfterTheInformerIsDropped: a seed whose read comes in after the
// informer synced sends nothing: it would overwrite newer data (pvc-a) and
// bring back a volume the informer does not have (pvc-b).
func TestSeedAfterTheInformerIsDropped(t *testing.T) {
	api := &seedAPI{
		seed:     &fakeLonghornAPI{vols: []*unstructured.Unstructured{volume("pvc-a", "healthy", 3, "w-1"), volume("pvc-b", "healthy", 3, "w-2")}},
		informer: &fakeLonghornAPI{vols: []*unstructured.Unstructured{volume("pvc-a", "degraded", 3, "w-1")}},
		holdSeed: make(chan struct{}),
	}
	r, s, _, logs := startSeeded(t, api, Options{})
	r.Eventually(t, "the informer's picture", func(c *model.Cluster) bool {
		return reflect.DeepEqual(volumesOf(c), map[string]model.Robustness{"pvc-a": "degraded"}) && longhornStatus(c) == model.StatusOK
	})
	close(api.holdSeed)
	logs.wait(t, "longhorn seed ") // sent or dropped: the seed is done
	r.Read(func(c *model.Cluster) {
		if got := volumesOf(c); !reflect.DeepEqual(got, map[string]model.Robustness{"pvc-a": "degraded"}) {
			t.Errorf("volumes after the late seed: %v", got)
		}
	})
	logs.wait(t, "longhorn seed dropped")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.known[LonghornNamespace+"/pvc-b"] {
		t.Error("the dropped seed's pvc-b is remembered as sent")
	}
}

// TestSeedRules: sendSeed and closeSeed, decided under the source's lock
// against the running informer: a seed is dropped once that informer
// delivered anything, once it synced, or when it is not the running one;
// at the sync, only the volumes the seed sent that the store lacks, and
// that were not deleted since, are deleted.
func TestSeedRules(t *testing.T) {
	newSource := func(sink func(model.Event)) *Source {
		return &Source{log: slog.New(slog.DiscardHandler), sink: sink, known: map[string]bool{}, run: 2}
	}
	vols := []model.Volume{{Namespace: "ns", Name: "a"}, {Namespace: "ns", Name: "b"}, {Namespace: "ns", Name: "c"}}
	for _, tc := range []struct {
		name string
		gen  int
		set  func(s *Source)
		ctx  bool // cancelled
	}{
		{"the informer delivered", 2, func(s *Source) { s.informed = true }, false},
		{"the informer synced", 2, func(s *Source) { s.seedShut = true }, false},
		{"an earlier informer's seed", 1, func(*Source) {}, false},
		{"the run ended", 2, func(*Source) {}, true},
	} {
		var got []model.Event
		s := newSource(func(ev model.Event) { got = append(got, ev) })
		tc.set(s)
		ctx, cancel := context.WithCancel(context.Background())
		if tc.ctx {
			cancel()
		}
		if s.sendSeed(ctx, tc.gen, vols) || len(got) > 0 || len(s.known) > 0 {
			t.Errorf("%s: seed sent: %v", tc.name, got)
		}
		cancel()
	}

	var got []model.Event
	s := newSource(func(ev model.Event) { got = append(got, ev) })
	if !s.sendSeed(context.Background(), 2, vols) || len(got) != 1 || len(got[0].(model.Batch)) != 3 {
		t.Fatalf("seed not sent: %v", got)
	}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	held := newVolume("", "1", vols[0])
	_ = store.Add(&held)
	delete(s.known, "ns/c") // the informer deleted c already
	got = nil
	s.closeSeed(1, store) // an earlier informer's sync: nothing
	if len(got) > 0 || s.seedShut {
		t.Fatalf("an earlier informer's sync closed the seed: %v", got)
	}
	s.closeSeed(2, store)
	want := []model.Event{model.Batch{model.VolumeDeleted{Namespace: "ns", Name: "b"}}}
	if !reflect.DeepEqual(got, want) || !s.seedShut || s.known["ns/b"] || !s.known["ns/a"] {
		t.Errorf("at the sync: %v, want %v; known %v", got, want, s.known)
	}
	if s.sendSeed(context.Background(), 2, vols) {
		t.Error("a seed sent after the sync")
	}
}

// TestSeedFailureSaysNothing: a seed that fails (500) sends nothing and
// reports nothing; the informer reports as without a seed. A seed that
// finds no CRD (404) while the informer lists does not flap the status.
func TestSeedFailureSaysNothing(t *testing.T) {
	api := &seedAPI{
		seed:     &fakeLonghornAPI{status: 500},
		informer: &fakeLonghornAPI{vols: []*unstructured.Unstructured{volume("pvc-a", "degraded", 3, "w-1")}},
		holdList: make(chan struct{}),
	}
	r, s, statuses, logs := startSeeded(t, api, Options{})
	logs.wait(t, "longhorn seed not read")
	if h := s.Health(); h.Status != "" {
		t.Errorf("health after a failed seed, the informer's list held: %+v", h)
	}
	r.Read(func(c *model.Cluster) {
		if c.VolumeCount() != 0 {
			t.Errorf("%d volumes after a failed seed", c.VolumeCount())
		}
	})
	close(api.holdList)
	r.Eventually(t, "the informer's picture", func(c *model.Cluster) bool {
		return c.VolumeCount() == 1 && longhornStatus(c) == model.StatusOK
	})
	if got := statuses(); !reflect.DeepEqual(got, []model.SourceStatus{model.StatusOK}) {
		t.Errorf("statuses %v, want only ok", got)
	}

	api = &seedAPI{
		seed:     &fakeLonghornAPI{status: 404},
		informer: &fakeLonghornAPI{vols: []*unstructured.Unstructured{volume("pvc-a", "degraded", 3, "w-1")}},
	}
	r, _, statuses, logs = startSeeded(t, api, Options{})
	logs.wait(t, "longhorn seed not read")
	r.Eventually(t, "the informer's picture", func(c *model.Cluster) bool {
		return c.VolumeCount() == 1 && longhornStatus(c) == model.StatusOK
	})
	if got := statuses(); !reflect.DeepEqual(got, []model.SourceStatus{model.StatusOK}) {
		t.Errorf("statuses %v, want only ok", got)
	}
}

// TestSeedThenCRDGone: the seed read volumes, then the informer finds the
// CRD gone (404): the source says not-installed, and the seed's volumes go.
func TestSeedThenCRDGone(t *testing.T) {
	api := &seedAPI{
		seed:     &fakeLonghornAPI{vols: []*unstructured.Unstructured{volume("pvc-a", "healthy", 3, "w-1")}},
		informer: &fakeLonghornAPI{status: 404},
		holdList: make(chan struct{}),
	}
	r, _, statuses, _ := startSeeded(t, api, Options{})
	r.Eventually(t, "the seed's volume", func(c *model.Cluster) bool {
		return c.VolumeCount() == 1 && longhornStatus(c) == model.StatusOK
	})
	close(api.holdList)
	r.Eventually(t, "not installed, no volume", func(c *model.Cluster) bool {
		return c.VolumeCount() == 0 && longhornStatus(c) == model.StatusNotInstalled && !c.LonghornPresent()
	})
	if got := statuses(); !reflect.DeepEqual(got, []model.SourceStatus{model.StatusOK, model.StatusNotInstalled}) {
		t.Errorf("statuses %v", got)
	}
}

// TestSeedIsNotASync: a seed's ok is no sync of the informer: an informer
// that does not list within the request timeout turns the source to an
// error though the seed's volumes are shown (here the list's own timeout
// says so, "request timed out"; the "no initial sync" timer, which a
// seed's ok does not silence either, says so when a list came in but the
// informer still did not sync).
func TestSeedIsNotASync(t *testing.T) {
	api := &seedAPI{
		seed:     &fakeLonghornAPI{vols: []*unstructured.Unstructured{volume("pvc-a", "healthy", 3, "w-1")}},
		informer: &fakeLonghornAPI{},
		holdList: make(chan struct{}), // never released
	}
	r, _, _, _ := startSeeded(t, api, Options{RequestTimeout: time.Second})
	r.Eventually(t, "the seed's volume, ok", func(c *model.Cluster) bool {
		return c.VolumeCount() == 1 && longhornStatus(c) == model.StatusOK
	})
	r.Eventually(t, "an error: the informer never synced", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceLonghorn)
		_, unread := c.LonghornUnread()
		return h.Status == model.StatusError && unread
	})
}

// TestSeedManyVolumes: a seed of volumes in two namespaces (the Table of
// longhorn-system and the other namespaces' list) is one batch of all.
func TestSeedManyVolumes(t *testing.T) {
	api := &seedAPI{seed: &fakeLonghornAPI{}, informer: &fakeLonghornAPI{}, holdList: make(chan struct{})}
	for i := range 20 {
		v := volume(fmt.Sprintf("pvc-%02d", i), "healthy", 3, "w-1")
		if i%5 == 0 {
			v.SetNamespace("storage")
		}
		api.seed.vols = append(api.seed.vols, v)
	}
	api.informer.vols = api.seed.vols
	r, _, _, _ := startSeeded(t, api, Options{})
	// The informer's list is held: these can only be the seed's.
	r.Eventually(t, "every seeded volume", func(c *model.Cluster) bool {
		return c.VolumeCount() == 20 && longhornStatus(c) == model.StatusOK
	})
}
