package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
)

// Issue 27: the agent with --release-orphaned releases the lock of a holder
// whose kured pod never came back after its reboot, and uncordons it, as
// kured would have.
func TestAgentReleasesStalledKuredHolder(t *testing.T) {
	now := time.Now()
	ok := func(n model.SourceName) model.Event {
		return model.SourceChanged{Health: model.SourceHealth{Name: n, Status: model.StatusOK, LastSync: now}}
	}
	holder := readyNode("n1", "11111111111111111111111111111111", now.Add(-30*time.Minute))
	holder.Unschedulable = true
	created := now.Add(-time.Hour).UTC().Format(time.RFC3339)
	world := []model.Event{ok(model.SourceNodes), ok(model.SourceKured), ok(model.SourcePods),
		model.SourceChanged{Health: model.SourceHealth{Name: model.SourceLonghorn, Status: model.StatusNotInstalled}},
		model.NodeUpserted{Node: holder},
		model.NodePodsSet{Node: "n1", Watched: true, Pods: []model.Pod{{Namespace: "kube-system", Name: "kured-x", Node: "n1",
			Phase: model.PodRunning, OwnerKind: "DaemonSet", OwnerName: "kured",
			Containers: model.ContainerState{Reported: true, Waiting: "CrashLoopBackOff", Restarts: 9}}}},
		model.LockUpserted{Lock: model.LockObject{LockRef: model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured"},
			UID: "ds-uid", ResourceVersion: "7", Spec: &kured.Spec{Present: true,
				Value: `{"nodeID":"n1","metadata":{"unschedulable":false},"created":"` + created + `","TTL":0}`}}},
	}
	cfg := testConfig()
	cfg.ReleaseOrphaned, cfg.DryRun = true, true
	h := startAgent(t, cfg, newFakeClientset(), world)
	hb := h.waitFor(t, "stalled holder released (dry run)", func(hb heartbeat) bool { return lockWith(hb, model.VerdictOrphaned, model.OutcomeDryRun) })
	if m := hb.Locks[0].Message; !strings.Contains(m, "uncordon dry-run") || !strings.Contains(m, "Node n1") {
		t.Fatalf("release message %q lacks the holder's uncordon", m)
	}
}
