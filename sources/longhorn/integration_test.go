package longhorn_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
	"github.com/rebootwatch/rebootwatch/sources/longhorn"
	"github.com/rebootwatch/rebootwatch/sources/sourcetest"
)

// createVolume creates a Volume and sets its status through the status
// subresource, as longhorn-manager does (setVolume): attached to node, or
// detached when node is "".
func createVolume(t testing.TB, dyn dynamic.Interface, ns, name, robustness, node string, replicas int64) {
	t.Helper()
	state := "detached"
	if node != "" {
		state = "attached"
	}
	setVolume(t, dyn, ns, name, replicas, map[string]any{"robustness": robustness, "state": state, "currentNodeID": node, "ownerID": node})
}

// TestAgainstRealAPIServer runs the informer as the dashboard and the agent
// do (typed: Longhorn's JSON decoded straight into small structs through
// NewREST) and as the demo does (the dynamic client, unstructured objects
// transformed), against a real apiserver: not installed, installed,
// volumes in every robustness, a rebuild, a delete, uninstalled.
// Both runs use the shared cluster alone, without the CRD
// (withoutLonghornCRD: the CRD comes and goes): each leaves it as it found
// it, without the CRD.
func TestAgainstRealAPIServer(t *testing.T) {
	c := withoutLonghornCRD(t)
	for _, typed := range []bool{true, false} {
		name := map[bool]string{true: "typed", false: "dynamic"}[typed]
		if !t.Run(name, func(t *testing.T) { againstRealAPIServer(t, c, typed) }) {
			return // the CRD may still be installed
		}
	}
}

func againstRealAPIServer(t *testing.T, c *testcluster.Cluster, typed bool) {
	dyn := c.Dynamic(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := longhorn.Options{Client: dyn, RecheckInterval: 500 * time.Millisecond}
	if typed {
		rc, err := longhorn.NewREST(c.Admin)
		if err != nil {
			t.Fatal(err)
		}
		opts.REST = rc
	}

	// The CRD is absent: not-installed, and the model has no Longhorn.
	r := sourcetest.NewRecorder("it").WithTimeout(sourcetest.IntegrationTimeout)
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	src := sourcetest.StartWith(t, ctx, wctx, r, func(ctx context.Context, sink sources.Sink) (*longhorn.Source, error) {
		return longhorn.Start(ctx, opts, sink)
	})
	if h := src.Health(); h.Status != model.StatusNotInstalled {
		t.Fatalf("CRD absent: %+v", h)
	}
	r.Read(func(m *model.Cluster) {
		if m.VolumeSummary() != nil {
			t.Error("volume summary present without Longhorn")
		}
	})

	// Installed, with volumes in every robustness.
	c.InstallLonghornCRD(t)
	ns := c.Namespace(t, "longhorn-system")
	createVolume(t, dyn, ns, "pvc-healthy", "healthy", "w-1", 3)
	createVolume(t, dyn, ns, "pvc-degraded", "degraded", "w-2", 3)
	createVolume(t, dyn, ns, "pvc-faulted", "faulted", "", 2)
	createVolume(t, dyn, ns, "pvc-unknown", "unknown", "", 1)
	r.Eventually(t, "four volumes, one of each", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceLonghorn)
		s := c.VolumeSummary()
		return h.Status == model.StatusOK && s != nil && s.Total == 4 && s.Healthy == 1 && s.Degraded == 1 && s.Faulted == 1 && s.Unknown == 1
	})
	var vols []*model.Volume
	r.Read(func(m *model.Cluster) { vols = m.Volumes() })
	for _, v := range vols {
		if v.Name == "pvc-degraded" && (v.Replicas != 3 || v.Node != "w-2" || v.State != "attached" || v.Namespace != ns) {
			t.Errorf("pvc-degraded %+v", v)
		}
	}

	// A volume rebuilds: the watch carries it.
	ri := dyn.Resource(testcluster.LonghornVolumeGVR).Namespace(ns)
	u, err := ri.Get(ctx, "pvc-degraded", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(u.Object, "healthy", "status", "robustness")
	if _, err := ri.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "rebuilt", func(c *model.Cluster) bool { return c.VolumeSummary().Healthy == 2 })

	// A volume is deleted: the watch carries that too.
	if err := ri.Delete(ctx, "pvc-faulted", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "pvc-faulted gone", func(c *model.Cluster) bool {
		s := c.VolumeSummary()
		return s.Total == 3 && s.Faulted == 0
	})

	// Uninstalled: the source says so and the volumes are forgotten.
	c.RemoveLonghornCRD(t)
	r.Eventually(t, "not-installed again", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceLonghorn)
		return h.Status == model.StatusNotInstalled && c.VolumeCount() == 0 && !c.LonghornPresent()
	})
}

func TestForbiddenAgainstRealAPIServer(t *testing.T) {
	t.Parallel()
	c := testcluster.Shared(t)
	c.EnsureLonghornCRD(t)
	carol, err := dynamic.NewForConfig(c.UserConfig("carol"))
	if err != nil {
		t.Fatal(err)
	}
	carolREST, err := longhorn.NewREST(c.UserConfig("carol"))
	if err != nil {
		t.Fatal(err)
	}
	for name, rc := range map[string]rest.Interface{"typed": carolREST, "dynamic": nil} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			src, err := longhorn.Start(ctx, longhorn.Options{Client: carol, REST: rc}, func(model.Event) {})
			if err != nil {
				t.Fatal(err)
			}
			if err := src.WaitForSync(ctx); err != nil {
				t.Fatal(err)
			}
			if h := src.Health(); h.Status != model.StatusForbidden || h.Message != "cannot list volumes.longhorn.io (RBAC)" {
				t.Fatalf("%+v", h)
			}
		})
	}
}
