package agent

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

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

// leaderOf returns the agent named by the leader Lease (nil while none).
func leaderOf(t *testing.T, admin kubernetes.Interface, agents ...*agentProc) *agentProc {
	t.Helper()
	ctx, cancel := bg()
	defer cancel()
	ll, err := admin.CoordinationV1().Leases("rebootwatch").Get(ctx, "rebootwatch-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ll.Spec.HolderIdentity == nil {
		return nil
	}
	for _, a := range agents {
		if strings.HasPrefix(*ll.Spec.HolderIdentity, a.name+"_") {
			return a
		}
	}
	return nil
}

// TestIntegrationLeaderElection: two agents, one leader; only the leader
// acts. Killing the leader (SIGKILL: no release) hands over to the other
// once the leader Lease expires, and the new leader acts.
func TestIntegrationLeaderElection(t *testing.T) {
	admin, bin, kc, token := heldLeaseCluster(t)
	const leaseDuration = 6 * time.Second
	args := []string{"--interval=2s", "--request-timeout=5s", "--leader-elect-lease-duration=" + leaseDuration.String(),
		"--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s"}
	a := startAgentProc(t, bin, "agent-a", kc, args...)
	b := startAgentProc(t, bin, "agent-b", kc, args...)
	other := func(p *agentProc) *agentProc {
		if p == a {
			return b
		}
		return a
	}

	// The leader Lease names one agent, whose heartbeat says it leads; the
	// other's says it does not.
	var leader *agentProc
	eventually(t, "one agent leads", func() (bool, string) {
		leader = leaderOf(t, admin, a, b)
		return leader != nil, a.tail(2) + "\n" + b.tail(2)
	})
	leader.waitHeartbeat(t, "the leader knows it leads", func(hb heartbeat) bool { return hb.Leader })
	other(leader).waitHeartbeat(t, "the follower reports the held lock", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && !hb.Leader && l.Verdict == model.VerdictHeld
	})

	// A ghost: exactly one agent reaps, and it was leading when it did.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := admin.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ghost is reaped", func() (bool, string) { return fleetHolder(t, admin) == "", a.tail(2) + "\n" + b.tail(2) })
	var reaper *agentProc
	eventually(t, "the reaper logged its action", func() (bool, string) {
		for _, p := range []*agentProc{a, b} {
			if len(actedLines(t, p)) > 0 {
				reaper = p
				return true, ""
			}
		}
		return false, ""
	})
	reaper.waitHeartbeat(t, "the reap in a leader's heartbeat", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && hb.Leader && l.Verdict == model.VerdictGhost && l.Outcome == model.OutcomeDone
	})
	idle := other(reaper)
	idle.waitHeartbeat(t, "the other agent sees the lock free", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && l.Verdict == model.VerdictFree
	})
	if got := actedLines(t, idle); len(got) != 0 {
		t.Fatalf("%s acted too: %v", idle.name, got)
	}
	for _, hb := range idle.heartbeats(t) {
		if l, ok := fleetlockLock(hb); ok && l.Outcome != "" && l.Outcome != model.OutcomeSkipped {
			t.Fatalf("%s's heartbeat shows an action: %+v", idle.name, l)
		}
	}
	if evs := eventsFor(t, admin, "default", "fleetlock-default", lock.ReasonReaped); len(evs) != 1 {
		t.Fatalf("want one reap Event, got %d", len(evs))
	}

	// Kill the current leader without a release, then make a new ghost:
	// the survivor acts once it takes over the leader Lease.
	leader = leaderOf(t, admin, a, b)
	if leader == nil {
		t.Fatal("no leader before the kill")
	}
	survivor := other(leader)
	mark := survivor.mark(t)
	leader.stop(t, syscall.SIGKILL)
	killed := time.Now()
	setFleetHolder(t, admin, "ffffffffffffffffffffffffffffffff")
	eventually(t, "the survivor took over and reaped", func() (bool, string) {
		return fleetHolder(t, admin) == "", survivor.tail(4)
	})
	took := time.Since(killed)
	t.Logf("MEASURED failover: leader %s SIGKILLed → %s reaped the new ghost in %s (lease duration %s)", leader.name, survivor.name, took, leaseDuration)
	survivor.waitHeartbeatSince(t, mark, "the survivor skipped the ghost before it led", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && !hb.Leader && l.Verdict == model.VerdictGhost && l.Outcome == model.OutcomeSkipped && strings.Contains(l.Message, "not the leader")
	})
	survivor.waitHeartbeatSince(t, mark, "the survivor's heartbeat shows the reap as leader", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && hb.Leader && l.Verdict == model.VerdictGhost && l.Outcome == model.OutcomeDone
	})
	if evs := eventsFor(t, admin, "default", "fleetlock-default", lock.ReasonReaped); len(evs) != 2 {
		t.Fatalf("want two reap Events, got %d", len(evs))
	}

	// A clean stop releases the leader Lease.
	survivor.stop(t, syscall.SIGTERM)
	if l := leaderOf(t, admin, a, b); l != nil {
		t.Errorf("leader Lease still names %s after SIGTERM", l.name)
	}
	mustNotContainToken(t, token, a, b)
}
