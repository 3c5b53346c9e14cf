package kube

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"testing/iotest"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/util/framer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"

	"github.com/rebootwatch/rebootwatch/internal/kubeclient"
	"github.com/rebootwatch/rebootwatch/internal/testenv/scalefixture"
	"github.com/rebootwatch/rebootwatch/model"
)

// protobufWatchType is the media type of the apiserver's protobuf watch.
const protobufWatchType = "application/vnd.kubernetes.protobuf;stream=watch"

// watchEvent is one event as the test streams carry it.
type watchEvent struct {
	typ watch.EventType
	obj runtime.Object // *corev1.Node or *metav1.Status
}

// watchStream encodes events as the apiserver writes a protobuf watch: each
// object in its envelope (the embedded encoder), inside a metav1.WatchEvent
// without envelope, in length-prefixed frames.
func watchStream(t testing.TB, events ...watchEvent) []byte {
	t.Helper()
	embedded := scheme.Codecs.EncoderForVersion(protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), corev1.SchemeGroupVersion)
	var out bytes.Buffer
	fw := framer.NewLengthDelimitedFrameWriter(&out)
	for _, ev := range events {
		var obj bytes.Buffer
		if err := embedded.Encode(ev.obj, &obj); err != nil {
			t.Fatal(err)
		}
		we := &metav1.WatchEvent{Type: string(ev.typ), Object: runtime.RawExtension{Raw: obj.Bytes()}}
		b, err := we.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	return out.Bytes()
}

// decoded is an event as the model and the reflector see it: its type, the
// model's node (NodeToModel(TransformNode(n)) for client-go's), the
// object's namespace, resourceVersion and whether it ends a WatchList's
// initial events, or the Status of an ERROR event.
type decoded struct {
	Type            watch.EventType
	Node            model.Node
	Namespace, RV   string
	InitialEventEnd bool
	Status          *metav1.Status
}

// clientGoDecoder is the decoder client-go's typed clientset puts behind a
// protobuf watch: its framer, the streaming WatchEvent decoder and the
// embedded object decoder (the clientset's codecs, without conversion).
func clientGoDecoder(t testing.TB, r io.ReadCloser) watch.Decoder {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.WithoutConversion().SupportedMediaTypes(), "application/vnd.kubernetes.protobuf")
	if !ok || info.StreamSerializer == nil {
		t.Fatal("no protobuf stream serializer")
	}
	objects := scheme.Codecs.WithoutConversion().DecoderToVersion(info.Serializer, corev1.SchemeGroupVersion)
	frames := info.StreamSerializer.Framer.NewFrameReader(r)
	return restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer), objects)
}

// decodeAll reads every event dec gives and the error that ended it.
func decodeAll(dec watch.Decoder) ([]decoded, error) {
	var out []decoded
	for {
		et, obj, err := dec.Decode()
		if err != nil {
			return out, err
		}
		d := decoded{Type: et}
		switch o := obj.(type) {
		case *corev1.Node:
			tn, _ := TransformNode(o)
			n := tn.(*corev1.Node)
			d.Node, d.Namespace, d.RV = NodeToModel(n), n.Namespace, n.ResourceVersion
			d.InitialEventEnd = o.Annotations[metav1.InitialEventsAnnotationKey] == "true"
			if d.Node.UID != string(n.UID) || d.Node.Name != n.Name {
				panic("NodeToModel lost the identity")
			}
		case *Node:
			d.Node, d.Namespace, d.RV = o.Model, o.Namespace, o.ResourceVersion
			d.InitialEventEnd = o.Annotations[metav1.InitialEventsAnnotationKey] == "true"
			if o.Name != o.Model.Name || string(o.UID) != o.Model.UID {
				panic("Node's identity differs from its model's")
			}
		case *metav1.Status:
			d.Status = o
		default:
			return out, errors.New("unexpected object")
		}
		out = append(out, d)
	}
}

