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
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/rebootwatch/rebootwatch/internal/testenv/scalefixture"
	"github.com/rebootwatch/rebootwatch/model"

	pw "github.com/rebootwatch/rebootwatch/internal/testenv/pbwiretest"
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

// pbEnvelope wraps a NodeList's bytes as the apiserver does.
func pbEnvelope(list []byte) []byte {
	b := append([]byte("k8s\x00"), pw.Bytes(1, pw.String(1, "v1"), pw.String(2, "NodeList"))...)
	b = append(b, pw.Bytes(2, list)...)
	return append(b, pw.String(4, "application/vnd.kubernetes.protobuf")...)
}

// oddNodeLists are NodeLists in encodings a hostile or unusual server may
// send and the generated decoder reads (or rejects) in its own way: each is
// a case DecodeNodeList once got wrong.
func oddNodeLists() map[string][]byte {
	item := func(node ...[]byte) []byte { return pw.Bytes(2, node...) }
	return map[string][]byte{
		// A scalar in a field the reader keeps, with the wrong wire type: the
		// generated decoder rejects it; it must not read as a name.
		"name as varint":   pbEnvelope(item(pw.Bytes(1, pw.Varint(1, 7)))),
		"uid as fixed32":   pbEnvelope(item(pw.Bytes(1, pw.String(1, "n"), pw.Tag(5, wireFixed32), []byte("abcd")))),
		"status as varint": pbEnvelope(item(pw.Bytes(1, pw.String(1, "n")), pw.Varint(3, 1))),
		"unschedulable as bytes": pbEnvelope(item(pw.Bytes(1, pw.String(1, "n")),
			pw.Bytes(2, pw.String(4, "\x01")))),
		"kind as varint": append([]byte("k8s\x00"), append(pw.Bytes(1, pw.Varint(2, 1)), pw.Bytes(2)...)...),
		// A repeated message merges into the first (protobuf's rule): the
		// second nodeInfo keeps the first's bootID.
		"nodeInfo twice": pbEnvelope(item(pw.Bytes(1, pw.String(1, "n")),
			pw.Bytes(3, pw.Bytes(7, pw.String(1, "machine"), pw.String(3, "boot"))),
			pw.Bytes(3, pw.Bytes(7, pw.String(6, "Debian")), pw.Bytes(7, pw.String(5, "6.1"))))),
		// A map key given twice: the last value wins.
		"legacy role twice": pbEnvelope(item(pw.Bytes(1, pw.String(1, "n"),
			pw.Bytes(11, pw.String(1, legacyRoleLabel), pw.String(2, "old")),
			pw.Bytes(11, pw.String(1, legacyRoleLabel), pw.String(2, "new"))))),
		"legacy role then empty": pbEnvelope(item(pw.Bytes(1, pw.String(1, "n"),
			pw.Bytes(11, pw.String(1, legacyRoleLabel), pw.String(2, "old")),
			pw.Bytes(11, pw.String(1, legacyRoleLabel), pw.String(2, ""))))),
		"annotation twice": pbEnvelope(item(pw.Bytes(1, pw.String(1, "n"),
			pw.Bytes(12, pw.String(1, "weave.works/kured-reboot-in-progress"), pw.String(2, "a")),
			pw.Bytes(12, pw.String(1, "weave.works/kured-reboot-in-progress"), pw.String(2, "b"))))),
		"metadata twice": pbEnvelope(item(pw.Bytes(1, pw.String(1, "n"), pw.String(5, "u1")), pw.Bytes(1, pw.String(5, "u2")))),
		"listMeta twice": pbEnvelope(append(pw.Bytes(1, pw.String(3, "c1")), pw.Bytes(1, pw.String(2, "7"))...)),
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
		"item": append(append([]byte("k8s\x00"), pw.Bytes(1, pw.String(2, "NodeList"))...),
			append(append(pw.Tag(2, wireBytes), binary.AppendUvarint(nil, 1<<31-1)...),
				append(pw.Tag(2, wireBytes), binary.AppendUvarint(nil, 1<<31-16)...)...)...),
		"typeMeta": append(append([]byte("k8s\x00"), pw.Tag(1, wireBytes)...), binary.AppendUvarint(nil, 1<<31-1)...),
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

// clientGoEvents decodes b as client-go's typed watch does and returns the
// raw objects (to re-encode canonically) with the decoded events.
func clientGoEvents(t testing.TB, b []byte) ([]watchEvent, []decoded, error) {
	dec := clientGoDecoder(t, nopCloser(b))
	var raw []watchEvent
	var out []decoded
	for {
		et, obj, err := dec.Decode()
		if err != nil {
			return raw, out, err
		}
		d, derr := decodeAll(&oneEvent{et: et, obj: obj})
		if derr != io.EOF || len(d) != 1 {
			// An object of another kind (client-go decodes any kind the
			// scheme knows; the reflector drops it for its type).
			return raw, out, errors.New("not a Node or Status")
		}
		raw = append(raw, watchEvent{et, obj.DeepCopyObject()})
		out = append(out, d[0])
	}
}

// oneEvent is a watch.Decoder of one event.
type oneEvent struct {
	et   watch.EventType
	obj  k8sruntime.Object
	done bool
}

func (o *oneEvent) Decode() (watch.EventType, k8sruntime.Object, error) {
	if o.done {
		return "", nil, io.EOF
	}
	o.done = true
	return o.et, o.obj, nil
}

func (o *oneEvent) Close() {}

// pbFrame is one watch frame: an event of type typ whose object is obj
// (already in its envelope), parts appended to the event.
func pbFrame(typ string, obj []byte, parts ...[]byte) []byte {
	ev := append(pw.String(1, typ), pw.Bytes(2, pw.Bytes(1, obj))...)
	ev = append(ev, bytes.Join(parts, nil)...)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(ev))), ev...)
}

