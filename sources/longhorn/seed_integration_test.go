package longhorn

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources/sourcetest"
)

// holdInformerList holds, on the client's side, every list of volumes that
// is the informer's (JSON, no Table, not a watch, not a limit=1 probe)
// until release is closed, and counts those the server answered.
type holdInformerList struct {
	release  chan struct{}
	answered atomic.Int32
}

func (h *holdInformerList) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		q := r.URL.Query()
		informers := r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/volumes") &&
			!strings.Contains(r.Header.Get("Accept"), "as=") && q.Get("watch") != "true" && q.Get("limit") != "1"
		if !informers {
			return rt.RoundTrip(r)
		}
		select {
		case <-h.release:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
		resp, err := rt.RoundTrip(r)
		if err == nil {
			h.answered.Add(1)
		}
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestSeedBeforeTheInformerAgainstRealAPIServer (issue 35 §1): against the
// real apiserver, with the informer's list held on the client's side, the
// seed (the snapshot's Table read) puts every volume in the model and makes
// the source ok before the informer has any list; a volume deleted after
// the seed's read and before the informer's list goes when the informer
// syncs; the informer then follows changes by watch.
func TestSeedBeforeTheInformerAgainstRealAPIServer(t *testing.T) {
	t.Parallel()
	c, ns, ri := volumeNamespace(t)
	createVol(t, ri, "pvc-a", "healthy", "w-1")
	createVol(t, ri, "pvc-b", "healthy", "w-2")
	createVol(t, ri, "pvc-c", "degraded", "w-3")

	hold := &holdInformerList{release: make(chan struct{})}
	cfg := rest.CopyConfig(c.Admin)
	cfg.WrapTransport = hold.wrap
	rc, err := NewREST(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := sourcetest.NewRecorder("itest").WithTimeout(sourcetest.IntegrationTimeout)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, Options{Client: c.Dynamic(t), REST: rc, Namespace: ns, Seed: true,
		AuditInterval: time.Hour, RequestTimeout: sourcetest.IntegrationTimeout}, r.Sink)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); s.Wait() })

	r.Eventually(t, "every volume, ok, from the seed", func(c *model.Cluster) bool {
		return c.VolumeCount() == 3 && longhornStatus(c) == model.StatusOK
	})
	if n := hold.answered.Load(); n != 0 {
		t.Fatalf("the informer's list was answered %d times while held", n)
	}
	r.Read(func(c *model.Cluster) {
		for _, v := range c.Volumes() {
			// pvc-c is degraded: the seed fetched it whole for its replicas.
			if v.Name == "pvc-c" && (v.Robustness != model.RobustnessDegraded || v.Replicas != 3 || v.Node != "w-3") {
				t.Errorf("seeded %+v", v)
			}
		}
	})

	// Deleted between the seed's read and the informer's list.
	if err := ri.Delete(context.Background(), "pvc-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	close(hold.release)
	r.Eventually(t, "pvc-b gone at the informer's sync", func(c *model.Cluster) bool {
		return c.VolumeCount() == 2 && volumesOf(c)["pvc-b"] == "" && longhornStatus(c) == model.StatusOK
	})
	if n := hold.answered.Load(); n != 1 {
		t.Errorf("the informer listed %d times, want 1", n)
	}
	setRobustness(t, ri, "pvc-a", "faulted")
	r.Eventually(t, "pvc-a faulted, by watch", func(c *model.Cluster) bool {
		return volumesOf(c)["pvc-a"] == model.RobustnessFaulted
	})
}
