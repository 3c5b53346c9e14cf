package live

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/internal/testenv/scalefixture"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// wholeReads counts, per collection path, the requests that read a whole
// collection: a LIST without limit=1 (the freshness probe) and the initial
// stream of a WatchList (sendInitialEvents=true). A plain watch from a
// resourceVersion reads nothing whole. A Table without objects
// (includeObject=None: the Longhorn seed's read of longhorn-system) reads
// no object whole and is counted apart, in tables; the seed's list of the
// volumes outside longhorn-system reads only those, and is counted under
// its path and field selector.
type wholeReads struct {
	mu     sync.Mutex
	n      map[string]int
	tables map[string]int
}

func (w *wholeReads) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		q := r.URL.Query()
		whole := r.Method == http.MethodGet && (q.Get("watch") == "true" && q.Get("sendInitialEvents") == "true" ||
			q.Get("watch") != "true" && q.Get("limit") != "1")
		key := r.URL.Path
		if fs := q.Get("fieldSelector"); fs == "metadata.namespace!="+scalefixture.LonghornNamespace {
			key += "?fieldSelector=" + fs
		}
		table := strings.Contains(r.Header.Get("Accept"), "as=Table") && q.Get("includeObject") == "None"
		if whole {
			w.mu.Lock()
			if table {
				w.tables[key]++
			} else {
				w.n[key]++
			}
			w.mu.Unlock()
		}
		return rt.RoundTrip(r)
	})
}

func (w *wholeReads) count(path string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[path]
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Issue 35 §1: a running session (the dashboard, watch) reads the nodes
// whole exactly once before its first picture — the informer's own
// WatchList stream — and the Longhorn volumes whole exactly once, by the
// informer's list, which starts once the seed below is in (before or
// after the first picture); no second list follows either. Beside the Longhorn informer's list, the seed
// reads the volumes as the snapshot does: longhorn-system's as one Table
// without objects, the other namespaces' (none here) as one list, and the
// degraded or faulted ones (two of the nine) whole, one GET each. Counted
// on the client's transport, every request the session makes.
func TestSessionReadsNodesAndVolumesOnceToFirstPicture(t *testing.T) {
	tc := testcluster.SharedAlone(t)
	tc.EnsureLonghornCRD(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Cleanup(func() { // the next test on the shared cluster reads volumes too
		_ = tc.Dynamic(t).Resource(testcluster.LonghornVolumeGVR).Namespace(scalefixture.LonghornNamespace).
			DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
	})
	fx := &scalefixture.Fixture{Client: tc.Client(t), Dynamic: tc.Dynamic(t), Config: tc.Admin}
	if err := fx.Grow(ctx, 7, 9); err != nil {
		t.Fatal(err)
	}
	reads := &wholeReads{n: map[string]int{}, tables: map[string]int{}}
	cfg := rest.CopyConfig(tc.Admin)
	cfg.WrapTransport = reads.wrap
	s, err := Open(ctx, Options{Config: cfg, Context: "itest", RequestTimeout: 10 * time.Second,
		KuredDaemonSet: scalefixture.KuredNamespace + "/" + scalefixture.KuredName})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cl := s.NewCluster()
	for !cl.Synced() {
		select {
		case ev := <-s.Events:
			cl.Apply(ev, s.Clock())
		case <-ctx.Done():
			t.Fatalf("no first picture: %v", ctx.Err())
		}
	}
	if cl.NodeCount() != 7 || cl.VolumeCount() != 9 {
		t.Fatalf("first picture: %d nodes, %d volumes, want 7 and 9", cl.NodeCount(), cl.VolumeCount())
	}
	const volumesIn = "/apis/longhorn.io/v1beta2/namespaces/" + scalefixture.LonghornNamespace + "/volumes"
	if n := reads.count("/api/v1/nodes"); n != 1 {
		t.Errorf("/api/v1/nodes read whole %d times to the first picture, want 1", n)
	}
	// The volumes' picture is the seed's Table: the informer's list starts
	// once the seed is in and may or may not have landed by the picture.
	if n := reads.count("/apis/longhorn.io/v1beta2/volumes"); n > 1 {
		t.Errorf("/apis/longhorn.io/v1beta2/volumes read whole %d times to the first picture, want at most 1 (the informer's list)", n)
	}
	reads.mu.Lock()
	tables := reads.tables[volumesIn] // the seed's
	reads.mu.Unlock()
	if tables != 1 {
		t.Errorf("%s read as a Table %d times to the first picture, want 1 (the seed)", volumesIn, tables)
	}
	var other []string
	reads.mu.Lock()
	t.Logf("whole reads to the first picture: %v; Tables without objects: %v", reads.n, reads.tables)
	for p, n := range reads.n {
		if n > 1 {
			other = append(other, p)
		}
	}
	reads.mu.Unlock()
	if len(other) > 0 {
		t.Errorf("collections read whole more than once to the first picture: %v", other)
	}
	// The informer's list follows the seed: once, and only once.
	for reads.count("/apis/longhorn.io/v1beta2/volumes") == 0 {
		select {
		case ev := <-s.Events:
			cl.Apply(ev, s.Clock())
		case <-time.After(50 * time.Millisecond): // look again: the list may bring no change
		case <-ctx.Done():
			t.Fatalf("the Longhorn informer never listed the volumes: %v", ctx.Err())
		}
	}
	if n := reads.count("/apis/longhorn.io/v1beta2/volumes"); n != 1 {
		t.Errorf("/apis/longhorn.io/v1beta2/volumes read whole %d times after the seed, want 1", n)
	}
}
