package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources/sourcetest"
)

// onceWorld is a cluster with nodes, a kured lock and a fleetlock lock.
func onceWorld() *fake.Clientset {
	return fake.NewClientset(
		node("cp-1", true, map[string]string{"node-role.kubernetes.io/control-plane": ""}),
		node("w-1", false, map[string]string{"node-role.kubernetes.io/worker": ""}),
		withKured(ds("kube-system", "kured", map[string]string{kured.Annotation: `{"nodeID":"w-1","metadata":{"unschedulable":false},"created":"2026-11-29T10:00:00Z","TTL":0}`}, nil), "kured:test"),
		lease("default", "fleetlock-default", "978a225b3d7b40e9acd7ce9b62f68444"),
	)
}

// snapshotJSON is the model's snapshot without its time-dependent parts.
func snapshotJSON(t *testing.T, c *model.Cluster) string {
	t.Helper()
	s := c.Snapshot(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	b, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestOnceMatchesInformers: a one-shot read gives the model exactly what the
// informers' first sync gives (nodes, both locks, every source's status).
func TestOnceMatchesInformers(t *testing.T) {
	var want, got string
	r, _ := start(t, onceWorld(), Options{})
	r.Eventually(t, "informers synced", func(c *model.Cluster) bool {
		h, _ := c.Source(model.SourceFleetlock)
		return c.NodeCount() == 2 && len(c.Locks()) == 2 && h.Status == model.StatusOK
	})
	r.Read(func(c *model.Cluster) { want = snapshotJSON(t, c) })

	cs := onceWorld()
	var watches atomic.Int32
	cs.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		// The narrow pod watches (a cordoned node's, the lock holder
		// w-1's) run in a one-shot read too (pods.go); nothing else does.
		if a.GetResource().Resource != "pods" {
			watches.Add(1)
		}
		return false, nil, nil
	})
	r2, s := start(t, cs, Options{Once: true})
	r2.Read(func(c *model.Cluster) { got = snapshotJSON(t, c) })
	if got != want {
		t.Errorf("one-shot model differs from the informers':\n got %s\nwant %s", got, want)
	}
	if n := watches.Load(); n != 0 {
		t.Errorf("a one-shot read started %d watches", n)
	}
	for _, h := range s.Health() {
		if h.Status != model.StatusOK || h.LastSync.IsZero() {
			t.Errorf("source %s: %+v, want ok and checked just now", h.Name, h)
		}
	}
}