// endsAlike reports whether two decoders ended a stream the same way: at
// its end (io.EOF), cut inside an event (io.EOF or io.ErrUnexpectedEOF:
// client-go's framer says EOF for a frame cut before its first byte;
// watch.StreamWatcher ends quietly on both), or with an error (an ERROR
// event).
func endsAlike(a, b error) bool {
	quiet := func(err error) bool { return err == io.EOF || err == io.ErrUnexpectedEOF }
	return quiet(a) == quiet(b)
}

func nopCloser(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }

// sampleEvents are a WatchList's initial events and what follows: kubelet
// nodes, odd nodes, the initial-events-end BOOKMARK, an update, a delete,
// a plain BOOKMARK and a 410 ERROR.
func sampleEvents() []watchEvent {
	odd := node("odd", false, map[string]string{"kubernetes.io/role": "infra", "node-role.kubernetes.io/gpu": "", "team": "x"})
	odd.Spec.Unschedulable = true
	odd.ResourceVersion = "17"
	odd.Annotations["weave.works/kured-most-recent-reboot-needed"] = "2026-11-30T07:00:00Z"
	n0, n7 := scalefixture.Node(0), scalefixture.Node(7)
	n0.ResourceVersion, n7.ResourceVersion = "11", "12"
	n7b := n7.DeepCopy()
	n7b.ResourceVersion = "20"
	n7b.Status.NodeInfo.BootID = "boot-new"
	bookmark := &corev1.Node{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "18",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	gone := &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired,
		Message: "too old resource version: 1 (20)"}
	return []watchEvent{
		{watch.Added, n0}, {watch.Added, n7}, {watch.Added, odd},
		{watch.Added, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "bare", ResourceVersion: "3"}}},
		{watch.Bookmark, bookmark},
		{watch.Modified, n7b},
		{watch.Deleted, odd},
		{watch.Bookmark, &corev1.Node{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "25"}}},
		{watch.Error, gone},
	}
}

// TestNodeWatchDecoderMatchesClientGo: on a stream of every kind of event,
// nodeWatchDecoder gives what client-go's decoder and TransformNode give —
// the same model nodes, resourceVersions, the initial-events-end
// BOOKMARK, the 410 Status — however the bytes arrive.
func TestNodeWatchDecoderMatchesClientGo(t *testing.T) {
	stream := watchStream(t, sampleEvents()...)
	want, wantErr := decodeAll(clientGoDecoder(t, nopCloser(stream)))
	if wantErr != io.EOF || len(want) != len(sampleEvents()) {
		t.Fatalf("client-go: %d events, %v", len(want), wantErr)
	}
	for name, r := range map[string]io.Reader{"whole": bytes.NewReader(stream),
		"one byte": iotest.OneByteReader(bytes.NewReader(stream)), "half": iotest.HalfReader(bytes.NewReader(stream))} {
		got, err := decodeAll(newNodeWatchDecoder(io.NopCloser(r)))
		if err != io.EOF {
			t.Errorf("%s: ended with %v, want io.EOF", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			for i := range max(len(got), len(want)) {
				if i >= len(got) || i >= len(want) || !reflect.DeepEqual(got[i], want[i]) {
					t.Errorf("%s: event %d:\ngot  %+v\nwant %+v", name, i, at(got, i), at(want, i))
				}
			}
		}
	}
	got, _ := decodeAll(newNodeWatchDecoder(nopCloser(stream)))
	if !got[4].InitialEventEnd || got[4].RV != "18" || got[2].Node.Name != "odd" || !got[2].Node.Unschedulable ||
		got[8].Status == nil || got[8].Status.Code != http.StatusGone || got[5].Node.BootID != "boot-new" {
		t.Errorf("unexpected events: %+v", got)
	}
	if err := apierrors.FromObject(got[8].Status); !apierrors.IsResourceExpired(err) {
		t.Errorf("the ERROR event's Status is not a 410 expired: %v", err)
	}
}

func at(ds []decoded, i int) any {
	if i < len(ds) {
		return ds[i]
	}
	return "(none)"
}

// TestNodeWatchDecoderCutAndBroken: a stream cut anywhere ends as
// client-go's does (quietly inside an event: the reflector watches again),
// after the same events; bytes that are not a node watch end with an
// error (an ERROR event through watch.StreamWatcher).
func TestNodeWatchDecoderCutAndBroken(t *testing.T) {
	stream := watchStream(t, sampleEvents()[:3]...)
	for i := range len(stream) {
		cut := stream[:i]
		want, wantErr := decodeAll(clientGoDecoder(t, nopCloser(cut)))
		got, err := decodeAll(newNodeWatchDecoder(nopCloser(cut)))
		if !reflect.DeepEqual(got, want) || !endsAlike(err, wantErr) {
			t.Fatalf("cut at %d: %d events, %v; client-go %d events, %v", i, len(got), err, len(want), wantErr)
		}
	}
	pod := watchStream(t, watchEvent{watch.Added, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}})
	for name, b := range map[string][]byte{
		"json":            []byte(`{"type":"ADDED","object":{"kind":"Node","apiVersion":"v1"}}`),
		"bad type":        watchStream(t, watchEvent{"RENAMED", node("n", true, nil)}),
		"pod":             pod,
		"empty frame":     {0, 0, 0, 0},
		"garbage frame":   {0, 0, 0, 3, 0xff, 0xff, 0xff},
		"too large frame": append([]byte{0x01, 0, 0, 1}, make([]byte, 64)...),
	} {
		evs, err := decodeAll(newNodeWatchDecoder(nopCloser(b)))
		if len(evs) != 0 || err == nil || err == io.EOF || err == io.ErrUnexpectedEOF {
			t.Errorf("%s: %d events, %v; want an error", name, len(evs), err)
		}
	}
}