// pbObject wraps a message in the apiserver's envelope as kind.
func pbObject(kind string, msg ...[]byte) []byte {
	return append([]byte("k8s\x00"), append(pw.Bytes(1, pw.String(1, "v1"), pw.String(2, kind)), pw.Bytes(2, msg...)...)...)
}

// oddNodeEvents are watch frames in encodings the generated decoders read
// (or reject) in their own way.
func oddNodeEvents() map[string][]byte {
	named := pw.Bytes(1, pw.String(1, "n"), pw.String(5, "u"), pw.String(6, "7"))
	return map[string][]byte{
		"nodeInfo twice": pbFrame("ADDED", pbObject("Node", named,
			pw.Bytes(3, pw.Bytes(7, pw.String(1, "machine"), pw.String(3, "boot"))),
			pw.Bytes(3, pw.Bytes(7, pw.String(5, "Debian")), pw.Bytes(7, pw.String(4, "6.1"))))),
		"legacy role twice": pbFrame("ADDED", pbObject("Node", pw.Bytes(1, pw.String(1, "n"),
			pw.Bytes(11, pw.String(1, legacyRoleLabel), pw.String(2, "old")),
			pw.Bytes(11, pw.String(1, legacyRoleLabel), pw.String(2, "new"))))),
		"initial-events-end twice": pbFrame("BOOKMARK", pbObject("Node", pw.Bytes(1, pw.String(6, "9"),
			pw.Bytes(12, pw.String(1, metav1.InitialEventsAnnotationKey), pw.String(2, "true")),
			pw.Bytes(12, pw.String(1, metav1.InitialEventsAnnotationKey), pw.String(2, "false"))))),
		"namespaced node":  pbFrame("MODIFIED", pbObject("Node", pw.Bytes(1, pw.String(1, "n"), pw.String(3, "ns")))),
		"metadata twice":   pbFrame("ADDED", pbObject("Node", named, pw.Bytes(1, pw.String(5, "u2")))),
		"name as varint":   pbFrame("ADDED", pbObject("Node", pw.Bytes(1, pw.Varint(1, 7)))),
		"rv as varint":     pbFrame("ADDED", pbObject("Node", pw.Bytes(1, pw.Varint(6, 7)))),
		"nodeInfo varint":  pbFrame("ADDED", pbObject("Node", named, pw.Bytes(3, pw.Bytes(7, pw.Varint(3, 1))))),
		"type twice":       pbFrame("ADDED", pbObject("Node", named), pw.String(1, "DELETED")),
		"object twice":     pbFrame("ADDED", pbObject("Node", named), pw.Bytes(2, pw.Bytes(1, pbObject("Node", pw.Bytes(1, pw.String(1, "m")))))),
		"object, no raw":   pbFrame("ADDED", pbObject("Node", named), pw.Bytes(2)),
		"type as varint":   append(binary.BigEndian.AppendUint32(nil, 2), pw.Varint(1, 1)...),
		"typeMeta twice":   pbFrame("ADDED", append(pbObject("Status"), append(pw.Bytes(1, pw.String(2, "Node")), pw.Bytes(2, named)...)...)),
		"status":           pbFrame("ERROR", pbObject("Status", pw.String(2, "Failure"), pw.Varint(6, 410), pw.String(4, "Expired"))),
		"status in ADDED":  pbFrame("ADDED", pbObject("Status", pw.Varint(6, 500))),
		"kind without ver": pbFrame("ADDED", append([]byte("k8s\x00"), append(pw.Bytes(1, pw.String(2, "Node")), pw.Bytes(2, named)...)...)),
		"encoded":          pbFrame("ADDED", append(pbObject("Node", named), pw.String(3, "gzip")...)),
		"content type":     pbFrame("ADDED", append(pbObject("Node", named), pw.String(4, "application/json")...)),
	}
}

