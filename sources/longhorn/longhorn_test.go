package longhorn

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
	"github.com/rebootwatch/rebootwatch/sources/sourcetest"
)

func volume(name, robustness string, replicas int64, node string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "longhorn.io/v1beta2", "kind": "Volume",
		"metadata": map[string]any{"name": name, "namespace": "longhorn-system",
			"managedFields": []any{map[string]any{"manager": "longhorn-manager"}}},
		"spec": map[string]any{"numberOfReplicas": replicas, "size": "10737418240", "frontend": "blockdev"},
		"status": map[string]any{"robustness": robustness, "state": "attached", "currentNodeID": node, "ownerID": node,
			"conditions": []any{map[string]any{"type": "Scheduled", "status": "True"}}},
	}}
}

func newFake(objs ...runtime.Object) *dynfake.FakeDynamicClient {
	return dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{VolumeGVR: "VolumeList"}, objs...)
}

func startSource(t *testing.T, o Options) (*sourcetest.Recorder, *Source) {
	t.Helper()
	r := sourcetest.NewRecorder("test")
	return r, sourcetest.Start(t, r, func(ctx context.Context, sink sources.Sink) (*Source, error) { return Start(ctx, o, sink) })
}

func TestVolumes(t *testing.T) {
	cl := newFake(
		volume("pvc-a", "healthy", 3, "w-1"),
		volume("pvc-b", "degraded", 3, "w-2"),
		volume("pvc-c", "faulted", 2, ""),
		volume("pvc-d", "", 1, ""),
	)
	// The fake's watch sees only what happens after it started: the
	// changes below wait for it (they raced it under load).
	watching := make(chan struct{})
	var once sync.Once
	cl.PrependWatchReactor("volumes", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := cl.Tracker().Watch(VolumeGVR, a.GetNamespace())
		once.Do(func() { close(watching) })
		return true, w, err
	})
	r, s := startSource(t, Options{Client: cl})
	if h := s.Health(); h.Status != model.StatusOK {
		t.Fatalf("health %+v", h)
	}
	r.Eventually(t, "4 volumes", func(c *model.Cluster) bool { return c.VolumeCount() == 4 })
	select {
	case <-watching:
	case <-time.After(sourcetest.IntegrationTimeout):
		t.Fatal("the informer never watched")
	}
	var sum *model.VolumeSummary
	var vols []*model.Volume
	r.Read(func(c *model.Cluster) {
		sum = c.VolumeSummary()
		vols = c.Volumes()
	})
	if sum == nil || sum.Healthy != 1 || sum.Degraded != 1 || sum.Faulted != 1 || sum.Unknown != 1 {
		t.Fatalf("summary %+v", sum)
	}
	if v := vols[0]; v.Name != "pvc-a" || v.Replicas != 3 || v.Node != "w-1" || v.State != "attached" {
		t.Errorf("volume a: %+v", v)
	}

	ctx := context.Background()
	ri := cl.Resource(VolumeGVR).Namespace("longhorn-system")
	u, _ := ri.Get(ctx, "pvc-b", metav1.GetOptions{})
	_ = unstructured.SetNestedField(u.Object, "healthy", "status", "robustness")
	if _, err := ri.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := ri.Delete(ctx, "pvc-c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "pvc-b healthy, pvc-c gone", func(c *model.Cluster) bool {
		s := c.VolumeSummary()
		return s.Total == 3 && s.Healthy == 2 && s.Faulted == 0
	})
}

func TestCRDAbsentIsQuiet(t *testing.T) {
	cl := newFake()
	var lists atomic.Int32
	installed := atomic.Bool{}
	cl.PrependReactor("list", "volumes", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		if installed.Load() {
			return false, nil, nil
		}
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "longhorn.io", Resource: "volumes"}, "")
	})
	r, s := startSource(t, Options{Client: cl, RecheckInterval: 300 * time.Millisecond})
	if h := s.Health(); h.Status != model.StatusNotInstalled {
		t.Fatalf("health %+v", h)
	}
	var present bool
	r.Read(func(c *model.Cluster) { present = c.LonghornPresent() })
	if present {
		t.Error("model thinks Longhorn is present")
	}
	// Quiet: one list per recheck, not a retry storm. After ~1s at a 300ms
	// recheck there can be at most a handful.
	time.Sleep(time.Second)
	if n := lists.Load(); n > 5 {
		t.Errorf("%d list calls in 1s with a 300ms recheck: retry storm", n)
	}
	// The CRD appears: the next recheck picks it up.
	ri := cl.Resource(VolumeGVR).Namespace("longhorn-system")
	if _, err := ri.Create(context.Background(), volume("pvc-a", "healthy", 3, "w-1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	installed.Store(true)
	r.Eventually(t, "installed later", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceLonghorn)
		return h.Status == model.StatusOK && c.VolumeCount() == 1 && c.LonghornPresent()
	})
	// Its going away again is covered by the integration test (a real
	// apiserver ends the watch when the CRD is deleted; the fake does not).
}

func TestForbidden(t *testing.T) {
	cl := newFake()
	cl.PrependReactor("list", "volumes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "longhorn.io", Resource: "volumes"}, "", nil)
	})
	_, s := startSource(t, Options{Client: cl})
	if h := s.Health(); h.Status != model.StatusForbidden || h.Message != "cannot list volumes.longhorn.io (RBAC)" {
		t.Fatalf("health %+v", h)
	}
}

func TestTransformVolume(t *testing.T) {
	in := volume("pvc-a", "degraded", 3, "w-1")
	in.SetUID("u-1")
	in.SetResourceVersion("17")
	in.SetLabels(map[string]string{"longhornvolume": "pvc-a"})
	out, _ := TransformVolume(in)
	v, ok := out.(*Volume)
	if !ok {
		t.Fatalf("transformed into %T, want *Volume", out)
	}
	if v.Annotations != nil {
		t.Errorf("metadata beyond the identity kept: %+v", v.Meta)
	}
	if v.Name != "pvc-a" || v.Namespace != "longhorn-system" || v.UID != "u-1" || v.ResourceVersion != "17" {
		t.Errorf("identity %+v", v.Meta)
	}
	if v.Model() != VolumeToModel(in) {
		t.Errorf("transform changed the model volume: %+v vs %+v", v.Model(), VolumeToModel(in))
	}
	if again, _ := TransformVolume(v); again != v {
		t.Error("a *Volume is not kept as it is")
	}
	if _, err := Start(context.Background(), Options{}, func(model.Event) {}); err == nil {
		t.Error("missing client accepted")
	}
}

func TestHungListIsReported(t *testing.T) {
	cl := newFake()
	block := make(chan struct{})
	defer close(block)
	cl.PrependReactor("list", "volumes", func(k8stesting.Action) (bool, runtime.Object, error) {
		<-block // ignores the request's context: never returns in time
		return true, nil, apierrors.NewInternalError(errors.New("late"))
	})
	_, s := startSource(t, Options{Client: cl, RequestTimeout: 100 * time.Millisecond})
	if h := s.Health(); h.Status != model.StatusError || h.Message != "no initial sync of volumes.longhorn.io within 100ms (still trying)" {
		t.Fatalf("%+v", h)
	}
}
