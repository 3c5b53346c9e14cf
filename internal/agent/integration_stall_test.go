package agent

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/model"
)

// TestIntegrationStalledWatch (issue 22 §1): the agent talks to the API
// through a proxy that passes every list and probe but holds the node
// watch. A node changes; the node source's audit finds the watch behind
// the server, so the heartbeat shows nodes stale, naming the node, and
// /readyz turns 503 — with the default audit interval, as deployed. Once
// the watch delivers again, nodes is ok and /readyz 200.
func TestIntegrationStalledWatch(t *testing.T) {
	c, bin, token := setupOn(t, parallelAgentCluster(t)) // waits on the default audit's clock
	admin := c.Client(t)
	createNode(t, admin, "n1", testMachineID, time.Now().Add(-3*time.Hour))
	createKured(t, admin, "")
	p := c.StallingProxy(t, tokenConfig(c, token))
	a := startAgentProc(t, bin, "agent-stall", writeKubeconfig(t, p.Config.Host, token),
		"--interval=1s", "--leader-elect=false")
	a.waitHeartbeat(t, "an ok iteration through the proxy", func(hb heartbeat) bool { return hb.Result == resultOK })
	eventually(t, "/readyz is 200", func() (bool, string) { return a.probe("/readyz") == 200, a.tail(3) })

	p.Hold("nodes")
	eventually(t, "the node watch held", func() (bool, string) { return p.Holding("nodes") > 0, "" })
	n, err := admin.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Unschedulable = true
	if _, err := admin.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	stale := func(hb heartbeat) bool {
		for _, s := range hb.Sources {
			if s.Name == model.SourceNodes && s.Status == model.StatusStale &&
				strings.HasPrefix(s.Message, "watch not delivering: the server has newer data for node n1 than the watch gave") {
				return true
			}
		}
		return false
	}
	a.waitHeartbeat(t, "a heartbeat with nodes stale, naming n1", stale)
	t.Logf("MEASURED node changed behind a held watch → heartbeat nodes stale after %s (default audit: every %s, grace %s)",
		time.Since(changed).Round(100*time.Millisecond), "10s", "2s")
	eventually(t, "/readyz turns 503", func() (bool, string) { return a.probe("/readyz") == 503, a.tail(3) })

	p.Release("nodes")
	mark := a.mark(t)
	a.waitHeartbeatSince(t, mark, "nodes ok again", func(hb heartbeat) bool {
		for _, s := range hb.Sources {
			if s.Name == model.SourceNodes {
				return s.Status == model.StatusOK
			}
		}
		return false
	})
	eventually(t, "/readyz is 200 again", func() (bool, string) { return a.probe("/readyz") == 200, a.tail(3) })
	a.stop(t, syscall.SIGTERM)
	mustNotContainToken(t, token, a)
}
