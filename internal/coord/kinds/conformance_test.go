package kinds_test

import (
	"context"
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
	"github.com/rebootwatch/rebootwatch/internal/coord/kinds"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc/suctest"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// world is a cluster's clients: an admin, and clients named as a
// coordinator's own binaries (FLUO's agent and operator).
type world struct {
	c               coord.Clients
	agent, operator kubernetes.Interface
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

// conformance writes every registered kind's wedge into the world and
// observes it through the registry: each must be installed, judged, and
// name its wedge on its node.
func conformance(t *testing.T, w world) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, d := range kinds.All() {
		k := d.Capabilities().Kind
		t.Run(string(k), func(t *testing.T) {
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
	conformance(t, world{c: coord.Clients{Kube: kube, Dynamic: dyn}, agent: kube, operator: kube, fake: true})
}

func TestConformanceIntegration(t *testing.T) {
	testcluster.Require(t, "etcd", "kube-apiserver")
	tc := testcluster.Start(t)
	ctx := context.Background()
	if err := suctest.InstallCRD(ctx, tc.Dynamic(t)); err != nil {
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
	conformance(t, world{c: coord.Clients{Kube: cs, Dynamic: tc.Dynamic(t)}, agent: agent, operator: operator})
}
