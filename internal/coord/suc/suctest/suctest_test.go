package suctest

import (
	"context"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubetesting "k8s.io/client-go/testing"

	"github.com/rebootwatch/rebootwatch/internal/coord/suc"
)

// laggingDiscovery is an apiserver's discovery that follows the CRD's
// handler late, as a real one does: it changes its answer about Plans only
// on the lag-th read after the CRD was created or deleted.
type laggingDiscovery struct {
	discovery.DiscoveryInterface
	lag int

	mu     sync.Mutex
	crd    bool // the CRD exists (the handler serves Plans)
	served bool // what discovery says
	reads  int  // reads since crd last changed
}

func (d *laggingDiscovery) setCRD(exists bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.crd, d.reads = exists, 0
}

func (d *laggingDiscovery) ServerResourcesForGroupVersionWithContext(_ context.Context, gv string) (*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.served != d.crd {
		if d.reads++; d.reads >= d.lag {
			d.served = d.crd
		}
	}
	if !d.served || gv != PlanGVR.GroupVersion().String() {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: suc.Group, Resource: suc.Resource}, "")
	}
	return &metav1.APIResourceList{GroupVersion: gv, APIResources: []metav1.APIResource{{Name: PlanGVR.Resource, Namespaced: true, Kind: "Plan"}}}, nil
}

func (d *laggingDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	return d.ServerResourcesForGroupVersionWithContext(context.Background(), gv)
}

// TestInstallAndRemoveWaitForDiscovery: InstallCRD returns only once
// suc.Served says Plans are served, and RemoveCRD only once it says they
// are not, although Plans can be listed (or are gone) earlier: a snapshot
// taken right after either must read SUC as the test set it.
func TestInstallAndRemoveWaitForDiscovery(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		crdGVR: "CustomResourceDefinitionList", PlanGVR: "PlanList",
	})
	d := &laggingDiscovery{DiscoveryInterface: &fakediscovery.FakeDiscovery{Fake: &kubetesting.Fake{}}, lag: 3}
	// The CRD's handler follows the CRD at once: Plans list while it
	// exists, and are not found once it is deleted.
	dyn.PrependReactor("create", "customresourcedefinitions", func(kubetesting.Action) (bool, runtime.Object, error) {
		d.setCRD(true)
		return false, nil, nil
	})
	dyn.PrependReactor("delete", "customresourcedefinitions", func(kubetesting.Action) (bool, runtime.Object, error) {
		d.setCRD(false)
		return false, nil, nil
	})
	dyn.PrependReactor("list", "plans", func(kubetesting.Action) (bool, runtime.Object, error) {
		d.mu.Lock()
		defer d.mu.Unlock()
		if !d.crd {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: suc.Group, Resource: suc.Resource}, "")
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if err := InstallCRD(ctx, dyn, d); err != nil {
		t.Fatal(err)
	}
	if served, unknown := suc.Served(ctx, d); !served || unknown != "" {
		t.Fatalf("after InstallCRD suc.Served says served=%v (%q), want served", served, unknown)
	}
	if err := RemoveCRD(ctx, dyn, d); err != nil {
		t.Fatal(err)
	}
	if served, unknown := suc.Served(ctx, d); served || unknown != "" {
		t.Fatalf("after RemoveCRD suc.Served says served=%v (%q), want not served", served, unknown)
	}
}
