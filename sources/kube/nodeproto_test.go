package kube

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"testing"
	"testing/iotest"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/rebootwatch/rebootwatch/internal/testenv/scalefixture"
	"github.com/rebootwatch/rebootwatch/model"
)

// nodeListProto encodes nodes as the apiserver sends a NodeList page in
// protobuf (envelope, runtime.Unknown, NodeList).
func nodeListProto(t testing.TB, cont string, nodes ...*corev1.Node) []byte {
	t.Helper()
	l := &corev1.NodeList{ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: cont}}
	for _, n := range nodes {
		l.Items = append(l.Items, *n)
	}
	enc := scheme.Codecs.EncoderForVersion(protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), corev1.SchemeGroupVersion)
	var buf bytes.Buffer
	if err := enc.Encode(l, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// generatedDecode is the path DecodeNodeList replaces: the generated
// decoder into full Nodes, then TransformNode and NodeToModel.
func generatedDecode(t testing.TB, b []byte) ([]model.Node, string) {
	t.Helper()
	obj, _, err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Decode(b, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := obj.(*corev1.NodeList)
	var out []model.Node
	for i := range l.Items {
		n, _ := TransformNode(&l.Items[i])
		out = append(out, NodeToModel(n.(*corev1.Node)))
	}
	return out, l.Continue
}

// TestDecodeNodeListMatchesTransformNode: the protobuf reader gives the
// model exactly what NodeToModel(TransformNode(n)) gives of a page decoded
// whole: kubelet-sized nodes,
// role labels old and new, kured's annotations among others, cordons,
// deletion timestamps, nodes with nothing set.
func TestDecodeNodeListMatchesTransformNode(t *testing.T) {
	odd := node("odd", false, map[string]string{"kubernetes.io/role": "infra", "node-role.kubernetes.io/gpu": "", "team": "x"})
	odd.Spec.Unschedulable = true
	odd.Spec.Taints = []corev1.Taint{{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule}}
	del := metav1.NewTime(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))
	odd.DeletionTimestamp = &del
	odd.Annotations["weave.works/kured-most-recent-reboot-needed"] = "2026-11-30T07:00:00Z"
	odd.CreationTimestamp = metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	// Five conditions, as a node with a CNI's NetworkUnavailable has:
	// appended one by one they would keep room for eight.
	odd.Status.Conditions = append(odd.Status.Conditions,
		corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, Reason: "RouteCreated"},
		corev1.NodeCondition{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse},
		corev1.NodeCondition{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse})
	// managedFields: the kubelet's status, a cordon, and a newer apply that
	// also owns spec.unschedulable: the newest owner of the field is kept.
	mf := func(manager string, at time.Time, fields string) metav1.ManagedFieldsEntry {
		t := metav1.NewTime(at)
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &t,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
	}
	odd.ManagedFields = []metav1.ManagedFieldsEntry{
		mf("kubelet", time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), `{"f:status":{"f:conditions":{}}}`),
		mf("kured", time.Date(2026, 11, 30, 7, 1, 0, 0, time.UTC), `{"f:spec":{"f:unschedulable":{}}}`),
		mf("ops", time.Date(2026, 11, 30, 7, 2, 0, 0, time.UTC), `{"f:metadata":{"f:labels":{}},"f:spec":{"f:unschedulable":{}}}`),
		mf("liar", time.Date(2026, 11, 30, 9, 9, 0, 0, time.UTC), `{"f:metadata":{"f:annotations":{"f:note":{"f:unschedulable":{}}}}}`),
	}
	nodes := []*corev1.Node{scalefixture.Node(0), scalefixture.Node(7), odd, node("plain", true, nil), {ObjectMeta: metav1.ObjectMeta{Name: "bare"}}}
	b := nodeListProto(t, "next-page", nodes...)
	want, wantCont := generatedDecode(t, b)
	got, cont, err := DecodeNodeList(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if cont != wantCont || cont != "next-page" {
		t.Errorf("continue %q, want %q", cont, wantCont)
	}
	if !reflect.DeepEqual(got, want) {
		for i := range max(len(got), len(want)) {
			if i >= len(got) || i >= len(want) || !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("node %d:\ngot  %+v\nwant %+v", i, got[min(i, len(got)-1)], want[min(i, len(want)-1)])
			}
		}
	}
	// Each node's conditions are kept in a slice of their size.
	for _, n := range got {
		if cap(n.Conditions) != len(n.Conditions) {
			t.Errorf("%s: %d conditions in a slice with room for %d", n.Name, len(n.Conditions), cap(n.Conditions))
		}
	}
	// However the bytes arrive.
	for name, r := range map[string]io.Reader{"one byte": iotest.OneByteReader(bytes.NewReader(b)), "half": iotest.HalfReader(bytes.NewReader(b))} {
		if again, _, err := DecodeNodeList(r); err != nil || !reflect.DeepEqual(again, got) {
			t.Errorf("%s: %v, %d nodes", name, err, len(again))
		}
	}
	if !got[2].Unschedulable || !reflect.DeepEqual(got[2].Roles, []string{"gpu", "infra"}) || len(got[2].Annotations) != 2 ||
		got[0].BootID != "boot-00000" || len(got[0].Conditions) != 4 || got[2].Created.IsZero() ||
		got[2].UnschedulableSetBy != "ops" || !got[2].UnschedulableSetAt.Equal(time.Date(2026, 11, 30, 7, 2, 0, 0, time.UTC)) || !got[0].UnschedulableSetAt.IsZero() {
		t.Errorf("unexpected nodes: %+v\n%+v", got[2], got[0])
	}
}

