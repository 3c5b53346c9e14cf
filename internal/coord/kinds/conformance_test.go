package kinds_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/internal/coord/flatcar"
	"github.com/rebootwatch/rebootwatch/internal/coord/flatcar/flatcartest"
	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock/fleetlocktest"
	"github.com/rebootwatch/rebootwatch/internal/coord/kinds"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured/kuredtest"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc/suctest"
	"github.com/rebootwatch/rebootwatch/internal/explain"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources/kube"
)

// world is a cluster's clients: an admin, and clients named as a
// coordinator's own binaries (FLUO's agent and operator, fleetlock).
type world struct {
	c                          coord.Clients
	agent, operator, fleetlock kubernetes.Interface
	// fake: the API names no field manager from a user agent.
	fake bool
}

// wedges writes each kind's headline wedge with its fixture: one line per
// registered kind (TestConformance fails for a kind without one).
var wedges = map[model.LockKind]func(ctx context.Context, w world) (node, kind string, at time.Time, err error){
	suc.Kind: func(ctx context.Context, w world) (string, string, time.Time, error) {
		now := time.Now()
		n, k, err := suctest.Wedge(ctx, w.c.Kube, w.c.Dynamic, "system-upgrade", now)
		return n, k, now, err
	},
	flatcar.Kind: func(ctx context.Context, w world) (string, string, time.Time, error) {
		return flatcartest.Wedge(ctx, w.c.Kube, w.agent, w.operator, "reboot-coordinator", w.fake)
	},
}

// lockWedges writes each lock-object kind's headline wedge (its lock held
// by a node that no longer exists) with its fixture: one line per
// registered lock-object kind.
var lockWedges = map[model.LockKind]func(ctx context.Context, w world, now time.Time) error{
	kured.Kind: func(ctx context.Context, w world, now time.Time) error {
		return kuredtest.Wedge(ctx, w.c.Kube, "kube-system", now)
	},
	fleetlock.Kind: func(ctx context.Context, w world, now time.Time) error {
		fm := ""
		if w.fake {
			fm = fleetlocktest.Manager
		}
		return fleetlocktest.Wedge(ctx, w.fleetlock, "default", fm)
	},
}

// lockConformance writes a lock-object kind's wedge, reads it through the
// registry (the kind's one-shot read, coord.LockReader) with the nodes,
// and has the lock engine judge it and the explainer explain it: a node waiting to reboot
// must be named as blocked by the kind's lock, a ghost, with evidence.
func lockConformance(ctx context.Context, t *testing.T, w world, k model.LockKind, r coord.LockReader) {
	wedge, ok := lockWedges[k]
	if !ok {
		t.Fatalf("lock kind %s has no conformance wedge", k)
	}
	now := time.Now()
	if err := wedge(ctx, w, now); err != nil {
		t.Fatal(err)
	}
	waiting := "waiting-" + string(k)
	n, err := w.c.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: waiting}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status = corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{MachineID: "2c09ca98649c4c7abc779cd04c96812e", BootID: "boot-1"},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.NewTime(now.Add(-3 * time.Hour))}}}
	if _, err := w.c.Kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	locks, err := r.ReadLocks(ctx, w.c)
	if err != nil || len(locks) != 1 {
		t.Fatalf("read %d locks: %+v %v", len(locks), locks, err)
	}
	e := lock.New(lock.Options{})
	c := model.NewCluster("conformance", model.Options{})
	c.Judge, c.Explain = e.Judge, explain.For(explain.Options{})
	health := func(s model.SourceName, st model.SourceStatus) model.Event {
		return model.SourceChanged{Health: model.SourceHealth{Name: s, Status: st}}
	}
	evs := model.Batch{health(model.SourceNodes, model.StatusOK), health(model.SourcePrometheus, model.StatusOK),
		health(model.SourceLonghorn, model.StatusNotInstalled)}
	for _, d := range kinds.LockDrivers() {
		st := model.StatusNotInstalled
		if d.Kind() == k {
			st = model.StatusOK
		}
		evs = append(evs, health(d.Source(), st))
	}
	nodes, err := w.c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range nodes.Items {
		tn, _ := kube.TransformNode(&nodes.Items[i])
		evs = append(evs, model.NodeUpserted{Node: kube.NodeToModel(tn.(*corev1.Node))})
	}
	for _, l := range locks {
		evs = append(evs, model.LockUpserted{Lock: l})
	}
	evs = append(evs, model.RebootRequiredSet{Values: map[string]bool{waiting: true}})
	c.Apply(evs, now)
	c.Recompute(now)
	for _, b := range c.NodeBlockers(waiting) {
		if b.Kind == model.BlockerLock && b.Lock != nil && b.Lock.Kind == k && b.Stalls && strings.Contains(b.Reason, "ghost") &&
			b.Action == model.ActionReap && len(b.Evidence) > 0 {
			return
		}
	}
	t.Errorf("%s does not wait for a ghost %s lock: %+v (locks %+v)", waiting, k, c.NodeBlockers(waiting), c.LockStatuses())
}

// conformance writes every registered kind's wedge into the world and
// reads it through the registry: an observed kind must be installed,
// judged, and name its wedge on its node; a lock-object kind's lock must
// be judged by the lock engine as blocking a waiting node.
func conformance(t *testing.T, w world) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, d := range kinds.All() {
		k := d.Capabilities().Kind
		t.Run(string(k), func(t *testing.T) {
			if r, ok := d.(coord.LockReader); ok {
				lockConformance(ctx, t, w, k, r)
				return
			}
			wedge, ok := wedges[k]
			if !ok {
				t.Fatalf("kind %s has no conformance wedge", k)
			}
			node, kind, at, err := wedge(ctx, w)
			if err != nil {
				t.Fatal(err)
			}
			var got *kinds.Result
			for _, r := range kinds.ReadAll(ctx, w.c, at) {
				if r.Kind == k {
					got = &r
				}
			}
			if got == nil || !got.Installed || got.Unknown != "" {
				t.Fatalf("observed %+v", got)
			}
			for _, b := range got.Blockers {
				if b.Node == node && string(b.Kind) == kind && b.Reason != "" && len(b.Evidence) > 0 {
					return
				}
			}
			t.Errorf("no %s blocker on %s: %+v", kind, node, got.Blockers)
		})
	}
}

func TestConformanceFake(t *testing.T) {
	kube := fake.NewClientset()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{suc.PlanGVR: "PlanList"})
	conformance(t, world{c: coord.Clients{Kube: kube, Dynamic: dyn}, agent: kube, operator: kube, fleetlock: kube, fake: true})
}

func TestConformanceIntegration(t *testing.T) {
	testcluster.Require(t, "etcd", "kube-apiserver")
	tc := testcluster.Start(t)
	ctx := context.Background()
	if err := suctest.InstallCRD(ctx, tc.Dynamic(t), tc.Client(t).Discovery()); err != nil {
		t.Fatal(err)
	}
	cs := tc.Client(t)
	for _, ns := range []string{"system-upgrade", "reboot-coordinator"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	agent, err := flatcartest.AgentClient(tc.Admin)
	if err != nil {
		t.Fatal(err)
	}
	operator, err := flatcartest.OperatorClient(tc.Admin)
	if err != nil {
		t.Fatal(err)
	}
	fl, err := fleetlocktest.Client(tc.Admin)
	if err != nil {
		t.Fatal(err)
	}
	conformance(t, world{c: coord.Clients{Kube: cs, Dynamic: tc.Dynamic(t)}, agent: agent, operator: operator, fleetlock: fl})
}
