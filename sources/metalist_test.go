package sources

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	pw "github.com/rebootwatch/rebootwatch/internal/testenv/pbwiretest"
)

// metaItem is one item of a metadata list as ReadMetadataList gives it.
type metaItem struct{ NS, Name, RV string }

// readAll reads b with ReadMetadataList.
func readAll(b []byte) ([]metaItem, string, error) {
	var out []metaItem
	rv, err := ReadMetadataList(bytes.NewReader(b), func(ns, name, rv []byte) {
		out = append(out, metaItem{string(ns), string(name), string(rv)})
	})
	return out, rv, err
}

// metaScheme knows meta.k8s.io/v1's PartialObjectMetadataList, as the
// apiserver encodes it.
var metaScheme = func() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	if err := metav1.AddMetaToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// referenceMetadataList decodes b with the generated protobuf decoder.
func referenceMetadataList(b []byte) ([]metaItem, string, *metav1.PartialObjectMetadataList, error) {
	obj, _, err := protobuf.NewSerializer(metaScheme, metaScheme).Decode(b, nil, nil)
	if err != nil {
		return nil, "", nil, err
	}
	l, ok := obj.(*metav1.PartialObjectMetadataList)
	if !ok {
		return nil, "", nil, fmt.Errorf("not a PartialObjectMetadataList: %T", obj)
	}
	var out []metaItem
	for _, it := range l.Items {
		out = append(out, metaItem{it.Namespace, it.Name, it.ResourceVersion})
	}
	return out, l.ResourceVersion, l, nil
}

// encodeMetadataList encodes l as the apiserver sends it.
func encodeMetadataList(t testing.TB, l *metav1.PartialObjectMetadataList) []byte {
	l.APIVersion, l.Kind = "meta.k8s.io/v1", "PartialObjectMetadataList"
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(metaScheme, metaScheme).Encode(l, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sampleMetadataList(t testing.TB, n int) []byte {
	l := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "4711"}}
	for i := range n {
		l.Items = append(l.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("pvc-%08d", i), Namespace: "longhorn-system", ResourceVersion: fmt.Sprint(1000 + i),
			UID: "u", Labels: map[string]string{"longhornvolume": "x"}, Generation: 3,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "longhorn-manager", Operation: metav1.ManagedFieldsOperationUpdate,
				FieldsV1: metav1.NewFieldsV1(strings.Repeat(`{"f:spec":{}}`, 40))}},
		}})
	}
	return encodeMetadataList(t, l)
}

func pbEnv(kind string, list []byte) []byte {
	b := append([]byte("k8s\x00"), pw.Bytes(1, pw.String(1, "meta.k8s.io/v1"), pw.String(2, kind))...)
	return append(b, pw.Bytes(2, list)...)
}

func TestReadMetadataList(t *testing.T) {
	got, rv, err := readAll(sampleMetadataList(t, 3))
	want := []metaItem{{"longhorn-system", "pvc-00000000", "1000"}, {"longhorn-system", "pvc-00000001", "1001"},
		{"longhorn-system", "pvc-00000002", "1002"}}
	if err != nil || rv != "4711" || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v %q %v, want %+v 4711", got, rv, err, want)
	}
	if got, _, err := readAll(encodeMetadataList(t, &metav1.PartialObjectMetadataList{})); err != nil || len(got) != 0 {
		t.Fatalf("an empty list: %+v %v", got, err)
	}
}

// oddMetadataLists are encodings the generated decoder reads (or rejects)
// that an apiserver does not send.
func oddMetadataLists() map[string][]byte {
	return map[string][]byte{
		"name as varint":  pbEnv("PartialObjectMetadataList", pw.Bytes(2, pw.Bytes(1, binary.AppendUvarint(pw.Tag(1, PBVarint), 7)))),
		"metadata twice":  pbEnv("PartialObjectMetadataList", pw.Bytes(2, pw.Bytes(1, pw.String(1, "a"), pw.String(6, "1")), pw.Bytes(1, pw.String(6, "2")))),
		"listMeta twice":  pbEnv("PartialObjectMetadataList", append(pw.Bytes(1, pw.String(2, "7")), pw.Bytes(1, pw.String(2, "8"))...)),
		"another kind":    pbEnv("VolumeList", pw.Bytes(2, pw.Bytes(1, pw.String(1, "a")))),
		"kind as varint":  append([]byte("k8s\x00"), append(pw.Bytes(1, binary.AppendUvarint(pw.Tag(2, PBVarint), 1)), pw.Bytes(2)...)...),
		"item as varint":  pbEnv("PartialObjectMetadataList", binary.AppendUvarint(pw.Tag(2, PBVarint), 1)),
		"unknown field":   pbEnv("PartialObjectMetadataList", append(pw.Bytes(2, pw.Bytes(1, pw.String(1, "a")), pw.String(9, "x")), pw.String(7, "y")...)),
		"namespace fixed": pbEnv("PartialObjectMetadataList", pw.Bytes(2, pw.Bytes(1, pw.String(1, "a"), append(pw.Tag(3, PBFixed32), "abcd"...)))),
	}
}