// TestNodeWatchThroughStreamWatcher: restNodes.Watch over HTTP, as the
// reflector holds it: the events arrive, and a stream that breaks ends with
// an ERROR event carrying a 500, as client-go's own watches do.
func TestNodeWatchThroughStreamWatcher(t *testing.T) {
	good := watchStream(t, sampleEvents()[:2]...)
	body := append(append([]byte{}, good...), 0, 0, 0, 3, 0xff, 0xff, 0xff)
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.Header.Get("Accept")+" "+r.URL.RawQuery)
		w.Header().Set("Content-Type", protobufWatchType)
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	cs := kubernetes.NewForConfigOrDie(protobufConfig(srv.URL))
	w, err := restNodes{c: cs.CoreV1().RESTClient()}.Watch(context.Background(),
		metav1.ListOptions{ResourceVersion: "10", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []watch.Event
	for ev := range w.ResultChan() {
		got = append(got, ev)
	}
	if len(got) != 3 || got[0].Type != watch.Added || got[0].Object.(*Node).Name != "node-00000" ||
		got[1].Object.(*Node).Model.BootID != "boot-00007" || got[2].Type != watch.Error {
		t.Fatalf("events %+v", got)
	}
	if st, ok := got[2].Object.(*metav1.Status); !ok || st.Code != http.StatusInternalServerError || st.Reason != metav1.StatusReasonInternalError {
		t.Errorf("a broken stream's ERROR %#v", got[2].Object)
	}
	if len(asked) != 1 || asked[0] != "application/vnd.kubernetes.protobuf allowWatchBookmarks=true&resourceVersion=10&watch=true" {
		t.Errorf("requests %q", asked)
	}
}

// BenchmarkNodeWatchDecode reads a watch of 5,000 kubelet-sized nodes
// (scalefixture's: full status, 30 images, managedFields-free), as a
// WatchList's initial events bring them, served over loopback HTTP:
//
//	go test -run '^$' -bench NodeWatchDecode -benchmem ./sources/kube/
//
// "client-go" is the baseline the typed reader is measured against: the
// typed clientset's watch (client-go's framer, WatchEvent and generated
// decoder into a full Node) and TransformNode; "typed" is restNodes.Watch,
// as the informer reads them (TransformNode passes a *Node through).
func BenchmarkNodeWatchDecode(b *testing.B) {
	const n = 5000
	events := make([]watchEvent, n)
	for i := range events {
		nd := scalefixture.Node(i)
		nd.ResourceVersion = "100"
		events[i] = watchEvent{watch.Added, nd}
	}
	stream := watchStream(b, events...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", protobufWatchType)
		_, _ = w.Write(stream)
	}))
	defer srv.Close()
	cs := kubernetes.NewForConfigOrDie(protobufConfig(srv.URL))
	drain := func(b *testing.B, w watch.Interface) {
		defer w.Stop()
		for range n {
			ev, ok := <-w.ResultChan()
			if !ok || ev.Type != watch.Added {
				b.Fatalf("event %+v (open %v)", ev, ok)
			}
			if _, err := TransformNode(ev.Object); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("client-go", func(b *testing.B) {
		b.SetBytes(int64(len(stream)))
		b.ReportAllocs()
		for b.Loop() {
			w, err := cs.CoreV1().Nodes().Watch(context.Background(), metav1.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			drain(b, w)
		}
	})
	b.Run("typed", func(b *testing.B) {
		rn := restNodes{c: cs.CoreV1().RESTClient()}
		b.SetBytes(int64(len(stream)))
		b.ReportAllocs()
		for b.Loop() {
			w, err := rn.Watch(context.Background(), metav1.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			drain(b, w)
		}
	})
}

// protobufConfig is a client config for host speaking protobuf, as the
// dashboard's and the agent's.
func protobufConfig(host string) *rest.Config {
	return kubeclient.ProtobufConfig(&rest.Config{Host: host, QPS: -1})
}

// TestNodeCopiesShareNothing: what the source hands the model (cloneNode)
// and what DeepCopyObject makes share no slice or map with the cached
// Node: changing a copy leaves the cache as it was.
func TestNodeCopiesShareNothing(t *testing.T) {
	page := nodeListProto(t, "", scalefixture.Node(3), node("odd", false, map[string]string{"node-role.kubernetes.io/gpu": ""}))
	l, err := ReadNodeList(bytes.NewReader(page))
	if err != nil || len(l.Items) != 2 {
		t.Fatal(err)
	}
	again, _ := ReadNodeList(bytes.NewReader(page))
	cached, want := l.Items[1], again.Items[1]
	cached.Annotations = map[string]string{"a": "b"}
	want.Annotations = map[string]string{"a": "b"}
	if !reflect.DeepEqual(cached.DeepCopyObject(), cached) || len(cached.Model.Roles) == 0 || len(cached.Model.Conditions) == 0 ||
		len(cached.Model.Annotations) == 0 {
		t.Fatalf("copy of %+v", cached)
	}
	mutate := func(m *model.Node) {
		m.Roles[0] = "changed"
		m.Conditions[0].Status = "changed"
		for k := range m.Annotations {
			m.Annotations[k] = "changed"
		}
	}
	sent := cloneNode(&cached.Model)
	mutate(&sent)
	c := cached.DeepCopyObject().(*Node)
	mutate(&c.Model)
	c.Annotations["a"] = "changed"
	if !reflect.DeepEqual(cached, want) {
		t.Errorf("the cached node changed with its copies:\n%+v\nwant %+v", cached, want)
	}
	lc := l.DeepCopyObject().(*NodeList)
	mutate(&lc.Items[0].Model)
	if reflect.DeepEqual(lc.Items[0], l.Items[0]) || lc.ResourceVersion != l.ResourceVersion {
		t.Error("NodeList.DeepCopyObject shares its items")
	}
}