// TestOncePages: a large list is read in pages (continue tokens) and every
// page's objects arrive; an expired token restarts the list whole.
func TestOncePages(t *testing.T) {
	for _, expire := range []bool{false, true} {
		t.Run(fmt.Sprintf("expire=%v", expire), func(t *testing.T) {
			var nodes []runtime.Object
			for i := range 7 {
				nodes = append(nodes, node(fmt.Sprintf("n-%d", i), true, nil))
			}
			cs := fake.NewClientset(nodes...)
			var calls []string
			expired := false
			cs.PrependReactor("list", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
				lo := a.(k8stesting.ListActionImpl).GetListOptions()
				calls = append(calls, fmt.Sprintf("limit=%d continue=%q", lo.Limit, lo.Continue))
				if expire && lo.Continue == "3" && !expired {
					expired = true
					return true, nil, apierrors.NewResourceExpired("continue token expired")
				}
				start := 0
				if lo.Continue != "" {
					if _, err := fmt.Sscan(lo.Continue, &start); err != nil {
						return true, nil, apierrors.NewBadRequest("bad continue token " + lo.Continue)
					}
				}
				all := &corev1.NodeList{}
				for _, o := range nodes {
					all.Items = append(all.Items, *o.(*corev1.Node))
				}
				if lo.Limit == 0 {
					return true, all, nil
				}
				end := min(start+int(lo.Limit), len(all.Items))
				page := &corev1.NodeList{Items: all.Items[start:end]}
				if end < len(all.Items) {
					page.Continue = fmt.Sprint(end)
				}
				return true, page, nil
			})
			r, _ := start(t, cs, Options{Once: true, PageSize: 3})
			r.Read(func(c *model.Cluster) {
				if c.NodeCount() != 7 {
					t.Errorf("%d nodes, want 7", c.NodeCount())
				}
			})
			if h := r.Source(model.SourceNodes); h.Status != model.StatusOK {
				t.Errorf("nodes: %+v", h)
			}
			want := `limit=3 continue="";limit=3 continue="3";limit=3 continue="6"`
			if expire {
				want = `limit=3 continue="";limit=3 continue="3";limit=0 continue=""`
			}
			if got := strings.Join(calls, ";"); got != want {
				t.Errorf("list calls:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestOnceListsInOneRequest: by default a one-shot read asks for each
// resource in one request, without a limit, whatever its size: continue
// pages are round trips one after the other, and the node list streams
// into the model anyway (ListPageSize). The pod probe keeps its limit=1.
func TestOnceListsInOneRequest(t *testing.T) {
	var objs []runtime.Object
	for i := range 700 {
		objs = append(objs, node(fmt.Sprintf("n-%03d", i), true, nil))
	}
	cs := fake.NewClientset(objs...)
	var mu sync.Mutex
	var calls []string
	cs.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		lo := a.(k8stesting.ListActionImpl).GetListOptions()
		mu.Lock()
		calls = append(calls, fmt.Sprintf("%s limit=%d", a.GetResource().Resource, lo.Limit))
		mu.Unlock()
		return false, nil, nil
	})
	r, _ := start(t, cs, Options{Once: true})
	r.Read(func(c *model.Cluster) {
		if c.NodeCount() != 700 {
			t.Errorf("%d nodes, want 700", c.NodeCount())
		}
	})
	mu.Lock()
	defer mu.Unlock()
	sort.Strings(calls)
	// No fleetlock Lease in "default": fleetlock's Deployments and the
	// Leases of every namespace are listed once, to say where it looked.
	want := "daemonsets limit=0;deployments limit=0;leases limit=0;leases limit=0;nodes limit=0;poddisruptionbudgets limit=0;pods limit=1"
	if got := strings.Join(calls, ";"); got != want {
		t.Errorf("list calls:\n got %s\nwant %s", got, want)
	}
}

// TestOnceFailedListDeliversNothing: a list that fails on its second page
// reports error and hands over none of the first page's nodes (a partial
// list is never a picture); forbidden leases are forbidden; the other
// parts are unaffected.
func TestOnceFailedListDeliversNothing(t *testing.T) {
	cs := onceWorld()
	cs.PrependReactor("list", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		lo := a.(k8stesting.ListActionImpl).GetListOptions()
		if lo.Continue == "" {
			n := node("cp-1", true, nil)
			return true, &corev1.NodeList{ListMeta: metav1.ListMeta{Continue: "next"}, Items: []corev1.Node{*n}}, nil
		}
		return true, nil, apierrors.NewInternalError(fmt.Errorf("etcd is gone"))
	})
	cs.PrependReactor("list", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "", fmt.Errorf("no"))
	})
	r, _ := start(t, cs, Options{Once: true})
	r.Read(func(c *model.Cluster) {
		if c.NodeCount() != 0 {
			t.Errorf("%d nodes from a failed list, want none", c.NodeCount())
		}
	})
	if h := r.Source(model.SourceNodes); h.Status != model.StatusError || !strings.Contains(h.Message, "etcd is gone") {
		t.Errorf("nodes: %+v", h)
	}
	if h := r.Source(model.SourceFleetlock); h.Status != model.StatusForbidden {
		t.Errorf("fleetlock: %+v", h)
	}
	if h := r.Source(model.SourceKured); h.Status != model.StatusOK {
		t.Errorf("kured: %+v", h)
	}
}

// TestOnceKuredNotFound: nothing found is not-installed, and a DaemonSet
// named by --kured-daemonset that is absent is an error, as with informers.
func TestOnceKuredNotFound(t *testing.T) {
	r, _ := start(t, fake.NewClientset(node("a", true, nil)), Options{Once: true})
	if h := r.Source(model.SourceKured); h.Status != model.StatusNotInstalled {
		t.Errorf("kured: %+v", h)
	}
	r, _ = start(t, fake.NewClientset(node("a", true, nil)), Options{Once: true, KuredDaemonSet: "ops/kured"})
	if h := r.Source(model.SourceKured); h.Status != model.StatusError || !strings.Contains(h.Message, "ops/kured not found") {
		t.Errorf("kured named but absent: %+v", h)
	}
}

