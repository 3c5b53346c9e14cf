package longhorn

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
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
