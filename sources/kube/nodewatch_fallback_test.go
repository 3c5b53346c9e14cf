package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"

	"github.com/rebootwatch/rebootwatch/internal/testenv/scalefixture"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
	"github.com/rebootwatch/rebootwatch/sources/sourcetest"
)

// jsonOnlyProxy stands for a proxy in front of an apiserver holding nodes
// that passes no protobuf on. With notAcceptable, a node request that
// accepts protobuf alone gets 406 Not Acceptable (as the apiserver answers
// an Accept it cannot serve); without, every answer is JSON whatever the
// Accept header says. Lists are the nodes at resourceVersion rv; watches
// bring them as ADDED events and, for a WatchList, the initial-events-end
// BOOKMARK, then nothing until the client leaves. Other resources are not
// found. It records the Accept header of every node request.
type jsonOnlyProxy struct {
	rv            string
	nodes         []*corev1.Node
	notAcceptable bool
	stop          chan struct{}

	mu      sync.Mutex
	accepts map[string]int
}

func newJSONOnlyProxy(t *testing.T, notAcceptable bool, rv string, nodes ...*corev1.Node) (*jsonOnlyProxy, kubernetes.Interface) {
	t.Helper()
	p := &jsonOnlyProxy{rv: rv, nodes: nodes, notAcceptable: notAcceptable, stop: make(chan struct{}), accepts: map[string]int{}}
	srv := httptest.NewServer(p)
	t.Cleanup(func() {
		close(p.stop)
		srv.CloseClientConnections()
		srv.Close()
	})
	return p, kubernetes.NewForConfigOrDie(protobufConfig(srv.URL))
}

// encodeJSON is obj as the apiserver writes it in JSON (apiVersion and kind
// set).
func encodeJSON(obj runtime.Object) []byte {
	b, err := runtime.Encode(scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion), obj)
	if err != nil {
		panic(err)
	}
	return b
}

func (p *jsonOnlyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path != "/api/v1/nodes" {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write(encodeJSON(&metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotFound,
			Reason: metav1.StatusReasonNotFound, Message: "the server could not find the requested resource"}))
		return
	}
	accept := r.Header.Get("Accept")
	p.mu.Lock()
	p.accepts[accept]++
	p.mu.Unlock()
	if p.notAcceptable && !strings.Contains(accept, "application/json") {
		w.WriteHeader(http.StatusNotAcceptable)
		_, _ = w.Write(encodeJSON(&metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotAcceptable,
			Reason: metav1.StatusReasonNotAcceptable, Message: "only the following media types are accepted: application/json"}))
		return
	}
	q := r.URL.Query()
	if q.Get("watch") != "true" {
		l := &corev1.NodeList{ListMeta: metav1.ListMeta{ResourceVersion: p.rv}}
		for _, n := range p.nodes {
			l.Items = append(l.Items, *n)
		}
		_, _ = w.Write(encodeJSON(l))
		return
	}
	if q.Get("sendInitialEvents") == "true" {
		events := make([]runtime.Object, 0, len(p.nodes)+1)
		for _, n := range p.nodes {
			events = append(events, n)
		}
		events = append(events, &corev1.Node{ObjectMeta: metav1.ObjectMeta{ResourceVersion: p.rv,
			Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})
		for i, obj := range events {
			typ := watch.Added
			if i == len(events)-1 {
				typ = watch.Bookmark
			}
			b, err := json.Marshal(&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: encodeJSON(obj)}})
			if err != nil {
				panic(err)
			}
			_, _ = w.Write(append(b, '\n'))
		}
	}
	w.(http.Flusher).Flush()
	select {
	case <-r.Context().Done():
	case <-p.stop:
	}
}

func (p *jsonOnlyProxy) acceptCounts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.accepts)
}

