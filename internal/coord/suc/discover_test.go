package suc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc/suctest"
)

// Issue 32 §2: SUC is read without being asked, so it is discovered first.
// Its Plans not served: not installed, and nothing else is read (no Plans,
// no Jobs, no node list: a cluster without SUC pays one discovery request).
// Served: read and judged. Discovery failing (forbidden, an error): unknown,
// never "not installed".
func TestObserveDiscoversPlans(t *testing.T) {
	ctx, now := context.Background(), time.Now()
	fresh := func() (*fake.Clientset, *dynamicfake.FakeDynamicClient) {
		return fake.NewClientset(), dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{suc.PlanGVR: "PlanList"})
	}

	kube, dyn := fresh()
	o := suc.Driver{}.Observe(ctx, coord.Clients{Kube: kube, Dynamic: dyn}, now)
	if o.Installed || o.Unknown != "" {
		t.Errorf("Plans not served: %+v, want not installed", o)
	}
	for _, a := range append(kube.Actions(), dyn.Actions()...) {
		if a.GetResource().Resource != "resource" { // the discovery request
			t.Errorf("Plans not served, yet %s %s was read", a.GetVerb(), a.GetResource().Resource)
		}
	}

	kube, dyn = fresh()
	node, kind, err := suctest.Wedge(ctx, kube, dyn, "system-upgrade", now) // serves the Plans
	if err != nil {
		t.Fatal(err)
	}
	o = suc.Driver{}.Observe(ctx, coord.Clients{Kube: kube, Dynamic: dyn}, now)
	found := false
	for _, b := range o.Blockers {
		found = found || b.Node == node && string(b.Kind) == kind
	}
	if !o.Installed || o.Unknown != "" || !found {
		t.Errorf("Plans served: %+v, want installed with %s on %s", o, kind, node)
	}

	for name, fail := range map[string]error{
		"forbidden": apierrors.NewForbidden(schema.GroupResource{Resource: "resource"}, "", nil),
		"an error":  apierrors.NewServiceUnavailable("aggregated discovery is down"),
	} {
		kube, dyn = fresh()
		kube.PrependReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, fail })
		o = suc.Driver{}.Observe(ctx, coord.Clients{Kube: kube, Dynamic: dyn}, now)
		if !o.Installed || !strings.Contains(o.Unknown, "cannot tell whether plans.upgrade.cattle.io is served") {
			t.Errorf("discovery %s: %+v, want unknown, never not installed", name, o)
		}
	}
}
