package longhorn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/internal/testenv/scalefixture"
	"github.com/rebootwatch/rebootwatch/model"
)

// event is one watch event as the apiserver writes it (type first).
func event(t testing.TB, typ string, obj any) string {
	t.Helper()
	if u, ok := obj.(*unstructured.Unstructured); ok {
		obj = u.Object
	}
	raw, err := json.Marshal(map[string]any{"type": typ, "object": obj})
	if err != nil {
		t.Fatal(err)
	}
	// encoding/json sorts keys: "object" before "type". The apiserver
	// writes "type" first; swap them back so both orders are covered below.
	s := string(raw)
	if typ != "" {
		obj := s[len(`{"object":`):strings.LastIndex(s, `,"type":`)]
		s = fmt.Sprintf(`{"type":%q,"object":%s}`, typ, obj)
	}
	return s + "\n"
}

func decodeAll(t *testing.T, stream string) ([]watch.Event, error) {
	t.Helper()
	d := newWatchDecoder(io.NopCloser(strings.NewReader(stream)))
	defer d.Close()
	var out []watch.Event
	for {
		typ, obj, err := d.Decode()
		if err != nil {
			return out, err
		}
		out = append(out, watch.Event{Type: typ, Object: obj})
	}
}

// TestWatchDecoderEvents: every kind of event the apiserver sends, as it
// sends them, comes out as the reflector needs it: volumes as *Volume with
// what the model reads, a BOOKMARK with its resourceVersion and the
// initial-events-end annotation, an ERROR as the server's Status (a 410 is
// "expired", which makes the reflector list again).
func TestWatchDecoderEvents(t *testing.T) {
	added := volume("pvc-a", "degraded", 3, "w-1")
	added.SetResourceVersion("101")
	added.SetUID("uid-a")
	modified := added.DeepCopy()
	modified.SetResourceVersion("102")
	_ = unstructured.SetNestedField(modified.Object, "healthy", "status", "robustness")
	detached := volume("pvc-b", "faulted", 2, "")
	_ = unstructured.SetNestedField(detached.Object, "detached", "status", "state")
	bookmarkEnd := map[string]any{"kind": "Volume", "apiVersion": "longhorn.io/v1beta2",
		"metadata": map[string]any{"resourceVersion": "103", "creationTimestamp": nil,
			"annotations": map[string]any{metav1.InitialEventsAnnotationKey: "true"}}}
	bookmark := map[string]any{"kind": "Volume", "apiVersion": "longhorn.io/v1beta2",
		"metadata": map[string]any{"resourceVersion": "150", "creationTimestamp": nil}}
	gone := map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Failure",
		"message": "too old resource version: 1 (150)", "reason": "Expired", "code": 410}
	// The object before the type (not the apiserver's order, but JSON's).
	objectFirst := `{"object":{"metadata":{"name":"pvc-c","namespace":"ns"},"status":{"robustness":"healthy"}},"type":"ADDED"}`

	stream := event(t, "ADDED", added) + event(t, "ADDED", detached) + event(t, "BOOKMARK", bookmarkEnd) +
		event(t, "MODIFIED", modified) + event(t, "DELETED", detached) + event(t, "BOOKMARK", bookmark) +
		objectFirst + "\n" + event(t, "ERROR", gone)
	evs, err := decodeAll(t, stream)
	if err != io.EOF {
		t.Fatalf("stream ended with %v, want io.EOF", err)
	}
	var got []string
	for _, ev := range evs {
		switch o := ev.Object.(type) {
		case *Volume:
			got = append(got, fmt.Sprintf("%s %s/%s rv=%s uid=%s %+v ann=%v", ev.Type, o.Namespace, o.Name, o.ResourceVersion,
				o.UID, o.Model(), o.Annotations))
		case *metav1.Status:
			err := apierrors.FromObject(o)
			got = append(got, fmt.Sprintf("%s expired=%v %v", ev.Type, apierrors.IsResourceExpired(err), err))
		default:
			got = append(got, fmt.Sprintf("%s %T", ev.Type, o))
		}
	}
	want := []string{
		"ADDED longhorn-system/pvc-a rv=101 uid=uid-a {Namespace:longhorn-system Name:pvc-a Robustness:degraded State:attached Replicas:3 Node:w-1} ann=map[]",
		"ADDED longhorn-system/pvc-b rv= uid= {Namespace:longhorn-system Name:pvc-b Robustness:faulted State:detached Replicas:2 Node:} ann=map[]",
		"BOOKMARK / rv=103 uid= {Namespace: Name: Robustness:unknown State: Replicas:0 Node:} ann=map[k8s.io/initial-events-end:true]",
		"MODIFIED longhorn-system/pvc-a rv=102 uid=uid-a {Namespace:longhorn-system Name:pvc-a Robustness:healthy State:attached Replicas:3 Node:w-1} ann=map[]",
		"DELETED longhorn-system/pvc-b rv= uid= {Namespace:longhorn-system Name:pvc-b Robustness:faulted State:detached Replicas:2 Node:} ann=map[]",
		"BOOKMARK / rv=150 uid= {Namespace: Name: Robustness:unknown State: Replicas:0 Node:} ann=map[]",
		"ADDED ns/pvc-c rv= uid= {Namespace:ns Name:pvc-c Robustness:healthy State: Replicas:0 Node:} ann=map[]",
		"ERROR expired=true too old resource version: 1 (150)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// What the informer's decoding path keeps equals what the unstructured
	// path keeps, event for event.
	for i, u := range []*unstructured.Unstructured{added, detached} {
		if v := evs[i].Object.(*Volume); v.Model() != VolumeToModel(u) {
			t.Errorf("event %d: %+v, unstructured %+v", i, v.Model(), VolumeToModel(u))
		}
	}
}

