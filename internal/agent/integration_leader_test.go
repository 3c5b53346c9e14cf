package agent

import (
	"context"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/model"
)

// actedLines returns the Actor's log lines ("reboot lock release|reap").
func actedLines(t *testing.T, p *agentProc) []map[string]any {
	var out []map[string]any
	for _, l := range p.lines(t) {
		if m, _ := l["msg"].(string); m == "reboot lock reap" || m == "reboot lock release" {
			out = append(out, l)
		}
	}
	return out
}

// TestIntegrationLeaderElection: two agents, one leader; only the leader
// acts. Killing the leader (SIGKILL: no release) hands over to the other
// once the leader Lease expires, and the new leader acts.
func TestIntegrationLeaderElection(t *testing.T) {
	c, bin, token := setup(t)
	admin := c.Client(t)
	now := time.Now()
	createNode(t, admin, "n1", testMachineID, now.Add(-3*time.Hour))
	createNode(t, admin, "n2", "22222222222222222222222222222222", now.Add(-3*time.Hour))
	createFleetLease(t, admin, testZincatiID, now.Add(-2*time.Hour))
	createKured(t, admin, "")
	kc := writeKubeconfig(t, c.URL, token)
	const leaseDuration = 6 * time.Second
	args := []string{"--interval=2s", "--request-timeout=5s", "--leader-elect-lease-duration=" + leaseDuration.String(),
		"--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s"}
	a := startAgentProc(t, bin, "agent-a", kc, args...)
	b := startAgentProc(t, bin, "agent-b", kc, args...)

	var leader, follower *agentProc
	eventually(t, "one agent leads", func() (bool, string) {
		la := len(a.heartbeats(t)) > 0 && a.heartbeats(t)[len(a.heartbeats(t))-1].Leader
		lb := len(b.heartbeats(t)) > 0 && b.heartbeats(t)[len(b.heartbeats(t))-1].Leader
		switch {
		case la && !lb:
			leader, follower = a, b
		case lb && !la:
			leader, follower = b, a
		default:
			return false, a.tail(2) + "\n" + b.tail(2)
		}
		return true, ""
	})
	// The leader Lease names the leader.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ll, err := admin.CoordinationV1().Leases("rebootwatch").Get(ctx, "rebootwatch-agent", metav1.GetOptions{})
	if err != nil || ll.Spec.HolderIdentity == nil {
		t.Fatalf("leader lease: %v %+v", err, ll)
	}
	t.Logf("leader %s (lease holder %s), follower %s", leader.name, *ll.Spec.HolderIdentity, follower.name)
	follower.waitHeartbeat(t, "the follower reports the held lock", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && !hb.Leader && l.Verdict == model.VerdictHeld
	})

	// A ghost: only the leader reaps.
	if err := admin.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	leader.waitHeartbeat(t, "the leader reaped", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && hb.Leader && l.Verdict == model.VerdictGhost && l.Outcome == lock.OutcomeDone
	})
	follower.waitHeartbeat(t, "the follower sees the lock free", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && l.Verdict == model.VerdictFree
	})
	if got := actedLines(t, follower); len(got) != 0 {
		t.Fatalf("the follower acted: %v", got)
	}
	for _, hb := range follower.heartbeats(t) {
		if l, ok := fleetlockLock(hb); ok && l.Outcome != "" && l.Outcome != "skipped" {
			t.Fatalf("the follower's heartbeat shows an action: %+v", l)
		}
	}
	if evs := eventsFor(t, admin, "default", "fleetlock-default", lock.ReasonReaped); len(evs) != 1 {
		t.Fatalf("want one reap Event, got %d", len(evs))
	}

	// Kill the leader without a release, then make a new ghost: the
	// follower acts once it takes over the leader Lease.
	leader.stop(t, syscall.SIGKILL)
	killed := time.Now()
	setFleetHolder(t, admin, "ffffffffffffffffffffffffffffffff")
	follower.waitHeartbeat(t, "the follower skips the new ghost while not leading", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && !hb.Leader && l.Verdict == model.VerdictGhost && l.Outcome == "skipped"
	})
	eventually(t, "the follower took over and reaped", func() (bool, string) {
		return fleetHolder(t, admin) == "", follower.tail(4)
	})
	took := time.Since(killed)
	t.Logf("MEASURED failover: leader SIGKILLed → new leader reaped the ghost in %s (lease duration %s)", took, leaseDuration)
	follower.waitHeartbeat(t, "the new leader's heartbeat shows the reap", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && hb.Leader && l.Verdict == model.VerdictGhost && l.Outcome == lock.OutcomeDone
	})
	if evs := eventsFor(t, admin, "default", "fleetlock-default", lock.ReasonReaped); len(evs) != 2 {
		t.Fatalf("want two reap Events, got %d", len(evs))
	}

	// A clean stop releases the leader Lease.
	follower.stop(t, syscall.SIGTERM)
	ll, err = admin.CoordinationV1().Leases("rebootwatch").Get(ctx, "rebootwatch-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ll.Spec.HolderIdentity != nil && *ll.Spec.HolderIdentity != "" {
		t.Errorf("leader Lease still held by %q after SIGTERM", *ll.Spec.HolderIdentity)
	}
	mustNotContainToken(t, token, a, b)
}
