package sourceset

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
	"github.com/rebootwatch/rebootwatch/sources/longhorn"
	"github.com/rebootwatch/rebootwatch/sources/prometheus"
	"github.com/rebootwatch/rebootwatch/sources/sourcetest"
)

func dyn() *dynfake.FakeDynamicClient {
	return dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{longhorn.VolumeGVR: "VolumeList"})
}

func kuredDS(args ...string) *appsv1.DaemonSet {
	labels := map[string]string{"name": "kured"}
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kured", Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kured", Image: "kured:test", Args: args}}}}}}
}

// promServer answers every query with an empty vector and counts them.
func promServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	n := new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
	}))
	t.Cleanup(srv.Close)
	return srv, n
}

func start(t *testing.T, o Options) *sourcetest.Recorder {
	t.Helper()
	r := sourcetest.NewRecorder("test")
	sourcetest.Start(t, r, func(ctx context.Context, sink sources.Sink) (*Set, error) { return Start(ctx, o, sink) })
	return r
}

// Without a Prometheus of the user's, kured's own --prometheus-url (from its
// DaemonSet) is read, and the alert filter says it is kured's.
func TestKuredPrometheusIsTheDefault(t *testing.T) {
	srv, _ := promServer(t)
	cs := fake.NewClientset(kuredDS("--prometheus-url="+srv.URL, "--alert-filter-regexp=^Watchdog$"))
	r := start(t, Options{Client: cs, Dynamic: dyn()})
	r.Eventually(t, "prometheus ok with kured's filter", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourcePrometheus)
		return h.Status == model.StatusOK && strings.Contains(c.AlertFilterFrom(), "kured's own")
	})
}

// Kured's Prometheus is queried as soon as kured's DaemonSet was read, not
// after every node was listed (5,000 nodes take a while). (One-shot here:
// the informers' WatchList takes the wrapped fake for a real server.)
func TestKuredPrometheusDoesNotWaitForNodes(t *testing.T) {
	srv, hits := promServer(t)
	release := make(chan struct{})
	// The node list hangs until the test ends (outside the fake's
	// reactors, which hold one lock for every call).
	cs := slowNodes{Interface: fake.NewClientset(kuredDS("--prometheus-url=" + srv.URL)), release: release}
	r := sourcetest.NewRecorder("test")
	ctx, cancel := context.WithCancel(context.Background())
	// No timeout ends the node list meanwhile (it would settle the nodes
	// source, and the wait for it, with an error).
	set, err := Start(ctx, Options{Client: cs, Dynamic: dyn(), Once: true, RequestTimeout: time.Hour, SyncTimeout: time.Hour}, r.Sink)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		close(release)
		set.Wait()
	})
	r.Eventually(t, "kured's Prometheus queried while the nodes are still listing", func(c *model.Cluster) bool {
		return hits.Load() > 0
	})
	if h := r.Source(model.SourceNodes); h.Status == model.StatusOK {
		t.Fatalf("the nodes were listed after all: %+v", h)
	}
}

// The user's --prometheus-url and --prometheus-alerts win over kured's.
func TestUsersPrometheusWins(t *testing.T) {
	kured, kuredHits := promServer(t)
	mine, _ := promServer(t)
	cs := fake.NewClientset(kuredDS("--prometheus-url=" + kured.URL))
	r := start(t, Options{Client: cs, Dynamic: dyn(), Prometheus: prometheus.Options{URL: mine.URL, AlertFilter: "^DiskFull$"}})
	r.Eventually(t, "prometheus ok with the user's filter", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourcePrometheus)
		return h.Status == model.StatusOK && c.AlertFilterFrom() == "--prometheus-alerts"
	})
	if n := kuredHits.Load(); n != 0 {
		t.Errorf("kured's Prometheus was queried %d times although the user gave one", n)
	}
}

// No Prometheus anywhere: the source says disabled (never silence); the
// demo asks for none at all.
func TestPrometheusDisabledOrNone(t *testing.T) {
	r := start(t, Options{Client: fake.NewClientset(kuredDS()), Dynamic: dyn()})
	r.Eventually(t, "prometheus disabled", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourcePrometheus)
		return h.Status == model.StatusDisabled
	})
	r = start(t, Options{Client: fake.NewClientset(), Dynamic: dyn(), NoPrometheus: true})
	if h := r.Source(model.SourcePrometheus); h.Status != "" {
		t.Errorf("NoPrometheus: prometheus source reported %q", h.Status)
	}
}

// A bad alert filter is an error at Start, not a silently open gate.
func TestBadAlertFilterIsAnError(t *testing.T) {
	_, err := Start(t.Context(), Options{Client: fake.NewClientset(), Dynamic: dyn(),
		Prometheus: prometheus.Options{URL: "http://127.0.0.1:1", AlertFilter: "("}}, func(model.Event) {})
	if err == nil || !strings.Contains(err.Error(), "alert filter") {
		t.Fatalf("err = %v, want the alert filter named", err)
	}
}

// slowNodes is a clientset whose node lists wait for release.
type slowNodes struct {
	kubernetes.Interface
	release chan struct{}
}

func (c slowNodes) CoreV1() corev1client.CoreV1Interface {
	return slowCore{CoreV1Interface: c.Interface.CoreV1(), release: c.release}
}

type slowCore struct {
	corev1client.CoreV1Interface
	release chan struct{}
}

func (c slowCore) Nodes() corev1client.NodeInterface {
	return slowNodeList{NodeInterface: c.CoreV1Interface.Nodes(), release: c.release}
}

type slowNodeList struct {
	corev1client.NodeInterface
	release chan struct{}
}

func (n slowNodeList) List(ctx context.Context, o metav1.ListOptions) (*corev1.NodeList, error) {
	select {
	case <-n.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return n.NodeInterface.List(ctx, o)
}

// kured's DaemonSet gains a --prometheus-url after the session started,
// changes its alert filter, then loses the URL: the Prometheus source
// follows each (the fresh read before a write uses what the DaemonSet says
// now, so a source stuck on the first settings refused every write).
func TestKuredPrometheusFollowsTheDaemonSet(t *testing.T) {
	srv, _ := promServer(t)
	cs := fake.NewClientset(kuredDS())
	r := start(t, Options{Client: cs, Dynamic: dyn(), KuredFollowInterval: 50 * time.Millisecond})
	r.Eventually(t, "prometheus disabled: kured has no --prometheus-url", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourcePrometheus)
		return h.Status == model.StatusDisabled && !c.AlertFilterSet()
	})
	update := func(args ...string) {
		t.Helper()
		if _, err := cs.AppsV1().DaemonSets("kube-system").Update(t.Context(), kuredDS(args...), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	update("--prometheus-url="+srv.URL, "--alert-filter-regexp=^Watchdog$")
	r.Eventually(t, "prometheus ok with kured's filter once the DaemonSet names it", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourcePrometheus)
		return h.Status == model.StatusOK && c.AlertFilterSet() && strings.Contains(c.AlertFilterFrom(), "kured's own")
	})
	update("--prometheus-url=" + srv.URL)
	r.Eventually(t, "still ok after the filter changed", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourcePrometheus)
		_, known := c.FiringAlerts()
		return h.Status == model.StatusOK && known
	})
	update()
	r.Eventually(t, "disabled again, the old filter forgotten, once the URL is gone", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourcePrometheus)
		return h.Status == model.StatusDisabled && !c.AlertFilterSet()
	})
}