// TestWatchDecoderOddAndBroken: a volume whose parts have odd types still
// decodes (read as absent, never ending the watch); a stream cut inside an
// event is io.ErrUnexpectedEOF, not a normal end; garbage is an error.
func TestWatchDecoderOddAndBroken(t *testing.T) {
	odd := `{"type":"MODIFIED","object":{"metadata":{"name":"pvc-o","namespace":"ns","annotations":"x"},"spec":[1],"status":"broken"}}`
	evs, err := decodeAll(t, odd)
	if err != io.EOF || len(evs) != 1 {
		t.Fatalf("odd volume: %v events, %v", len(evs), err)
	}
	if v := evs[0].Object.(*Volume); v.Name != "pvc-o" || v.Robustness != model.RobustnessUnknown || v.Replicas != 0 {
		t.Errorf("odd volume: %+v", v)
	}
	for _, tc := range []struct {
		stream string
		want   error
	}{
		{`{"type":"ADDED","object":{"metadata":{"name":"pvc-a"`, io.ErrUnexpectedEOF},
		{`{"type":"ADDED"`, io.ErrUnexpectedEOF},
		{`{"type":"ADDED","object":{}}` + "\n" + `{"type":`, io.ErrUnexpectedEOF},
	} {
		if _, err := decodeAll(t, tc.stream); !errors.Is(err, tc.want) {
			t.Errorf("%q: %v, want %v", tc.stream, err, tc.want)
		}
	}
	for _, s := range []string{`[1]`, `{"type":"ADDED"}`, `{"type":"ADDED","object":{]}`, `<html>`} {
		if _, err := decodeAll(t, s); err == nil || err == io.EOF || err == io.ErrUnexpectedEOF {
			t.Errorf("%q: %v, want a decoding error", s, err)
		}
	}
}

// volumeEvents is a watch stream of n scale-fixture volumes (ADDED), as
// the apiserver sends a WatchList's initial events.
func volumeEvents(tb testing.TB, n int) []byte {
	var buf bytes.Buffer
	for i := range n {
		u := scalefixture.Volume(i, 5000)
		u.SetResourceVersion(fmt.Sprint(1000 + i))
		u.SetUID(types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i)))
		buf.WriteString(event(tb, "ADDED", u))
	}
	return buf.Bytes()
}

// BenchmarkWatchDecode decodes a watch stream of 10,000 realistic Longhorn
// volumes (scalefixture's), as a WatchList's initial events bring them,
// served over loopback HTTP. (With Options.REST the informer lists and then
// watches, ListThenWatch: its first picture comes through decodeList, and
// only the watch events that follow are decoded as here.)
//
//	go test -run '^$' -bench WatchDecode -benchmem ./sources/longhorn/
//
// "unstructured" is the baseline the typed reader is measured against: the
// dynamic client's watch (client-go's framer, WatchEvent and unstructured
// decoder) and a transform into a smaller unstructured map; "typed" is
// this package's restVolumes.Watch and TransformVolume, as the informer
// reads them.
func BenchmarkWatchDecode(b *testing.B) {
	const n = 10000
	stream := volumeEvents(b, n)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(stream)
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL, QPS: -1}
	drain := func(b *testing.B, w watch.Interface, transform func(any) any) {
		defer w.Stop()
		for range n {
			ev, ok := <-w.ResultChan()
			if !ok || ev.Type != watch.Added {
				b.Fatalf("event %+v (open %v)", ev, ok)
			}
			_ = transform(ev.Object)
		}
	}
	b.Run("unstructured", func(b *testing.B) {
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(stream)))
		for b.Loop() {
			w, err := dyn.Resource(VolumeGVR).Watch(context.Background(), metav1.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			drain(b, w, func(o any) any { return oldTransform(o.(*unstructured.Unstructured)) })
		}
	})
	b.Run("typed", func(b *testing.B) {
		rc, err := NewREST(cfg)
		if err != nil {
			b.Fatal(err)
		}
		rv := restVolumes{c: rc}
		b.SetBytes(int64(len(stream)))
		for b.Loop() {
			w, err := rv.Watch(context.Background(), metav1.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			drain(b, w, func(o any) any { t, _ := TransformVolume(o); return t })
		}
	})
}

