package agent

import (
	"context"
	"io"
	"strings"
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

// TestAgentNamesACoordinatorWedge: by default the agent reads
// system-upgrade-controller each iteration (its Plans are served), reports it as a source, and
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
	suctest.Serve(kube)
	cfg := testConfig()
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

// TestParseFlagsCoordinators: every registered kind is read by default;
// --coordinators selects kinds (a lock kind left out is disabled as with
// --kured=false), its old boolean form still parses (bare and true: every
// kind; false: the lock kinds), and a name that is not a registered kind is
// an error listing the registered ones. A cluster whose only coordinator is
// the system-upgrade-controller runs with --coordinators=suc.
func TestParseFlagsCoordinators(t *testing.T) {
	c, err := ParseFlags(nil, io.Discard)
	if err != nil || c.Coordinators.String() != "all" || !c.Coordinators.Observed() || len(c.DisabledKinds()) != 0 {
		t.Fatalf("default: coordinators %v (disabled %v), %v", c.Coordinators, c.DisabledKinds(), err)
	}
	for _, tc := range []struct {
		args     []string
		want     string
		disabled []model.LockKind
	}{
		{[]string{"--coordinators"}, "all", nil},
		{[]string{"--coordinators=true"}, "all", nil},
		{[]string{"--coordinators=false"}, "kured,fleetlock", nil},
		{[]string{"--coordinators=suc"}, "suc", []model.LockKind{model.LockKured, model.LockFleetlock}},
		{[]string{"--coordinators=suc,KURED"}, "kured,suc", []model.LockKind{model.LockFleetlock}},
		{[]string{"--kured=false", "--fleetlock=false"}, "all", []model.LockKind{model.LockKured, model.LockFleetlock}},
	} {
		c, err := ParseFlags(tc.args, io.Discard)
		if err != nil || c.Coordinators.String() != tc.want {
			t.Errorf("%v: coordinators %v, %v; want %s", tc.args, c.Coordinators, err, tc.want)
			continue
		}
		off := c.DisabledKinds()
		if len(off) != len(tc.disabled) {
			t.Errorf("%v: disabled %v, want %v", tc.args, off, tc.disabled)
		}
		for _, k := range tc.disabled {
			if off[k] == "" {
				t.Errorf("%v: %s not disabled (%v)", tc.args, k, off)
			}
		}
	}
	_, err = ParseFlags([]string{"--coordinators=kured,zincati"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `"zincati"`) || !strings.Contains(err.Error(), "kured, fleetlock, suc, flatcar") {
		t.Errorf("an unknown kind: %v", err)
	}
	if _, err := ParseFlags([]string{"--kured=false", "--fleetlock=false", "--coordinators=false"}, io.Discard); err == nil {
		t.Error("--kured=false --fleetlock=false --coordinators=false: no error, but nothing is watched")
	}
	if _, err := ParseFlags([]string{"--coordinators=fleetlock", "--fleetlock=false"}, io.Discard); err == nil {
		t.Error("--coordinators=fleetlock --fleetlock=false: no error, but nothing is watched")
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
	cfg.Coordinators = kinds.Selection{} // every kind (the default)
	h := startAgent(t, cfg, kube, coordinatorWorld(now), withCoordinators(coord.Clients{Kube: kube, Dynamic: dyn}))
	hb := h.waitFor(t, "SUC's wedge as the fleet's blocker", func(hb heartbeat) bool {
		return hb.Blocker != nil && string(hb.Blocker.Kind) == kind
	})
	if hb.Blocker.Node != wedge || hb.Blocker.Others != 0 {
		t.Errorf("fleet blocker %+v: want %s on %s with no other node stalled (n1's hand cordon is no SUC wedge)", hb.Blocker, kind, wedge)
	}
}
