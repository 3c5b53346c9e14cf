package kube

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/rebootwatch/rebootwatch/internal/scalefixture"
	"github.com/rebootwatch/rebootwatch/model"
)

// referenceNodeList decodes b as the generated path does (the protobuf
// serializer into a full NodeList, then TransformNode and NodeToModel); it
// also returns the decoded list.
func referenceNodeList(b []byte) ([]model.Node, string, *corev1.NodeList, error) {
	obj, _, err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Decode(b, nil, nil)
	if err != nil {
		return nil, "", nil, err
	}
	l, ok := obj.(*corev1.NodeList)
	if !ok {
		return nil, "", nil, fmt.Errorf("not a NodeList: %T", obj)
	}
	var out []model.Node
	for i := range l.Items {
		n, _ := TransformNode(&l.Items[i])
		out = append(out, NodeToModel(n.(*corev1.Node)))
	}
	return out, l.Continue, l, nil
}

// Hand-made protobuf, for encodings the generated Marshal never makes.
func pbTag(f, wire int) []byte { return binary.AppendUvarint(nil, uint64(f<<3|wire)) }

func pbBytes(f int, parts ...[]byte) []byte {
	v := bytes.Join(parts, nil)
	b := append(pbTag(f, wireBytes), binary.AppendUvarint(nil, uint64(len(v)))...)
	return append(b, v...)
}

func pbString(f int, s string) []byte { return pbBytes(f, []byte(s)) }

func pbVarint(f int, v uint64) []byte { return binary.AppendUvarint(pbTag(f, wireVarint), v) }

// pbEnvelope wraps a NodeList's bytes as the apiserver does.
func pbEnvelope(list []byte) []byte {
	b := append([]byte("k8s\x00"), pbBytes(1, pbString(1, "v1"), pbString(2, "NodeList"))...)
	b = append(b, pbBytes(2, list)...)
	return append(b, pbString(4, "application/vnd.kubernetes.protobuf")...)
}

// oddNodeLists are NodeLists in encodings a hostile or unusual server may
// send and the generated decoder reads (or rejects) in its own way: each is
// a case DecodeNodeList once got wrong.
func oddNodeLists() map[string][]byte {
	item := func(node ...[]byte) []byte { return pbBytes(2, node...) }
	return map[string][]byte{
		// A scalar in a field the reader keeps, with the wrong wire type: the
		// generated decoder rejects it; it must not read as a name.
		"name as varint":   pbEnvelope(item(pbBytes(1, pbVarint(1, 7)))),
		"uid as fixed32":   pbEnvelope(item(pbBytes(1, pbString(1, "n"), pbTag(5, wireFixed32), []byte("abcd")))),
		"status as varint": pbEnvelope(item(pbBytes(1, pbString(1, "n")), pbVarint(3, 1))),
		"unschedulable as bytes": pbEnvelope(item(pbBytes(1, pbString(1, "n")),
			pbBytes(2, pbString(4, "\x01")))),
		"kind as varint": append([]byte("k8s\x00"), append(pbBytes(1, pbVarint(2, 1)), pbBytes(2)...)...),
		// A repeated message merges into the first (protobuf's rule): the
		// second nodeInfo keeps the first's bootID.
		"nodeInfo twice": pbEnvelope(item(pbBytes(1, pbString(1, "n")),
			pbBytes(3, pbBytes(7, pbString(1, "machine"), pbString(3, "boot"))),
			pbBytes(3, pbBytes(7, pbString(6, "Debian")), pbBytes(7, pbString(5, "6.1"))))),
		// A map key given twice: the last value wins.
		"legacy role twice": pbEnvelope(item(pbBytes(1, pbString(1, "n"),
			pbBytes(11, pbString(1, legacyRoleLabel), pbString(2, "old")),
			pbBytes(11, pbString(1, legacyRoleLabel), pbString(2, "new"))))),
		"legacy role then empty": pbEnvelope(item(pbBytes(1, pbString(1, "n"),
			pbBytes(11, pbString(1, legacyRoleLabel), pbString(2, "old")),
			pbBytes(11, pbString(1, legacyRoleLabel), pbString(2, ""))))),
		"annotation twice": pbEnvelope(item(pbBytes(1, pbString(1, "n"),
			pbBytes(12, pbString(1, "weave.works/kured-reboot-in-progress"), pbString(2, "a")),
			pbBytes(12, pbString(1, "weave.works/kured-reboot-in-progress"), pbString(2, "b"))))),
		"metadata twice": pbEnvelope(item(pbBytes(1, pbString(1, "n"), pbString(5, "u1")), pbBytes(1, pbString(5, "u2")))),
		"listMeta twice": pbEnvelope(append(pbBytes(1, pbString(3, "c1")), pbBytes(1, pbString(2, "7"))...)),
	}
}