// oldTransform is what TransformVolume did before the typed informer:
// a smaller unstructured map.
func oldTransform(u *unstructured.Unstructured) *unstructured.Unstructured {
	meta := map[string]any{"name": u.GetName(), "namespace": u.GetNamespace(), "uid": string(u.GetUID()),
		"resourceVersion": u.GetResourceVersion()}
	out := map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": meta}
	if r, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "numberOfReplicas"); ok {
		out["spec"] = map[string]any{"numberOfReplicas": r}
	}
	st := map[string]any{}
	for _, f := range []string{"robustness", "state", "currentNodeID", "ownerID"} {
		if v, ok, _ := unstructured.NestedString(u.Object, "status", f); ok {
			st[f] = v
		}
	}
	out["status"] = st
	return &unstructured.Unstructured{Object: out}
}

// TestDecodedVolumesShareStrings: the strings volumes repeat (namespace,
// state, node) are one string per list and per watch stream, so the
// informer's cache holds each once (issue 35); the values are those read.
func TestDecodedVolumesShareStrings(t *testing.T) {
	var items []any
	var stream strings.Builder
	for i := range 6 {
		v := scalefixture.Volume(i, 2)
		items = append(items, v.Object)
		stream.WriteString(event(t, "ADDED", v))
	}
	raw, err := json.Marshal(map[string]any{"kind": "VolumeList", "apiVersion": "longhorn.io/v1beta2",
		"metadata": map[string]any{"resourceVersion": "7"}, "items": items})
	if err != nil {
		t.Fatal(err)
	}
	l, err := decodeList(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	events, err := decodeAll(t, stream.String())
	if !errors.Is(err, io.EOF) || len(events) != 6 {
		t.Fatalf("%d events, %v", len(events), err)
	}
	watched := make([]Volume, len(events))
	for i, ev := range events {
		watched[i] = *ev.Object.(*Volume)
	}
	for name, vols := range map[string][]Volume{"list": l.Items, "watch": watched} {
		if len(vols) != 6 {
			t.Fatalf("%s: %d volumes", name, len(vols))
		}
		byValue := map[string]*byte{}
		for i, v := range vols {
			want := VolumeToModel(scalefixture.Volume(i, 2))
			if v.Model() != want {
				t.Errorf("%s: volume %d is %+v, want %+v", name, i, v.Model(), want)
			}
			for field, s := range map[string]string{"namespace": v.Namespace, "state": v.State, "node": v.Node} {
				if s == "" {
					t.Fatalf("%s: volume %d has no %s", name, i, field)
				}
				if p, ok := byValue[s]; ok && p != unsafe.StringData(s) {
					t.Errorf("%s: volume %d's %s %q is a string of its own", name, i, field, s)
				}
				byValue[s] = unsafe.StringData(s)
			}
		}
		if len(byValue) < 3 {
			t.Errorf("%s: %d distinct namespace, state and node values, want at least 3 (two nodes)", name, len(byValue))
		}
	}
}

// BenchmarkRetainedVolumeList: the live heap a list of 10,000 of
// scalefixture's volumes keeps per volume once decodeList has read it (what
// the informer's cache holds on a real apiserver): the Volume, its Meta and
// its strings (issue 35).
//
//	go test -run '^$' -bench RetainedVolumeList -benchtime 1x -count 3 ./sources/longhorn/
func BenchmarkRetainedVolumeList(b *testing.B) {
	const n = 10000
	raw := fixtureVolumeListJSON(b, n)
	var perVolume float64
	for b.Loop() {
		var before, after runtime.MemStats
		// Twice: the first only moves sync.Pools' contents (encoding/json's
		// buffer of the whole list) to their victim caches.
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&before)
		l, err := decodeList(bytes.NewReader(raw))
		if err != nil || len(l.Items) != n {
			b.Fatalf("%d volumes, %v", len(l.Items), err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(l)
		runtime.KeepAlive(raw) // so that the list's bytes are not freed in between
		perVolume = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	}
	b.ReportMetric(perVolume, "B/volume")
	b.ReportMetric(0, "ns/op")
}

// fixtureVolumeListJSON is a VolumeList of scalefixture's first n volumes
// (two on each of n/2 nodes, as the scale benchmark's).
func fixtureVolumeListJSON(b *testing.B, n int) []byte {
	items := make([]any, n)
	for i := range n {
		items[i] = scalefixture.Volume(i, n/2).Object
	}
	raw, err := json.Marshal(map[string]any{"kind": "VolumeList", "apiVersion": "longhorn.io/v1beta2",
		"metadata": map[string]any{"resourceVersion": "7"}, "items": items})
	if err != nil {
		b.Fatal(err)
	}
	return raw
}
