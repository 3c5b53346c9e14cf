package explain

import (
	"fmt"
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/testenv/lockfixture"
	"github.com/rebootwatch/rebootwatch/model"
)

// BenchmarkBlockers5000 explains a fleet of 5,000 nodes that all need a
// reboot while one holds kured's lock and 500 Longhorn volumes are
// degraded: every pending node shares the window, alert, lock and Longhorn
// blockers, worked out once per call.
func BenchmarkBlockers5000(b *testing.B) {
	const nodes, volumes = 5000, 500
	evs := model.Batch{lockfixture.NodesOK(), lockfixture.Source(model.SourcePrometheus, model.StatusOK)}
	need := map[string]bool{}
	for i := range nodes {
		name := fmt.Sprintf("n%04d", i)
		need[name] = true
		evs = append(evs, lockfixture.Up(lockfixture.Node(name)))
	}
	evs = append(evs, model.RebootRequiredSet{Values: need},
		lockfixture.LockEv(lockfixture.KuredLock(lockfixture.Single(lockfixture.Ent("n0000", lockfixture.T0, 0)))))
	for i := range volumes {
		evs = append(evs, model.VolumeUpserted{Volume: model.Volume{Namespace: "longhorn-system", Name: fmt.Sprintf("pvc-%03d", i),
			Robustness: model.RobustnessDegraded, State: "attached", Replicas: 3, Node: fmt.Sprintf("n%04d", i)}})
	}
	c := lockfixture.Build(lock.New(lock.Options{}).Judge, nil, lockfixture.Step{At: lockfixture.T0, Ev: []model.Event{evs}})
	if got := Blockers(c, lockfixture.T0, Options{}); len(got.Nodes) < nodes-1 {
		b.Fatalf("%d nodes explained, want %d", len(got.Nodes), nodes-1)
	}
	b.ReportAllocs()
	for b.Loop() {
		Blockers(c, lockfixture.T0, Options{})
	}
}
