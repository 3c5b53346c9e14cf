package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// setup takes the shared cluster (agentCluster), applies deploy/ and mints
// the agent's token.
func setup(t *testing.T) (*testcluster.Cluster, string, string) {
	t.Helper()
	return setupOn(t, agentCluster(t))
}

// setupOn applies deploy/ to c and mints the agent's token there.
func setupOn(t *testing.T, c *testcluster.Cluster) (*testcluster.Cluster, string, string) {
	t.Helper()
	bin := buildAgent(t)
	applyDeploy(t, c)
	return c, bin, mintToken(t, c.Client(t))
}

func fleetlockLock(hb heartbeat) (LockReport, bool) {
	for _, l := range hb.Locks {
		if l.Kind == model.LockFleetlock {
			return l, true
		}
	}
	return LockReport{}, false
}

func kuredLock(hb heartbeat) (LockReport, bool) {
	for _, l := range hb.Locks {
		if l.Kind == model.LockKured {
			return l, true
		}
	}
	return LockReport{}, false
}

// TestIntegrationGhostReapedOnNodeDelete: the agent, running with the
// deploy/ RBAC and a TokenRequest token, clears a fleetlock Lease as soon as
// the informer reports its holder's Node deleted (the interval is an hour,
// so only the event can trigger it), records an Event, and logs no token.
func TestIntegrationGhostReapedOnNodeDelete(t *testing.T) {
	admin, bin, kc, token := heldLeaseCluster(t)

	a := startAgentProc(t, bin, "agent-a", kc, "--interval=1h", "--request-timeout=10s")
	a.waitHeartbeat(t, "the fleetlock lock is held by n1", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && hb.Leader && l.Verdict == model.VerdictHeld && l.HolderNode == "n1"
	})
	if h := fleetHolder(t, admin); h != testZincatiID {
		t.Fatalf("a held lock was touched: holder %q", h)
	}
	// Becoming the leader asks the loop for a pass of its own (trigger
	// "leader"). A heartbeat can say "leader" before that pass has run; a
	// node deleted meanwhile could then be reaped in it, on trigger "leader"
	// (seen once under make test's load). Wait for it, so that only the
	// node's delete can trigger the reap.
	a.waitHeartbeat(t, "the pass that becoming the leader asks for has run", func(hb heartbeat) bool {
		return hb.Leader && hb.Trigger == "leader"
	})
	readyStart := time.Now()
	eventually(t, "/readyz is 200 once the informers synced", func() (bool, string) { return a.probe("/readyz") == 200, a.tail(3) })
	t.Logf("ready after %s", time.Since(readyStart))
	// Before it was ready the agent had the kernel reclaim its binary's
	// start-up pages (--reclaim-startup-pages, on by default): everything
	// below runs on code read back.
	startupPagesReclaimed(t, a)
	if code := a.probe("/healthz"); code != 200 {
		t.Errorf("/healthz %d", code)
	}

	// Delete the Node; a watch times the Lease update.
	latency := timeReap(t, admin, "n1", a)
	t.Logf("MEASURED ghost-reap latency (Node delete → Lease update seen by a watch): %s", latency)
	latencies := []time.Duration{latency}

	hb := a.waitHeartbeat(t, "the reap is in a heartbeat", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && l.Verdict == model.VerdictGhost && l.Outcome == model.OutcomeDone
	})
	if hb.Trigger != "event" {
		t.Errorf("reaped on trigger %q, want the node-delete event", hb.Trigger)
	}
	evs := eventsFor(t, admin, "default", "fleetlock-default", lock.ReasonReaped)
	if len(evs) != 1 || !strings.Contains(evs[0].Message, testZincatiID) {
		t.Fatalf("want one %s Event naming the holder, got %+v", lock.ReasonReaped, evs)
	}
	a.waitHeartbeat(t, "the lock is free", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && l.Verdict == model.VerdictFree
	})

	// More rounds for a latency distribution: a node takes the lock, is
	// deleted, and the agent reaps its ghost.
	for i := 2; i <= 5; i++ {
		name := fmt.Sprintf("n%d", i+1)
		machineID := fmt.Sprintf("%032x", 0xabc000+i)
		holder, err := fleetlock.ZincatiNodeID(machineID)
		if err != nil {
			t.Fatal(err)
		}
		createNode(t, admin, name, machineID, time.Now().Add(-3*time.Hour))
		setFleetHolder(t, admin, holder)
		a.waitHeartbeat(t, name+" holds the lock", func(hb heartbeat) bool {
			l, ok := fleetlockLock(hb)
			return ok && l.Verdict == model.VerdictHeld && l.HolderNode == name
		})
		m := a.mark(t)
		lat := timeReap(t, admin, name, a)
		latencies = append(latencies, lat)
		a.waitHeartbeatSince(t, m, "free after "+name, func(hb heartbeat) bool {
			l, ok := fleetlockLock(hb)
			return ok && l.Verdict == model.VerdictFree && hb.Trigger == "event"
		})
	}
	slices.Sort(latencies)
	t.Logf("MEASURED ghost-reap latency over %d rounds: min %s, median %s, max %s", len(latencies),
		latencies[0], latencies[len(latencies)/2], latencies[len(latencies)-1])
	if evs := eventsFor(t, admin, "default", "fleetlock-default", lock.ReasonReaped); len(evs) != len(latencies) {
		t.Errorf("want %d reap Events, got %d", len(latencies), len(evs))
	}
	m := a.metrics(t)
	for _, want := range []string{
		fmt.Sprintf(`rebootwatch_actions_total{action="reap",kind="fleetlock",result="done"} %d`, len(latencies)),
		`rebootwatch_lock_verdict{kind="fleetlock",lock="default/fleetlock-default",verdict="free"} 1`,
		`rebootwatch_agent_leader 1`,
		`rebootwatch_agent_last_success_timestamp_seconds`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	a.stop(t, syscall.SIGTERM)
	mustNotContainToken(t, token, a)
}