// TestNodeInformerFallsBackToJSON: behind a proxy that passes no protobuf
// on — one answering 406 to a protobuf-only Accept, one answering JSON
// whatever was asked — the node informer does what client-go's typed
// client does: it takes JSON, and the model gets the same nodes (the nodes
// source ok), not a nodes source in error. Its lists and watches, through
// the typed client, give the *Node the protobuf reader gives for the same
// nodes, and a WatchList's BOOKMARK keeps its initial-events-end
// annotation.
func TestNodeInformerFallsBackToJSON(t *testing.T) {
	a := scalefixture.Node(1)
	a.ResourceVersion = "7"
	b := node("odd", false, map[string]string{"kubernetes.io/role": "infra", "node-role.kubernetes.io/gpu": ""})
	b.Spec.Unschedulable = true
	b.ResourceVersion = "8"
	for _, notAcceptable := range []bool{true, false} {
		name := map[bool]string{true: "406", false: "JSON anyway"}[notAcceptable]
		t.Run(name, func(t *testing.T) {
			p, cs := newJSONOnlyProxy(t, notAcceptable, "9", a, b)
			r := sourcetest.NewRecorder("proxy")
			sourcetest.Start(t, r, func(ctx context.Context, sink sources.Sink) (*Source, error) {
				return Start(ctx, Options{Client: cs}, sink)
			})
			r.Eventually(t, "both nodes, the nodes source ok", func(m *model.Cluster) bool {
				n, _ := m.Node("odd")
				h, _ := m.Source(model.SourceNodes)
				return m.NodeCount() == 2 && n != nil && n.Unschedulable && h.Status == model.StatusOK
			})
			// The one-shot read (--snapshot) too.
			once := sourcetest.NewRecorder("proxy")
			sourcetest.Start(t, once, func(ctx context.Context, sink sources.Sink) (*Source, error) {
				return Start(ctx, Options{Client: cs, Once: true}, sink)
			})
			once.Read(func(m *model.Cluster) {
				n, _ := m.Node("odd")
				h, _ := m.Source(model.SourceNodes)
				if m.NodeCount() != 2 || n == nil || !n.Unschedulable || h.Status != model.StatusOK {
					t.Errorf("one-shot read: %d nodes, nodes source %+v", m.NodeCount(), h)
				}
			})
			accepts := p.acceptCounts()
			if notAcceptable && accepts[protobufAccept] == 0 {
				t.Errorf("node requests asked for %v: none for protobuf alone", accepts)
			}
			if accepts["application/vnd.kubernetes.protobuf,application/json"] == 0 {
				t.Errorf("node requests asked for %v: none through the typed client", accepts)
			}

			// The typed path's nodes are what the protobuf reader makes.
			want, err := ReadNodeList(bytes.NewReader(nodeListProto(t, "", a, b)))
			if err != nil {
				t.Fatal(err)
			}
			rn := newRESTNodes(nodeListREST(cs), cs)
			obj, err := rn.List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := obj.(*NodeList)
			if got.ResourceVersion != "9" || len(got.Items) != len(want.Items) {
				t.Fatalf("list: resourceVersion %q, %d nodes", got.ResourceVersion, len(got.Items))
			}
			for i := range got.Items {
				g, w := got.Items[i], want.Items[i]
				if g.Name != w.Name || g.UID != w.UID || g.ResourceVersion != w.ResourceVersion || g.Annotations != nil ||
					!sameNode(&g.Model, &w.Model) {
					t.Errorf("node %d through the typed client:\n%+v\nwant (protobuf reader)\n%+v", i, g, w)
				}
			}
			// A watch answered 406 falls back by itself; a JSON watch
			// stream cannot be told from a broken one (an ERROR event, then
			// the reflector lists), so that proxy's watch follows a list.
			wn := rn
			if notAcceptable {
				wn = newRESTNodes(nodeListREST(cs), cs)
			}
			wi, err := wn.Watch(context.Background(), metav1.ListOptions{SendInitialEvents: ptr.To(true),
				ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
			if err != nil {
				t.Fatal(err)
			}
			defer wi.Stop()
			var evs []watch.Event
			for len(evs) < 3 {
				evs = append(evs, <-wi.ResultChan())
			}
			n0, ok0 := evs[0].Object.(*Node)
			n1, ok1 := evs[1].Object.(*Node)
			bm, ok2 := evs[2].Object.(*Node)
			if !ok0 || !ok1 || !ok2 || evs[0].Type != watch.Added || evs[2].Type != watch.Bookmark ||
				!sameNode(&n0.Model, &want.Items[0].Model) || !sameNode(&n1.Model, &want.Items[1].Model) ||
				bm.ResourceVersion != "9" || bm.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
				t.Errorf("watch events %+v", evs)
			}
		})
	}
}