// TestDecodeNodeListRejects: a cut page is an error (never fewer nodes),
// and so is anything but a protobuf NodeList.
func TestDecodeNodeListRejects(t *testing.T) {
	b := nodeListProto(t, "", scalefixture.Node(1), scalefixture.Node(2))
	full, _, err := DecodeNodeList(bytes.NewReader(b))
	if err != nil || len(full) != 2 {
		t.Fatal(len(full), err)
	}
	for i := range len(b) {
		got, _, err := DecodeNodeList(bytes.NewReader(b[:i]))
		// A cut after the NodeList's bytes only loses the envelope's
		// trailing content type: still the whole list.
		if err == nil && !reflect.DeepEqual(got, full) {
			t.Fatalf("cut at %d of %d: no error and %d nodes", i, len(b), len(got))
		}
	}
	pods := &corev1.PodList{Items: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "p"}}}}
	var buf bytes.Buffer
	enc := scheme.Codecs.EncoderForVersion(protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), corev1.SchemeGroupVersion)
	if err := enc.Encode(pods, &buf); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"pods": buf.Bytes(), "json": []byte(`{"kind":"NodeList","items":[]}`), "empty": nil,
		"garbage": append([]byte("k8s\x00"), 0xff, 0xff, 0xff)} {
		if _, _, err := DecodeNodeList(bytes.NewReader(body)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// BenchmarkDecodeNodeList reads a list of 500 kubelet-sized nodes (3 MB
// of protobuf, as the apiserver serves the scale benchmark's nodes). (It
// ranged over ListPageSize, which is 0 since one-shot lists are one
// request: it measured an empty list.)
func BenchmarkDecodeNodeList(b *testing.B) {
	var nodes []*corev1.Node
	for i := range 500 {
		nodes = append(nodes, scalefixture.Node(i))
	}
	body := nodeListProto(b, "", nodes...)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.Run("generated+TransformNode+NodeToModel", func(b *testing.B) {
		s := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
		for b.Loop() {
			obj, _, err := s.Decode(body, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			l := obj.(*corev1.NodeList)
			out := make([]model.Node, 0, len(l.Items))
			for i := range l.Items {
				n, _ := TransformNode(&l.Items[i])
				out = append(out, NodeToModel(n.(*corev1.Node)))
			}
			if len(out) != len(nodes) {
				b.Fatal(len(out))
			}
		}
	})
	b.Run("DecodeNodeList", func(b *testing.B) {
		for b.Loop() {
			out, _, err := DecodeNodeList(bytes.NewReader(body))
			if err != nil || len(out) != len(nodes) {
				b.Fatal(err, len(out))
			}
		}
	})
}

// eachFieldProtowire is eachField written with protowire's Consume
// functions, kept to measure against eachField (BenchmarkEachField).
func eachFieldProtowire(b []byte, fn func(field int, wire uint64, v []byte) error) error {
	for len(b) > 0 {
		field, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("bad field tag: %w", protowire.ParseError(n))
		}
		b = b[n:]
		var v []byte
		switch typ {
		case protowire.VarintType:
			_, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			_, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			_, n = protowire.ConsumeFixed32(b)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			return fmt.Errorf("field %d: unsupported wire type %d", field, typ)
		}
		if n < 0 {
			return fmt.Errorf("field %d: %w", field, protowire.ParseError(n))
		}
		if typ != protowire.BytesType {
			v = b[:n]
		}
		b = b[n:]
		if err := fn(int(field), uint64(typ), v); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkEachField walks 50 kubelet Nodes' fields, nested messages
// included, with eachField and with eachFieldProtowire, in two rounds so
// that neither always runs first:
//
//	go test -run '^$' -bench EachField -cpu 1 -count 8 ./sources/kube/
func BenchmarkEachField(b *testing.B) {
	var nodes []*corev1.Node
	for i := range 50 {
		nodes = append(nodes, scalefixture.Node(i))
	}
	var items [][]byte
	if _, err := decodeNodeList(bytes.NewReader(nodeListProto(b, "", nodes...)), func(item []byte) error {
		items = append(items, bytes.Clone(item))
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	var size int
	for _, it := range items {
		size += len(it)
	}
	// walk visits every field, and tries each length-delimited one as a
	// message of its own, as the decoders descend.
	var walk func(b []byte, each func([]byte, func(int, uint64, []byte) error) error, depth int) int
	walk = func(b []byte, each func([]byte, func(int, uint64, []byte) error) error, depth int) int {
		n := 0
		_ = each(b, func(_ int, wire uint64, v []byte) error {
			n++
			if wire == wireBytes && depth < 4 {
				n += walk(v, each, depth+1)
			}
			return nil
		})
		return n
	}
	if a, p := walk(items[0], eachField, 0), walk(items[0], eachFieldProtowire, 0); a != p || a < 100 {
		b.Fatalf("eachField saw %d fields, eachFieldProtowire %d", a, p)
	}
	variants := []struct {
		name string
		each func([]byte, func(int, uint64, []byte) error) error
	}{{"binary", eachField}, {"protowire", eachFieldProtowire}}
	for round := range 2 {
		for i := range variants {
			v := variants[(i+round)%2]
			b.Run(v.name, func(b *testing.B) {
				b.SetBytes(int64(size))
				for b.Loop() {
					for _, it := range items {
						walk(it, v.each, 0)
					}
				}
			})
		}
	}
}