func TestReadMetadataListOddEncodings(t *testing.T) {
	for name, b := range oddMetadataLists() {
		want, wantRV, _, refErr := referenceMetadataList(b)
		got, rv, err := readAll(b)
		switch {
		case refErr != nil && err == nil:
			t.Errorf("%s: the generated decoder fails (%v), ReadMetadataList gives %+v", name, refErr, got)
		case refErr == nil && err != nil:
			t.Errorf("%s: the generated decoder reads it, ReadMetadataList fails: %v", name, err)
		case refErr == nil && (!reflect.DeepEqual(got, want) || rv != wantRV):
			t.Errorf("%s:\ngot  %+v %q\nwant %+v %q", name, got, rv, want, wantRV)
		}
	}
}

// TestReadMetadataListCut: every cut of a list is an error, never a
// shorter list (a cut after the list, in the envelope's empty trailing
// fields, still holds the whole list); JSON is ErrNotProtobuf.
func TestReadMetadataListCut(t *testing.T) {
	b := sampleMetadataList(t, 3)
	whole, _, err := readAll(b)
	if err != nil || len(whole) != 3 {
		t.Fatal(whole, err)
	}
	for i := range len(b) {
		if got, _, err := readAll(b[:i]); err == nil && !reflect.DeepEqual(got, whole) {
			t.Fatalf("cut at %d of %d: no error, %d items", i, len(b), len(got))
		}
	}
	if _, _, err := readAll([]byte(`{"kind":"PartialObjectMetadataList","items":[]}`)); !errors.Is(err, ErrNotProtobuf) {
		t.Fatalf("JSON: %v, want ErrNotProtobuf", err)
	}
}

// TestReadMetadataListClaimedLength: a length is the server's claim; it
// allocates only as the bytes arrive.
func TestReadMetadataListClaimedLength(t *testing.T) {
	b := append(append([]byte("k8s\x00"), pw.Bytes(1, pw.String(2, "PartialObjectMetadataList"))...),
		append(append(pw.Tag(2, PBBytes), binary.AppendUvarint(nil, 1<<31-1)...),
			append(pw.Tag(2, PBBytes), binary.AppendUvarint(nil, 1<<31-16)...)...)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := readAll(b)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("%v, want an unexpected EOF", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
		t.Errorf("%d MiB allocated for %d bytes of input", n>>20, len(b))
	}
}

// FuzzReadMetadataList: what the generated decoder reads, ReadMetadataList
// reads the same, and its canonical encoding too.
func FuzzReadMetadataList(f *testing.F) {
	f.Add(sampleMetadataList(f, 3))
	f.Add(encodeMetadataList(f, &metav1.PartialObjectMetadataList{}))
	for _, b := range oddMetadataLists() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, rv, err := readAll(b)
		want, wantRV, l, refErr := referenceMetadataList(b)
		if err == nil && refErr == nil && (!reflect.DeepEqual(got, want) || rv != wantRV) {
			t.Fatalf("differs from the generated path:\ngot  %+v %q\nwant %+v %q", got, rv, want, wantRV)
		}
		if refErr != nil {
			return
		}
		got, rv, err = readAll(encodeMetadataList(t, l))
		if err != nil || !reflect.DeepEqual(got, want) || rv != wantRV {
			t.Fatalf("canonical encoding: %v\ngot  %+v %q\nwant %+v %q", err, got, rv, want, wantRV)
		}
	})
}

// BenchmarkReadMetadataList reads 10,000 items of Longhorn-volume-sized
// metadata.
func BenchmarkReadMetadataList(b *testing.B) {
	data := sampleMetadataList(b, 10000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		if _, err := ReadMetadataList(bytes.NewReader(data), func(_, _, _ []byte) { n++ }); err != nil || n != 10000 {
			b.Fatal(n, err)
		}
	}
}
