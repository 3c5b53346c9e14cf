package longhorn

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
	k8stesting "k8s.io/client-go/testing"

	"github.com/rebootwatch/rebootwatch/model"
)

// A quiet Longhorn watch on a server that stopped answering turns stale
// with its age, and ok again once the server answers (issue 11 §1): the
// volume gate must not pass on a picture nobody confirmed.
func TestQuietUnansweringServerMakesLonghornStale(t *testing.T) {
	fc := newFake(volume("pvc-1", "healthy", 3, "w-1"))
	release := make(chan struct{})
	var once sync.Once
	thaw := func() { once.Do(func() { close(release) }) }
	t.Cleanup(thaw)
	var frozen atomic.Bool
	fc.PrependReactor("list", "volumes", func(k8stesting.Action) (bool, runtime.Object, error) {
		if frozen.Load() {
			<-release
		}
		return false, nil, nil
	})
	r, _ := startSource(t, Options{Client: fc, StaleAfter: 400 * time.Millisecond, ProbeInterval: 50 * time.Millisecond,
		RequestTimeout: time.Minute})
	r.Eventually(t, "longhorn ok", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceLonghorn)
		return h.Status == model.StatusOK
	})
	frozen.Store(true)
	r.Eventually(t, "longhorn stale with its age", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceLonghorn)
		return h.Status == model.StatusStale && strings.Contains(h.Message, "no word from the API server for")
	})
	frozen.Store(false)
	thaw()
	r.Eventually(t, "longhorn ok again", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceLonghorn)
		return h.Status == model.StatusOK
	})
}

// A volume watch that delivers nothing while the server answers every list
// (a proxy holding the watch stream) kept the source ok while volumes
// changed. The audit finds a volume the watch never gave and makes the
// source stale, naming it, until a later audit finds the server and the
// cache agreeing again (issue 22 §1).
func TestStalledWatchMakesLonghornStale(t *testing.T) {
	fc := newFake(volume("pvc-1", "healthy", 3, "w-1"))
	var (
		mu   sync.Mutex
		held []*watch.FakeWatcher
	)
	fc.PrependWatchReactor("volumes", func(k8stesting.Action) (bool, watch.Interface, error) {
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
	r, _ := startSource(t, Options{Client: fc, StaleAfter: time.Minute, ProbeInterval: 20 * time.Millisecond,
		AuditInterval: 20 * time.Millisecond, AuditGrace: 20 * time.Millisecond})
	r.Eventually(t, "longhorn ok", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceLonghorn)
		return h.Status == model.StatusOK
	})
	ri := fc.Resource(VolumeGVR).Namespace("longhorn-system")
	if _, err := ri.Create(context.Background(), volume("pvc-2", "degraded", 3, "w-2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "longhorn stale, naming pvc-2", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceLonghorn)
		return h.Status == model.StatusStale &&
			strings.HasPrefix(h.Message, "watch not delivering: the server has volume longhorn-system/pvc-2, which the watch never gave, for ")
	})
	if err := ri.Delete(context.Background(), "pvc-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "longhorn ok again", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceLonghorn)
		return h.Status == model.StatusOK
	})
}
