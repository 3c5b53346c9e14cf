package explain

import (
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/testenv/lockfixture"
	"github.com/rebootwatch/rebootwatch/model"
)

// Issue 33 §2: a holder's drain is bounded by its own pool's kured
// (--drain-timeout of the DaemonSet whose lock it holds), never by the
// first kured lock's. Pool a sets no drain timeout (the 10m --drain-bound
// applies), pool b's is 1h: b1, draining for 40m under a budget, is within
// its pool's bound; a1, the same, is past it.
func TestDrainBoundPerKuredPool(t *testing.T) {
	now := lockfixture.T0
	since := now.Add(-40 * time.Minute)
	lockOf := func(name, holder string, args ...string) model.LockObject {
		cfg := kured.ParseConfig(args, nil, nil)
		l := lockfixture.KuredLock(lockfixture.Single(lockfixture.Ent(holder, since, 0)))
		l.Name, l.UID = name, "uid-"+name
		lockfixture.KSpec(&l).Config = &cfg
		return l
	}
	pdb := model.PDBUpserted{PDB: model.PDB{Namespace: "shop", Name: "web", Selector: &model.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		MinAvailable: "2", CurrentHealthy: 2, DesiredHealthy: 2, ExpectedPods: 2, Observed: true}}
	podsOn := func(node string) model.Event {
		return model.NodePodsSet{Node: node, Watched: true, Pods: []model.Pod{{Namespace: "shop", Name: "web-" + node, Node: node,
			Phase: model.PodRunning, Ready: true, Labels: map[string]string{"app": "web"}, OwnerKind: "ReplicaSet"}}}
	}
	c := explained(Options{}, lockfixture.Step{At: since, Ev: []model.Event{lockfixture.NodesOK(),
		lockfixture.Source(model.SourcePrometheus, model.StatusOK), lockfixture.Source(model.SourcePods, model.StatusOK), lockfixture.Source(model.SourcePDBs, model.StatusOK),
		lockfixture.Up(lockfixture.Node("a1", lockfixture.Cordoned())), lockfixture.Up(lockfixture.Node("b1", lockfixture.Cordoned())),
		lockfixture.LockEv(lockOf("kured-a", "a1", "--ds-name=kured-a")),
		lockfixture.LockEv(lockOf("kured-b", "b1", "--ds-name=kured-b", "--drain-timeout=1h"))}},
		lockfixture.Step{At: now, Ev: []model.Event{pdb, podsOn("a1"), podsOn("b1")}})
	bs := c.Blockers()
	a, b := bs.Nodes["a1"], bs.Nodes["b1"]
	if len(a) != 1 || !a[0].Stalls || !strings.Contains(a[0].Reason, "a1 has been draining for 40m") {
		t.Errorf("a1 (pool a: --drain-bound 10m): %+v", a)
	}
	if len(b) != 1 || b[0].Stalls || !strings.Contains(b[0].Reason, "a stall after 1h (kured's --drain-timeout)") {
		t.Errorf("b1 (pool b: its kured's --drain-timeout 1h): %+v", b)
	}
}
