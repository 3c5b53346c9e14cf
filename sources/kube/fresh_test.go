package kube

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rebootwatch/rebootwatch/model"
)

// A watch that goes quiet because the API server stopped answering looks
// like a cluster where nothing changes. The source probes while quiet; when
// the probe does not answer either, every part turns stale with its age,
// and turns back to its status once the server answers again: the nodes,
// kured and fleetlock pills never stay ok behind a silent server (issue 11
// §1).
func TestQuietUnansweringServerMakesSourcesStale(t *testing.T) {
	cs := fake.NewClientset(node("w-1", true, nil))
	// Once frozen, every list (the probes) hangs until released. (Reactors
	// must be in place before the informers run.)
	release := make(chan struct{})
	var once sync.Once
	thaw := func() { once.Do(func() { close(release) }) }
	t.Cleanup(thaw)
	var frozen atomic.Bool
	cs.PrependReactor("list", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		if frozen.Load() {
			<-release
		}
		return false, nil, nil
	})
	r, _ := start(t, cs, Options{StaleAfter: 400 * time.Millisecond, ProbeInterval: 50 * time.Millisecond,
		RequestTimeout: time.Minute})
	r.Eventually(t, "nodes ok", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceNodes)
		return h.Status == model.StatusOK
	})
	frozen.Store(true)
	for _, src := range []model.SourceName{model.SourceNodes, model.SourceKured, model.SourceFleetlock} {
		r.Eventually(t, string(src)+" stale with its age", func(c *model.Cluster) bool {
			h, _ := c.Source(src)
			// LastSync is when it last heard: the pills' age counts from it.
			return h.Status == model.StatusStale && strings.Contains(h.Message, "no word from the API server for") &&
				strings.Contains(h.Message, "stale after 400ms") && !h.LastSync.IsZero() && time.Since(h.LastSync) > 400*time.Millisecond
		})
	}
	var fresh bool
	r.Read(func(c *model.Cluster) { fresh = c.NodesFresh() })
	if fresh {
		t.Fatal("a stale node list must not count as fresh")
	}
	frozen.Store(false)
	thaw()
	r.Eventually(t, "nodes ok again", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceNodes)
		return h.Status == model.StatusOK
	})
	r.Eventually(t, "kured and fleetlock back to not-installed", func(c *model.Cluster) bool {
		k, _ := c.Source(model.SourceKured)
		f, _ := c.Source(model.SourceFleetlock)
		return k.Status == model.StatusNotInstalled && f.Status == model.StatusNotInstalled
	})
}

// A quiet watch on a server that answers its probes stays ok: quiet is not
// stale.
func TestQuietAnsweringServerStaysFresh(t *testing.T) {
	cs := fake.NewClientset(node("w-1", true, nil))
	var probes atomic.Int64
	cs.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		probes.Add(1)
		return false, nil, nil
	})
	r, _ := start(t, cs, Options{StaleAfter: 2 * time.Second, ProbeInterval: 20 * time.Millisecond})
	// Wait (by count, not by time) for enough probes to span two bounds.
	r.Eventually(t, "200 probes", func(*model.Cluster) bool { return probes.Load() >= 200 })
	if h := r.Source(model.SourceNodes); h.Status != model.StatusOK {
		t.Fatalf("nodes %s (%s), want ok: the server answered every probe", h.Status, h.Message)
	}
}

// A watch that delivers nothing while the server answers every list (a
// proxy holding the watch stream) kept the source ok. The audit finds the
// server holding a node the watch never gave and makes nodes stale, naming
// it; a later audit that finds the server and the cache agreeing again
// ends it (issue 22 §1).
func TestStalledWatchMakesSourceStale(t *testing.T) {
	cs := fake.NewClientset(node("w-1", true, nil))
	var (
		mu   sync.Mutex
		held []*watch.FakeWatcher
	)
	cs.PrependWatchReactor("nodes", func(k8stesting.Action) (bool, watch.Interface, error) {
		w := watch.NewFake()
		mu.Lock()
		held = append(held, w)
		mu.Unlock()
		return true, w, nil // accepted, and then nothing
	})
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, w := range held {
			w.Stop()
		}
	})
	r, _ := start(t, cs, Options{StaleAfter: time.Minute, ProbeInterval: 20 * time.Millisecond,
		AuditInterval: 20 * time.Millisecond, AuditGrace: 20 * time.Millisecond})
	r.Eventually(t, "nodes ok", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceNodes)
		return h.Status == model.StatusOK
	})
	if _, err := cs.CoreV1().Nodes().Create(context.Background(), node("w-2", true, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "nodes stale, naming w-2", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceNodes)
		return h.Status == model.StatusStale &&
			strings.HasPrefix(h.Message, "watch not delivering: the server has node w-2, which the watch never gave, for ")
	})
	if err := cs.CoreV1().Nodes().Delete(context.Background(), "w-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "nodes ok again", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceNodes)
		return h.Status == model.StatusOK
	})
}