// TestOnceReadsPodsOfCordonedNodes: a one-shot read settles the pods source
// too (it waited for the sync timeout when only the listed parts settled),
// with the pods of the nodes cordoned at the time.
func TestOnceReadsPodsOfCordonedNodes(t *testing.T) {
	cs := fake.NewClientset(
		cordoned(node("w-1", true, nil)), node("w-2", true, nil),
		pod("shop", "web-0", "w-1", corev1.PodRunning, map[string]string{"app": "web"}, "StatefulSet/web"),
	)
	r, s := start(t, cs, Options{Once: true})
	r.Read(func(c *model.Cluster) {
		if pods, known := c.NodePods("w-1"); !known || len(pods) != 1 {
			t.Errorf("w-1 pods %v known %v", pods, known)
		}
	})
	if h := r.Source(model.SourcePods); h.Status != model.StatusOK {
		t.Errorf("pods: %+v", h)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.WaitForSync(ctx); err != nil {
		t.Errorf("WaitForSync: %v", err)
	}
}

// TestOncePodsSettleWhenTheProbeAnswers: when the pod probe is the last to
// answer, the pods source reports the moment it does, not on a later poll.
// In a synctest bubble no time passes
// between the probe's answer and the report.
func TestOncePodsSettleWhenTheProbeAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		answer := make(chan struct{})
		cs := slowPodLists{Interface: fake.NewClientset(node("a", true, nil)), answer: answer}
		var mu sync.Mutex
		var podsAt time.Time
		ctx, cancel := context.WithCancel(context.Background())
		s, err := Start(ctx, Options{Client: cs, Once: true}, func(ev model.Event) {
			if sc, ok := ev.(model.SourceChanged); ok && sc.Health.Name == model.SourcePods {
				mu.Lock()
				podsAt = time.Now()
				mu.Unlock()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // every list is read; only the probe is out
		answered := time.Now()
		close(answer)
		synctest.Wait()
		mu.Lock()
		at := podsAt
		mu.Unlock()
		if !at.Equal(answered) {
			t.Errorf("pods reported at %v, the probe answered at %v", at, answered)
		}
		cancel()
		s.Wait()
	})
}

// slowPodLists is a clientset whose pod lists wait for answer (the fake's
// reactors run under its lock, which would hold every other list too).
type slowPodLists struct {
	kubernetes.Interface
	answer chan struct{}
}

func (c slowPodLists) CoreV1() corev1client.CoreV1Interface {
	return slowCore{CoreV1Interface: c.Interface.CoreV1(), answer: c.answer}
}

type slowCore struct {
	corev1client.CoreV1Interface
	answer chan struct{}
}

func (c slowCore) Pods(ns string) corev1client.PodInterface {
	return slowPods{PodInterface: c.CoreV1Interface.Pods(ns), answer: c.answer}
}

type slowPods struct {
	corev1client.PodInterface
	answer chan struct{}
}

func (p slowPods) List(ctx context.Context, lo metav1.ListOptions) (*corev1.PodList, error) {
	<-p.answer
	return p.PodInterface.List(ctx, lo)
}

// TestOnceProbesPodsOnce: a one-shot read lists one pod to learn whether
// pods may be read, once, however long the report takes; informers keep
// probing.
func TestOnceProbesPodsOnce(t *testing.T) {
	for _, once := range []bool{true, false} {
		cs := fake.NewClientset(node("a", true, nil))
		var probes atomic.Int64
		// No node is cordoned: every pod list is the probe.
		cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			probes.Add(1)
			return false, nil, nil
		})
		r, s := start(t, cs, Options{Once: once, ProbeInterval: time.Millisecond})
		if once {
			// A one-shot read's goroutines end on their own: once they
			// have, no probe can follow.
			done := make(chan struct{})
			go func() { s.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(sourcetest.IntegrationTimeout):
				t.Fatal("the one-shot read never ended")
			}
		} else {
			r.Eventually(t, "the pods probed again", func(*model.Cluster) bool { return probes.Load() >= 2 })
		}
		if n := probes.Load(); once && n != 1 || !once && n < 2 {
			t.Errorf("once=%v: %d pod probes", once, n)
		}
	}
}
