package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/live"
	"github.com/rebootwatch/rebootwatch/model"
)

// TestLiveSessionSeesStuckDrainAtStart is issue 27 item 5 for watch and the
// dashboard (a live session, informers and all): 20 sessions opened one
// after the other next to a drain stuck for 2 hours behind shop/web (0
// disruptions allowed, storefront-0 still on the node). The first picture
// of each (what the model derives at Synced) names the drain with the
// budget and the pod, and every source is ok.
func TestLiveSessionSeesStuckDrainAtStart(t *testing.T) {
	tc := cliCluster(t)
	cs := tc.Client(t)
	ctx := context.Background()
	blkNode(t, cs, "worker-1", true)
	blkNode(t, cs, "worker-2", false)
	blkKured(t, cs, "worker-1", time.Now().Add(-2*time.Hour), "--period=1m")
	shop := tc.Namespace(t, "shop")
	blkZeroPDB(t, cs, shop, "web", "web")
	blkPod(t, cs, shop, "storefront-0", "worker-1", map[string]string{"app": "web"}, "StatefulSet")
	blkPod(t, cs, shop, "storefront-1", "worker-2", map[string]string{"app": "web"}, "StatefulSet")

	const runs = 20
	var failed []string
	for run := 1; run <= runs; run++ {
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		s, err := live.Open(sctx, live.Options{Config: tc.Admin, Context: "testcluster", RequestTimeout: 5 * time.Second})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		c, err := s.Collect(sctx)
		s.Close()
		cancel()
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		var bad []string
		for _, h := range c.Sources() {
			if h.Status != model.StatusOK && h.Status != model.StatusNotInstalled && h.Status != model.StatusDisabled {
				bad = append(bad, string(h.Name)+" "+string(h.Status))
			}
		}
		fb := c.FleetBlocker()
		if fb == nil || fb.Kind != model.BlockerDrain || fb.Node != "worker-1" || !strings.Contains(fb.Reason, shop+"/web") ||
			!strings.Contains(fb.Reason, "storefront-0") || len(bad) > 0 {
			what := "none"
			if fb != nil {
				what = fmt.Sprintf("%s on %s: %s", fb.Kind, fb.Node, fb.Reason)
			}
			failed = append(failed, fmt.Sprintf("run %d: %s (sources not ok: %v)", run, what, bad))
		}
	}
	t.Logf("%d of %d sessions named the stuck drain in their first picture", runs-len(failed), runs)
	if len(failed) > 0 {
		t.Fatalf("%d of %d sessions did not:\n%s", len(failed), runs, strings.Join(failed, "\n"))
	}
}
