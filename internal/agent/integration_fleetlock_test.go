package agent

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock/fleetlocktest"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured/kuredtest"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/model"
)

// TestIntegrationFleetlockOrphanReleasedAndUncordoned (issue 10 §2): the
// Lease written exactly as fleetlock writes it (no acquireTime; manager
// "fleetlock"), its holder cordoned by fleetlock's drain, rebooted and Ready.
// The agent, started afterwards, judges it orphaned from managedFields,
// releases it and uncordons the holder (two writes, two Events); its next
// reap — a kured ghost that the holder's lock and cordon blocked — goes through.
func TestIntegrationFleetlockOrphanReleasedAndUncordoned(t *testing.T) {
	c, bin, token := setup(t)
	admin := c.Client(t)
	ctx := context.Background()
	createNode(t, admin, "n2", "22222222222222222222222222222222", time.Now().Add(-3*time.Hour))
	createKured(t, admin, kuredtest.Single("gone-node", time.Now().Add(-time.Hour), 0, false))
	fc, err := fleetlocktest.Client(c.Admin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fleetlocktest.Lock(ctx, fc, "default", "default", testZincatiID, ""); err != nil {
		t.Fatal(err)
	}
	// The holder comes back Ready after the lock was taken: after the
	// second the Lease's managedFields date it to (they have second
	// precision), a wait that is the scenario's own timing.
	time.Sleep(time.Until(leaseWritten(t, admin).Add(time.Second)))
	createNode(t, admin, "n1", testMachineID, time.Now())
	n, err := admin.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Unschedulable = true // fleetlock's drain cordoned it
	if _, err := admin.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	kc := writeKubeconfig(t, c.URL, token)
	a := startAgentProc(t, bin, "agent", kc, "--interval=1s", "--request-timeout=10s", "--orphan-grace=1s",
		"--leader-elect=false", "--release-orphaned")
	a.waitHeartbeat(t, "orphan released and its holder uncordoned", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && l.Verdict == model.VerdictOrphaned && l.Outcome == model.OutcomeDone && strings.Contains(l.Message, "uncordon done")
	})
	if h := fleetHolder(t, admin); h != "" {
		t.Fatalf("lease still held by %q", h)
	}
	if n, _ := admin.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{}); n.Spec.Unschedulable {
		t.Fatal("holder still cordoned after the agent's release")
	}
	a.waitHeartbeat(t, "the kured ghost reaped next", func(hb heartbeat) bool {
		l, ok := kuredLock(hb)
		return ok && l.Verdict == model.VerdictGhost && l.Outcome == model.OutcomeDone
	})
	if evs := eventsFor(t, admin, "default", "fleetlock-default", lock.ReasonReleased); len(evs) != 1 {
		t.Fatalf("release Events %+v", evs)
	}
	if evs := eventsFor(t, admin, "default", "n1", lock.ReasonUncordoned); len(evs) != 1 || evs[0].InvolvedObject.Kind != "Node" {
		t.Fatalf("uncordon Events %+v", evs)
	}
	a.stop(t, syscall.SIGTERM)
	mustNotContainToken(t, token, a)
}

// leaseWritten is the latest managedFields time of the fleetlock Lease:
// when it was last written, to the second.
func leaseWritten(t *testing.T, cs kubernetes.Interface) time.Time {
	t.Helper()
	ctx, cancel := bg()
	defer cancel()
	at, err := fleetlocktest.Written(ctx, cs, "default", "fleetlock-default")
	if err != nil {
		t.Fatal(err)
	}
	return at
}
