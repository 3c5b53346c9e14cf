package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testprom"
)

// haRow is the part of a fleet --snapshot -o json row the HA test reads.
type haRow struct {
	Cluster, Status string
	Phases          map[string]int
	DataAgeSeconds  *float64
	Unknown         []string
}

// TestIntegrationFleetHAReplicas (issue 33 §1): two real agent replicas
// with leader election on one apiserver, both scraped by the cluster's
// Prometheus (external label cluster=ha) remote-writing into a central one.
// The fleet row counts the cluster's two nodes once, from the leader's
// series (the real agents' rebootwatch_agent_leader joined on their scrape
// targets through remote write); SIGKILLing the follower changes nothing
// (the data age stays the leader's); SIGKILLing the leader too makes the
// row stale at once.
func TestIntegrationFleetHAReplicas(t *testing.T) {
	admin, bin, kc, _ := heldLeaseOn(t, privateAgentCluster(t))
	testprom.Binary(t)
	central := testprom.Start(t, testprom.Options{Receiver: true})
	cli := buildCLI(t)
	args := []string{"--interval=1s", "--request-timeout=5s", "--reap-ghost=false", "--leader-elect-lease-duration=6s",
		"--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s"}
	a := startAgentProc(t, bin, "ha-a", kc, args...)
	b := startAgentProc(t, bin, "ha-b", kc, args...)
	testprom.Start(t, testprom.Options{Targets: []string{a.metricsAddr, b.metricsAddr}, ExternalLabels: map[string]string{"cluster": "ha"},
		RemoteWrite: central.URL})
	row := func() (haRow, string) {
		t.Helper()
		cmd := exec.Command(cli, "fleet", "--snapshot", "-o", "json", "--prometheus-url", central.URL, "--stale-after", "30s")
		var out bytes.Buffer
		cmd.Stdout = &out
		_ = cmd.Run()
		var d struct{ Clusters []haRow }
		if err := json.Unmarshal(out.Bytes(), &d); err != nil {
			t.Fatalf("fleet --snapshot: %v\n%s", err, out.String())
		}
		for _, r := range d.Clusters {
			if r.Cluster == "ha" {
				return r, out.String()
			}
		}
		return haRow{}, out.String()
	}
	nodes := func(r haRow) int {
		n := 0
		for _, v := range r.Phases {
			n += v
		}
		return n
	}
	var r haRow
	eventually(t, "row ha in progress with its 2 nodes, both replicas scraped", func() (bool, string) {
		var raw string
		r, raw = row()
		return r.Status == "in-progress" && nodes(r) == 2 && len(a.heartbeats(t)) > 3 && len(b.heartbeats(t)) > 3, raw
	})
	leader := leaderOf(t, admin, a, b)
	if leader == nil {
		t.Fatal("no leader")
	}
	follower := a
	if leader == a {
		follower = b
	}
	follower.stop(t, syscall.SIGKILL)
	time.Sleep(4 * time.Second) // a scrape, the staleness markers, a remote-write flush
	r, raw := row()
	if r.Status != "in-progress" || nodes(r) != 2 || r.DataAgeSeconds == nil || *r.DataAgeSeconds > 10 {
		t.Errorf("after the follower's SIGKILL, row ha %s with %d nodes, data age %v:\n%s", r.Status, nodes(r), ptrText(r.DataAgeSeconds), raw)
	}
	// The leader goes too: nothing reports, the row is stale at once,
	// never "in-progress" from a replica that no longer exports.
	leader.stop(t, syscall.SIGKILL)
	eventually(t, "row ha stale once no replica reports", func() (bool, string) {
		var raw string
		r, raw = row()
		return r.Status == "stale", raw
	})
}

func ptrText(p *float64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprintf("%.1fs", *p)
}