// TestDecodeNodeListOddEncodings: on each odd encoding, DecodeNodeList fails
// when the generated path fails and gives what it gives when it succeeds.
func TestDecodeNodeListOddEncodings(t *testing.T) {
	for name, b := range oddNodeLists() {
		want, wantCont, _, refErr := referenceNodeList(b)
		got, cont, err := DecodeNodeList(bytes.NewReader(b))
		switch {
		case refErr != nil && err == nil:
			t.Errorf("%s: the generated decoder fails (%v), DecodeNodeList gives %+v", name, refErr, got)
		case refErr == nil && err != nil:
			t.Errorf("%s: the generated decoder reads it, DecodeNodeList fails: %v", name, err)
		case refErr == nil && (!reflect.DeepEqual(got, want) || cont != wantCont):
			t.Errorf("%s:\ngot  %+v %q\nwant %+v %q", name, got, cont, want, wantCont)
		}
	}
}

// TestDecodeNodeListClaimedLength: a length the server claims but never
// sends allocates nothing near it (a hostile server's 2 GiB field cost
// 2 GiB before the first byte of it was read).
func TestDecodeNodeListClaimedLength(t *testing.T) {
	for name, b := range map[string][]byte{
		"item": append(append([]byte("k8s\x00"), pbBytes(1, pbString(2, "NodeList"))...),
			append(append(pbTag(2, wireBytes), binary.AppendUvarint(nil, 1<<31-1)...),
				append(pbTag(2, wireBytes), binary.AppendUvarint(nil, 1<<31-16)...)...)...),
		"typeMeta": append(append([]byte("k8s\x00"), pbTag(1, wireBytes)...), binary.AppendUvarint(nil, 1<<31-1)...),
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _, err := DecodeNodeList(bytes.NewReader(b))
		runtime.ReadMemStats(&after)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s: %v, want an unexpected EOF", name, err)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
			t.Errorf("%s: %d MiB allocated for %d bytes of input", name, n>>20, len(b))
		}
	}
}

// FuzzDecodeNodeList: on any bytes DecodeNodeList never panics, and when
// both it and the generated path read them they agree. Whatever the
// generated path reads, its own canonical encoding (Marshal in the
// apiserver's envelope) DecodeNodeList reads too, to the same nodes.
func FuzzDecodeNodeList(f *testing.F) {
	odd := node("odd", false, map[string]string{"kubernetes.io/role": "infra", "node-role.kubernetes.io/gpu": "", "team": "x"})
	odd.Spec.Unschedulable = true
	del := metav1.Now()
	odd.DeletionTimestamp = &del
	f.Add(nodeListProto(f, "next-page", scalefixture.Node(3), odd))
	f.Add(nodeListProto(f, "", node("plain", true, nil), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}))
	f.Add(nodeListProto(f, ""))
	for _, b := range oddNodeLists() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, cont, err := DecodeNodeList(bytes.NewReader(b))
		want, wantCont, l, refErr := referenceNodeList(b)
		if err == nil && refErr == nil && (!reflect.DeepEqual(got, want) || cont != wantCont) {
			t.Fatalf("differs from the generated path:\ngot  %+v %q\nwant %+v %q", got, cont, want, wantCont)
		}
		if refErr != nil {
			return
		}
		raw, err := l.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		canon := pbEnvelope(raw)
		got, cont, err = DecodeNodeList(bytes.NewReader(canon))
		if err != nil || !reflect.DeepEqual(got, want) || cont != wantCont {
			t.Fatalf("canonical encoding: %v\ngot  %+v %q\nwant %+v %q", err, got, cont, want, wantCont)
		}
	})
}
