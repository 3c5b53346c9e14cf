package agent

import (
	"context"
	"io"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/internal/coord/kinds"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc/suctest"
	"github.com/rebootwatch/rebootwatch/model"
)

// coordinatorWorld is a cluster whose own locks are quiet (kured and
// fleetlock not installed), so what blocks the fleet is a coordinator
// kind's wedge.
func coordinatorWorld(now time.Time) []model.Event {
	st := func(n model.SourceName, s model.SourceStatus) model.Event {
		return model.SourceChanged{Health: model.SourceHealth{Name: n, Status: s, LastSync: now}}
	}
	return []model.Event{
		st(model.SourceNodes, model.StatusOK), st(model.SourceKured, model.StatusNotInstalled),
		st(model.SourceFleetlock, model.StatusNotInstalled), st(model.SourceLonghorn, model.StatusNotInstalled),
		model.NodeUpserted{Node: readyNode("n1", "", now.Add(-3*time.Hour))},
	}
}

func withCoordinators(c coord.Clients) func(*Agent) {
	return func(a *Agent) {
		a.Coordinators = func(ctx context.Context, now time.Time) []kinds.Result { return kinds.ReadAll(ctx, c, now) }
	}
}

// TestAgentNamesACoordinatorWedge: with --coordinators the agent reads
// system-upgrade-controller each iteration, reports it as a source, and
// names its wedge (a failed job that left its node cordoned) as the
// fleet's blocker; it writes nothing of SUC's.
func TestAgentNamesACoordinatorWedge(t *testing.T) {
	now := time.Now()
	kube := newFakeClientset()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{suc.PlanGVR: "PlanList"})
	node, kind, err := suctest.Wedge(context.Background(), kube, dyn, "system-upgrade", now)
	if err != nil {
		t.Fatal(err)
	}
	dyn.ClearActions()
	cfg := testConfig()
	cfg.Coordinators = true
	h := startAgent(t, cfg, kube, coordinatorWorld(now), withCoordinators(coord.Clients{Kube: kube, Dynamic: dyn}))
	hb := h.waitFor(t, "the SUC wedge as the fleet's blocker", func(hb heartbeat) bool {
		return hb.Blocker != nil && string(hb.Blocker.Kind) == kind
	})
	if hb.Blocker.Node != node || hb.Blocker.Reason == "" {
		t.Errorf("blocker %+v, want %s on %s", hb.Blocker, kind, node)
	}
	if !hasSource(hb, suc.Source, model.StatusOK) {
		t.Errorf("sources %+v lack %s ok", hb.Sources, suc.Source)
	}
	for _, a := range dyn.Actions() {
		if a.GetVerb() != "list" {
			t.Errorf("the agent %s %s: SUC's objects are read only", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// TestAgentCoordinatorForbiddenIsUnread: a coordinator kind the agent may
// not read is "forbidden" in the heartbeat's sources and degrades the
// iteration; it is never reported as nothing to see.
func TestAgentCoordinatorForbiddenIsUnread(t *testing.T) {
	now := time.Now()
	kube := newFakeClientset()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{suc.PlanGVR: "PlanList"})
	dyn.PrependReactor("list", "plans", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: suc.Group, Resource: suc.Resource}, "", nil)
	})
	cfg := testConfig()
	cfg.Coordinators = true
	h := startAgent(t, cfg, kube, coordinatorWorld(now), withCoordinators(coord.Clients{Kube: kube, Dynamic: dyn}))
	hb := h.waitFor(t, "SUC reported forbidden", func(hb heartbeat) bool { return hasSource(hb, suc.Source, model.StatusForbidden) })
	if hb.Result != resultDegraded {
		t.Errorf("result %q, want %q while a coordinator kind cannot be read", hb.Result, resultDegraded)
	}
}

func hasSource(hb heartbeat, name model.SourceName, st model.SourceStatus) bool {
	for _, s := range hb.Sources {
		if s.Name == name && s.Status == st {
			return true
		}
	}
	return false
}

// TestParseFlagsCoordinators: --coordinators is off by default, and a
// cluster whose only coordinator is one of its kinds (k3s with the
// system-upgrade-controller) runs with --kured=false --fleetlock=false.
func TestParseFlagsCoordinators(t *testing.T) {
	c, err := ParseFlags(nil, io.Discard)
	if err != nil || c.Coordinators {
		t.Fatalf("default: coordinators %v, %v", c.Coordinators, err)
	}
	if _, err := ParseFlags([]string{"--kured=false", "--fleetlock=false"}, io.Discard); err == nil {
		t.Error("--kured=false --fleetlock=false: no error, but nothing is watched")
	}
	c, err = ParseFlags([]string{"--kured=false", "--fleetlock=false", "--coordinators"}, io.Discard)
	if err != nil || !c.Coordinators {
		t.Errorf("--coordinators alone: %v %v", c.Coordinators, err)
	}
}

// Issue 32 §3, the agent: a node cordoned by hand beside a tenant's Job
// (SUC's plan and node labels, no controller label, another namespace) is
// no SUC wedge: beside a real one, the agent's fleet blocker is the real
// one and counts no other stalled node. Before the fix n1 was "its plan no
// longer exists: stuck-cordon", a stalled node with the uncordon action.
func TestAgentTenantLookAlikeJobIsNoWedge(t *testing.T) {
	now := time.Now()
	kube := newFakeClientset()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{suc.PlanGVR: "PlanList"})
	ctx := context.Background()
	spec := suctest.PlanSpec{Concurrency: 1, Drain: true, Version: "v1.31.4+k3s1", NodeSelector: map[string]string{"node-role.kubernetes.io/control-plane": "true"}}
	if _, err := suctest.Create(ctx, dyn, suctest.Plan("system-upgrade", "server-plan", spec), suctest.Synced(spec.Version, "", nil, now)); err != nil {
		t.Fatal(err)
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"kubernetes.io/hostname": "n1"}}, Spec: corev1.NodeSpec{Unschedulable: true}}
	if _, err := kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	latest := suctest.MungeVersion(spec.Version)
	tj := suctest.Job("tenant", "agent-plan", "n1", latest, suctest.LatestHash(latest, ""), true, false)
	delete(tj.Labels, suc.LabelController)
	if _, err := suctest.CreateJob(ctx, kube, tj, now.Add(-time.Hour), now.Add(-30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	// A real wedge beside it, so that the heartbeat's fleet blocker is
	// there to count the nodes that stall.
	wedge, kind, err := suctest.Wedge(ctx, kube, dyn, "system-upgrade", now)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Coordinators = true
	h := startAgent(t, cfg, kube, coordinatorWorld(now), withCoordinators(coord.Clients{Kube: kube, Dynamic: dyn}))
	hb := h.waitFor(t, "SUC's wedge as the fleet's blocker", func(hb heartbeat) bool {
		return hb.Blocker != nil && string(hb.Blocker.Kind) == kind
	})
	if hb.Blocker.Node != wedge || hb.Blocker.Others != 0 {
		t.Errorf("fleet blocker %+v: want %s on %s with no other node stalled (n1's hand cordon is no SUC wedge)", hb.Blocker, kind, wedge)
	}
}