// TestNodeWatchDecoderOddEncodings: on each odd frame, nodeWatchDecoder
// fails when client-go fails and gives what it gives when it succeeds.
func TestNodeWatchDecoderOddEncodings(t *testing.T) {
	for name, b := range oddNodeEvents() {
		want, wantErr := decodeAll(clientGoDecoder(t, nopCloser(b)))
		got, err := decodeAll(newNodeWatchDecoder(nopCloser(b)))
		switch {
		case wantErr != io.EOF && err == io.EOF:
			t.Errorf("%s: client-go fails (%v), nodeWatchDecoder gives %+v", name, wantErr, got)
		case wantErr == io.EOF && err != io.EOF:
			t.Errorf("%s: client-go reads it (%+v), nodeWatchDecoder fails: %v", name, want, err)
		case !reflect.DeepEqual(got, want):
			t.Errorf("%s:\ngot  %+v\nwant %+v", name, got, want)
		}
	}
}

// TestNodeWatchDecoderClaimedLength: a frame, or a field inside one, that
// claims more bytes than arrive allocates nothing near the claim.
func TestNodeWatchDecoderClaimedLength(t *testing.T) {
	frame := func(n uint32, b ...byte) []byte { return append(binary.BigEndian.AppendUint32(nil, n), b...) }
	for name, b := range map[string][]byte{
		"frame":       frame(maxWatchFrame, pw.Tag(1, wireBytes)...),
		"event field": frame(maxWatchFrame, append(pw.Tag(2, wireBytes), binary.AppendUvarint(nil, 1<<31-1)...)...),
		"two frames":  append(watchStream(t, sampleEvents()[0]), frame(maxWatchFrame-1, 1, 2, 3)...),
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := decodeAll(newNodeWatchDecoder(nopCloser(b)))
		runtime.ReadMemStats(&after)
		if err != io.ErrUnexpectedEOF {
			t.Errorf("%s: %v, want an unexpected EOF", name, err)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 4<<20 {
			t.Errorf("%s: %d MiB allocated for %d bytes of input", name, n>>20, len(b))
		}
	}
}

// FuzzNodeWatchDecoder: on any bytes nodeWatchDecoder never panics; the
// events it and client-go's decoder (with TransformNode) both give are the
// same, in the same order (one may stop earlier on what the other
// tolerates); when both read the whole stream they give the same events;
// and whatever client-go reads, its canonical encoding (as the apiserver
// writes it) nodeWatchDecoder reads to the same events.
func FuzzNodeWatchDecoder(f *testing.F) {
	// Small seeds: the fuzzer all but stops on a stream of kubelet-sized
	// nodes (tens of KB); TestNodeWatchDecoderMatchesClientGo covers those.
	evs := sampleEvents()
	small := watchStream(f, evs[2], evs[3], evs[4], evs[6], evs[7], evs[8])
	f.Add(small)
	f.Add(small[:len(small)/2])
	for _, b := range oddNodeEvents() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeAll(newNodeWatchDecoder(nopCloser(b)))
		raw, want, wantErr := clientGoEvents(t, b)
		n := min(len(got), len(want))
		if n > 0 && !reflect.DeepEqual(got[:n], want[:n]) {
			t.Fatalf("differs from client-go:\ngot  %+v\nwant %+v", got, want)
		}
		quiet := func(err error) bool { return err == io.EOF || err == io.ErrUnexpectedEOF }
		if quiet(err) && quiet(wantErr) && len(got) != len(want) {
			t.Fatalf("both read the stream, %d events against client-go's %d", len(got), len(want))
		}
		if len(raw) == 0 {
			return
		}
		canon := watchStream(t, raw...)
		got, err = decodeAll(newNodeWatchDecoder(nopCloser(canon)))
		if err != io.EOF || !reflect.DeepEqual(got, want) {
			t.Fatalf("canonical encoding: %v\ngot  %+v\nwant %+v", err, got, want)
		}
	})
}
