package longhorn

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
	"github.com/rebootwatch/rebootwatch/sources/sourcetest"
)

// TestStalledWatchIsStaleAgainstRealAPIServer (issue 22 §1): behind a
// proxy that passes every list and probe but holds the volume watch, a
// volume turned degraded and the source stayed ok (the agent then reaped a
// ghost on the volume gate). The audit compares a quorum list with the
// cache: the source turns stale naming the volume, and ok once the watch
// delivers again. A healthy watch, quiet or busy, is never stale.
func TestStalledWatchIsStaleAgainstRealAPIServer(t *testing.T) {
	t.Parallel()
	c, ns, ri := volumeNamespace(t)
	createVol(t, ri, "pvc-a", "healthy", "w-1")
	createVol(t, ri, "pvc-b", "healthy", "w-2")

	p := c.StallingProxy(t, c.Admin)
	rc, err := NewREST(p.Config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(p.Config)
	if err != nil {
		t.Fatal(err)
	}
	r := sourcetest.NewRecorder("it").WithTimeout(sourcetest.IntegrationTimeout)
	var (
		mu    sync.Mutex
		stale []string // every stale report
	)
	sink := func(ev model.Event) {
		if sc, ok := ev.(model.SourceChanged); ok && sc.Health.Status == model.StatusStale {
			mu.Lock()
			stale = append(stale, sc.Health.Message)
			mu.Unlock()
		}
		r.Sink(ev)
	}
	staleSoFar := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), stale...)
	}
	sourcetest.Start(t, r, func(ctx context.Context, _ sources.Sink) (*Source, error) {
		return Start(ctx, Options{Client: dyn, REST: rc, Namespace: ns, RequestTimeout: 10 * time.Second,
			StaleAfter: 3 * time.Second, ProbeInterval: 200 * time.Millisecond,
			AuditInterval: 200 * time.Millisecond, AuditGrace: 300 * time.Millisecond}, sink)
	})
	r.Eventually(t, "longhorn ok", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceLonghorn)
		return h.Status == model.StatusOK
	})

	// A healthy watch, quiet and then busy, through 20 audits each.
	audits := func(what string, n int) {
		base := p.Lists("volumes")
		r.Eventually(t, what, func(*model.Cluster) bool { return p.Lists("volumes") >= base+n })
	}
	audits("20 audits of quiet volumes", 20)
	for i := range 20 {
		setRobustness(t, ri, "pvc-b", []string{"degraded", "healthy"}[i%2])
		audits("an audit after a change", 1)
	}
	if s := staleSoFar(); len(s) > 0 {
		t.Fatalf("a healthy watch was reported stale: %q", s)
	}

	p.Hold("volumes")
	r.Eventually(t, "the volume watch held", func(*model.Cluster) bool { return p.Holding("volumes") > 0 })
	setRobustness(t, ri, "pvc-a", "degraded")
	r.Eventually(t, "longhorn stale, naming pvc-a", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceLonghorn)
		return h.Status == model.StatusStale &&
			strings.HasPrefix(h.Message, "watch not delivering: the server has newer data for volume "+ns+"/pvc-a than the watch gave, for ")
	})
	if s := r.Source(model.SourceLonghorn); s.LastSync.IsZero() {
		t.Errorf("a stale source without the time it is behind from: %+v", s)
	}
	var degraded int
	r.Read(func(c *model.Cluster) { degraded = c.VolumeSummary().Degraded })
	if degraded != 0 {
		t.Fatal("the change reached the model through a held watch")
	}
	p.Release("volumes")
	r.Eventually(t, "pvc-a degraded and longhorn ok again", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceLonghorn)
		return h.Status == model.StatusOK && c.VolumeSummary().Degraded == 1
	})
}
