package kube

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"
	"k8s.io/utils/ptr"

	"github.com/rebootwatch/rebootwatch/internal/testenv/scalefixture"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
	"github.com/rebootwatch/rebootwatch/sources/sourcetest"
)

// createFullNode creates scalefixture's node i (a kubelet's full status:
// images, capacity, addresses, conditions) under name, its status set
// through the status subresource as a kubelet does.
func createFullNode(t *testing.T, cs kubernetes.Interface, name string, i int) {
	t.Helper()
	ctx := context.Background()
	n := scalefixture.Node(i)
	n.Name = name
	status := n.Status
	n.Status = corev1.NodeStatus{}
	out, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out.Status = status
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, out, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// changeNode gets a node, changes it with fn and writes it back (its
// status too when status is set).
func changeNode(t *testing.T, cs kubernetes.Interface, name string, status bool, fn func(*corev1.Node)) {
	t.Helper()
	ctx := context.Background()
	n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fn(n)
	if status {
		_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	} else {
		_, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// capture reads a watch's raw bytes as they arrive.
type capture struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan struct{}
}

func startCapture(body io.ReadCloser) *capture {
	c := &capture{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		b := make([]byte, 32<<10)
		for {
			n, err := body.Read(b)
			c.mu.Lock()
			c.buf.Write(b[:n])
			c.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return c
}

// waitFrames waits until n whole frames other than the apiserver's
// periodic bookmarks arrived (the watch allows bookmarks, and the server
// sends one about once a minute, whenever it likes).
func (c *capture) waitFrames(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(sourcetest.IntegrationTimeout)
	for {
		got := len(withoutPeriodicBookmarks(c.wholeFrames()))
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d watch events arrived, want %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wholeFrames decodes the whole frames that arrived so far.
func (c *capture) wholeFrames() []decoded {
	c.mu.Lock()
	b := c.buf.Bytes()
	whole := 0
	for len(b)-whole >= 4 {
		size := int(binary.BigEndian.Uint32(b[whole:]))
		if len(b)-whole < 4+size {
			break
		}
		whole += 4 + size
	}
	stream := bytes.Clone(b[:whole])
	c.mu.Unlock()
	got, _ := decodeAll(newNodeWatchDecoder(nopCloser(stream)))
	return got
}

// withoutPeriodicBookmarks drops the bookmarks that carry no node and do
// not end the initial events: the apiserver's periodic ones, which a
// watch that allows bookmarks may get between any two events.
func withoutPeriodicBookmarks(evs []decoded) []decoded {
	var out []decoded
	for _, ev := range evs {
		if ev.Type == watch.Bookmark && !ev.InitialEventEnd && ev.Node.Name == "" {
			continue
		}
		out = append(out, ev)
	}
	return out
}

func (c *capture) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.buf.Bytes())
}

// TestNodeWatchDecoderAgainstRealAPIServer captures the real apiserver's
// protobuf watch stream of nodes — a WatchList's initial ADDED events of
// kubelet-sized nodes and the BOOKMARK that ends them, a status change and
// a cordon (MODIFIED), a delete (DELETED) — and decodes it with
// nodeWatchDecoder and with client-go's decoder and TransformNode: the
// same events, the same model nodes. Then the informer's list, whole and
// in pages. (ERROR events are not had from a fresh apiserver's node watch
// — its watch cache holds every event since resourceVersion 1, so no
// resourceVersion is too old, and one not reached yet is waited for —
// they are checked on streams made with the apiserver's own encoders, in
// TestNodeWatchDecoderMatchesClientGo and FuzzNodeWatchDecoder.)
func TestNodeWatchDecoderAgainstRealAPIServer(t *testing.T) {
	c := testcluster.SharedAlone(t)
	cs := c.Client(t)
	createFullNode(t, cs, "w-1", 1)
	createFullNode(t, cs, "w-2", 2)
	rn := restNodes{c: cs.CoreV1().RESTClient()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	body, err := rn.request(&metav1.ListOptions{Watch: true, SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	live := startCapture(body)
	live.waitFrames(t, 3) // w-1, w-2, the initial-events-end BOOKMARK
	changeNode(t, cs, "w-1", true, func(n *corev1.Node) { n.Status.NodeInfo.BootID = "boot-after-reboot" })
	changeNode(t, cs, "w-2", false, func(n *corev1.Node) { n.Spec.Unschedulable = true })
	if err := cs.CoreV1().Nodes().Delete(ctx, "w-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	live.waitFrames(t, 6)

	cancel()
	<-live.done

	for name, stream := range map[string][]byte{"live": live.bytes()} {
		want, wantErr := decodeAll(clientGoDecoder(t, nopCloser(stream)))
		got, err := decodeAll(newNodeWatchDecoder(nopCloser(stream)))
		if !endsAlike(err, wantErr) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %d events (%v), client-go %d (%v)", name, len(got), err, len(want), wantErr)
			for i := range max(len(got), len(want)) {
				if i >= len(got) || i >= len(want) || !reflect.DeepEqual(got[i], want[i]) {
					t.Errorf("event %d:\ngot  %+v\nwant %+v", i, at(got, i), at(want, i))
				}
			}
		}
	}

	got, _ := decodeAll(newNodeWatchDecoder(nopCloser(live.bytes())))
	got = withoutPeriodicBookmarks(got)
	var types []string
	for _, ev := range got {
		types = append(types, string(ev.Type)+" "+ev.Node.Name)
	}
	if strings.Join(types, ",") != "ADDED w-1,ADDED w-2,BOOKMARK ,MODIFIED w-1,MODIFIED w-2,DELETED w-1" {
		t.Fatalf("events %s", strings.Join(types, ","))
	}
	if !got[2].InitialEventEnd || got[2].RV == "" || got[3].Node.BootID != "boot-after-reboot" || !got[4].Node.Unschedulable ||
		got[0].Node.OSImage == "" || len(got[0].Node.Conditions) == 0 || got[0].Node.UID == "" || got[0].RV == "" {
		t.Errorf("unexpected events %+v", got)
	}
	// The list the informer falls back to, and its pages: *NodeList with a
	// resourceVersion to watch from.
	obj, err := rn.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l := obj.(*NodeList); len(l.Items) != 1 || l.Items[0].Name != "w-2" || !l.Items[0].Model.Unschedulable || l.ResourceVersion == "" {
		t.Fatalf("list %+v", l)
	}
	createFullNode(t, cs, "w-3", 3)
	createFullNode(t, cs, "w-4", 4)
	p := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) {
		return rn.List(context.Background(), opts)
	}))
	p.PageSize = 2
	all, paged, err := p.ListWithAlloc(context.Background(), metav1.ListOptions{})
	if err != nil || !paged {
		t.Fatalf("paged list: %v (paged %v)", err, paged)
	}
	var names []string
	err = meta.EachListItem(all, func(o runtime.Object) error {
		names = append(names, o.(*Node).Name)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, ",") != "w-2,w-3,w-4" {
		t.Errorf("pages gave %v", names)
	}
}

// goneProxy sits between the node informer and the real apiserver. Armed,
// it cuts the open node watches and answers the informer's resuming watch
// (a resourceVersion, no initial events) as the apiserver answers a
// resourceVersion that has left its window: a 200 whose stream holds one
// ERROR event with a 410 Expired Status, encoded as the apiserver encodes
// it. (A fresh apiserver cannot be made to send that for nodes: its node
// watch cache still holds every event since resourceVersion 1.) Only a
// fresh read of the nodes (a list without limit=1, or a WatchList)
// disarms it. It records the Accept header of every node request.
type goneProxy struct {
	proxy *httputil.ReverseProxy
	armed atomic.Bool

	watches testcluster.Watches

	mu      sync.Mutex
	gone    int // resuming watches answered with 410
	relists int // fresh reads after a 410
	accepts map[string]int

	goneEvent []byte // the 410 ERROR event's frame
}

func newGoneProxy(t *testing.T, c *testcluster.Cluster) (*goneProxy, *rest.Config) {
	t.Helper()
	p := &goneProxy{proxy: c.ReverseProxy(t, c.Admin), accepts: map[string]int{},
		goneEvent: watchStream(t, watchEvent{watch.Error, &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone,
			Reason: metav1.StatusReasonExpired, Message: "too old resource version: 1 (2)"}})}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, protobufConfig(srv.URL)
}

func (p *goneProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/nodes" {
		p.proxy.ServeHTTP(w, r)
		return
	}
	q := r.URL.Query()
	isWatch := q.Get("watch") == "true" || q.Get("watch") == "1"
	fresh := (isWatch && q.Get("sendInitialEvents") == "true") || (!isWatch && q.Get("limit") != "1")
	p.mu.Lock()
	p.accepts[r.Header.Get("Accept")]++
	switch {
	case fresh && p.armed.Load():
		p.armed.Store(false)
		if p.gone > 0 {
			p.relists++
		}
	case isWatch && p.armed.Load() && q.Get("resourceVersion") != "":
		p.gone++
		p.mu.Unlock()
		w.Header().Set("Content-Type", protobufWatchType)
		_, _ = w.Write(p.goneEvent)
		return
	}
	p.mu.Unlock()
	if !isWatch {
		p.proxy.ServeHTTP(w, r)
		return
	}
	p.watches.Forward(p.proxy, w, r)
}

// armAndCut arms the proxy and cuts every open node watch.
func (p *goneProxy) armAndCut() {
	p.armed.Store(true)
	p.watches.CutAll()
}

func (p *goneProxy) counts() (gone, relists int, accepts map[string]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gone, p.relists, maps.Clone(p.accepts)
}

// TestNodeInformerAgainstRealAPIServer: the node informer, reading protobuf
// into *Node through a proxy to the real apiserver, keeps the model right
// through real watch events — a node added, a reboot (new bootID), a
// cordon, a delete — and, when its watch breaks and the apiserver answers
// the resumed watch with 410 Gone (an ERROR event), reads the nodes afresh
// and picks up what changed meanwhile; the nodes source stays ok. Every
// node request asked for protobuf alone (restNodes), none went through
// the typed client.
func TestNodeInformerAgainstRealAPIServer(t *testing.T) {
	c := testcluster.SharedAlone(t)
	admin := c.Client(t)
	createFullNode(t, admin, "w-1", 1)
	createFullNode(t, admin, "w-2", 2)

	p, cfg := newGoneProxy(t, c)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := sourcetest.NewRecorder("it").WithTimeout(sourcetest.IntegrationTimeout)
	sourcetest.Start(t, r, func(ctx context.Context, sink sources.Sink) (*Source, error) {
		return Start(ctx, Options{Client: cs}, sink)
	})
	node := func(m *model.Cluster, name string) model.Node {
		n, _ := m.Node(name)
		if n == nil {
			return model.Node{}
		}
		return *n
	}
	r.Eventually(t, "w-1 and w-2", func(m *model.Cluster) bool {
		return m.NodeCount() == 2 && node(m, "w-1").OSImage != "" && len(node(m, "w-2").Conditions) > 0
	})

	createFullNode(t, admin, "w-3", 3)
	r.Eventually(t, "w-3 added", func(m *model.Cluster) bool { return m.NodeCount() == 3 })
	changeNode(t, admin, "w-1", true, func(n *corev1.Node) { n.Status.NodeInfo.BootID = "boot-after-reboot" })
	r.Eventually(t, "w-1 rebooted (MODIFIED)", func(m *model.Cluster) bool { return node(m, "w-1").BootID == "boot-after-reboot" })
	changeNode(t, admin, "w-2", false, func(n *corev1.Node) { n.Spec.Unschedulable = true })
	r.Eventually(t, "w-2 cordoned (MODIFIED)", func(m *model.Cluster) bool { return node(m, "w-2").Unschedulable })
	if err := admin.CoreV1().Nodes().Delete(context.Background(), "w-3", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "w-3 gone (DELETED)", func(m *model.Cluster) bool { return m.NodeCount() == 2 })

	// The watch breaks; its resumption is answered 410 Gone until the
	// informer reads the nodes afresh. Meanwhile w-2 is uncordoned and w-1
	// goes.
	p.armAndCut()
	changeNode(t, admin, "w-2", false, func(n *corev1.Node) { n.Spec.Unschedulable = false })
	if err := admin.CoreV1().Nodes().Delete(context.Background(), "w-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Eventually(t, "relisted: only w-2, uncordoned", func(m *model.Cluster) bool {
		return m.NodeCount() == 1 && node(m, "w-2").Name == "w-2" && !node(m, "w-2").Unschedulable
	})
	gone, relists, accepts := p.counts()
	if gone == 0 || relists == 0 {
		t.Errorf("410s answered %d, fresh reads after them %d: the informer did not go through a 410 and a relist", gone, relists)
	}
	if h := r.Source(model.SourceNodes); h.Status != model.StatusOK {
		t.Errorf("nodes %+v after the relist", h)
	}
	// And it watches again: a change after the relist arrives.
	changeNode(t, admin, "w-2", true, func(n *corev1.Node) { n.Status.NodeInfo.KernelVersion = "6.18.0" })
	r.Eventually(t, "w-2's new kernel after the relist", func(m *model.Cluster) bool { return node(m, "w-2").KernelVersion == "6.18.0" })
	if len(accepts) != 1 || accepts[protobufAccept] == 0 {
		t.Errorf("node requests asked for %v, want protobuf alone (restNodes)", accepts)
	}
}