// TestIntegrationOrphanedKured: an orphaned kured lock is left alone without
// --release-orphaned; with it, a degraded Longhorn volume blocks the release
// (gate), and once the volume is healthy the lock is released with an Event.
func TestIntegrationOrphanedKured(t *testing.T) {
	c, bin, token := setup(t)
	admin := c.Client(t)
	now := time.Now()
	createNode(t, admin, "n1", "11111111111111111111111111111111", now.Add(-30*time.Minute))
	createNode(t, admin, "n2", "22222222222222222222222222222222", now.Add(-3*time.Hour))
	created := now.Add(-time.Hour).UTC().Format(time.RFC3339)
	lockValue := fmt.Sprintf(`{"nodeID":"n1","metadata":{"unschedulable":false},"created":%q,"TTL":0}`, created)
	createKured(t, admin, lockValue)
	createLonghorn(t, c, "degraded")
	kc := writeKubeconfig(t, c.URL, token)

	// Policy off: reported, never acted on.
	a := startAgentProc(t, bin, "agent-off", kc, "--interval=1s", "--request-timeout=10s", "--orphan-grace=1s", "--leader-elect=false")
	for i := 0; i < 3; i++ {
		a.waitHeartbeat(t, "orphaned, skipped by policy", func(hb heartbeat) bool {
			l, ok := kuredLock(hb)
			return ok && l.Verdict == model.VerdictOrphaned && l.Outcome == model.OutcomeSkipped && strings.Contains(l.Message, "--release-orphaned")
		})
	}
	a.stop(t, syscall.SIGTERM)
	if v, ok := kuredAnnotation(t, admin); !ok || v != lockValue {
		t.Fatalf("the lock changed with --release-orphaned off: %q %v", v, ok)
	}

	// Policy on, volume degraded: refused by the volumes gate.
	b := startAgentProc(t, bin, "agent-on", kc, "--interval=1s", "--request-timeout=10s", "--orphan-grace=1s", "--leader-elect=false", "--release-orphaned")
	// The first refusal may be fresh-data ("longhorn not reported yet"):
	// the source's sync can be announced a moment before its report reaches
	// the loop. Wait for the volumes gate's own refusal.
	hb := b.waitHeartbeat(t, "release refused by the volume gate", func(hb heartbeat) bool {
		l, ok := kuredLock(hb)
		return ok && l.Verdict == model.VerdictOrphaned && l.Action == model.ActionRelease && l.Outcome == model.OutcomeRefused &&
			strings.Contains(l.Message, "degraded")
	})
	l, _ := kuredLock(hb)
	if !strings.Contains(l.Message, lock.GateVolumes) {
		t.Errorf("refusal %q does not name the volumes gate", l.Message)
	}
	if v, ok := kuredAnnotation(t, admin); !ok || v != lockValue {
		t.Fatalf("released despite a degraded volume: %q %v", v, ok)
	}
	if evs := eventsFor(t, admin, "kube-system", "kured", lock.ReasonReleased); len(evs) != 0 {
		t.Fatalf("an Event for a refused release: %+v", evs)
	}

	// Volume healthy: released.
	setLonghornRobustness(t, c, "healthy")
	b.waitHeartbeat(t, "released", func(hb heartbeat) bool {
		l, ok := kuredLock(hb)
		return ok && l.Verdict == model.VerdictOrphaned && l.Outcome == model.OutcomeDone
	})
	if v, ok := kuredAnnotation(t, admin); ok {
		t.Fatalf("annotation still there after release: %q", v)
	}
	if evs := eventsFor(t, admin, "kube-system", "kured", lock.ReasonReleased); len(evs) != 1 {
		t.Fatalf("want one %s Event, got %+v", lock.ReasonReleased, evs)
	}
	b.stop(t, syscall.SIGTERM)
	mustNotContainToken(t, token, a, b)
}

// timeReap deletes node and returns how long until a watch sees the
// fleetlock Lease's holder cleared.
func timeReap(t *testing.T, admin kubernetes.Interface, node string, a *agentProc) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	w, err := admin.CoordinationV1().Leases("default").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=fleetlock-default"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	start := time.Now()
	if err := admin.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("lease watch closed before the reap\n%s", a.tail(10))
			}
			if l, isLease := ev.Object.(*coordinationv1.Lease); isLease && ev.Type == watch.Modified &&
				l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "" {
				return time.Since(start)
			}
		case <-ctx.Done():
			t.Fatalf("the ghost lease was not cleared\n%s", a.tail(10))
		}
	}
}
