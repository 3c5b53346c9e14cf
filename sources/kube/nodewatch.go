package kube

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
)

// This file is the node informer's list and watch against a real apiserver
// (the dashboard, watch and the agent): both come as protobuf and are read
// with nodeproto.go's reader straight into a Node — the model's node (as
// NodeToModel(TransformNode(n)) makes it) and the identity the informer's
// cache needs. A full Node is never decoded (unless the server sends no
// protobuf: then restNodes takes JSON through the typed client, as
// client-go would): client-go's path decoded every
// event's WatchEvent wrapper, copied its raw bytes, decoded the whole Node
// (images, managedFields, capacity) and then dropped most of it in
// TransformNode. The fake clientset of the demo and of the unit tests keeps
// that generic path (kube.go).
//
// The watch stream, as the apiserver writes it for
// application/vnd.kubernetes.protobuf;stream=watch: frames of a 4-byte
// big-endian length and that many bytes, each a metav1.WatchEvent in
// protobuf without the envelope (type = 1, object = 2, a RawExtension
// whose raw = 1 is the object in the apiserver's envelope: "k8s\x00" and a
// runtime.Unknown around the Node, or around the Status of an ERROR event).

// Node is what the node informer keeps of a Node on a real apiserver: the
// model's node and its identity (a sources.Meta: name, namespace, uid and
// resourceVersion and, on the BOOKMARK that ends a WatchList's initial
// events, the k8s.io/initial-events-end annotation the reflector looks
// for), not a metav1.ObjectMeta, 160 bytes larger. What the model keeps
// of a node is decided in one place, the mapping TransformNode and
// NodeToModel make (transform.go), which the protobuf reader (nodeproto.go)
// follows field by field; tests pin the two together.
type Node struct {
	sources.Meta
	// Model is the node as the model sees it. The source hands out copies
	// (cloneNode), never this one.
	Model model.Node
}

// GetObjectKind returns no type metadata: a Node carries none (the informer
// knows what it watches).
func (n *Node) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (n *Node) DeepCopyObject() runtime.Object {
	return &Node{Meta: n.Meta.DeepCopy(), Model: cloneNode(&n.Model)}
}

// NodeList is a list of Nodes as the informer's list returns it.
type NodeList struct {
	metav1.ListMeta
	Items []*Node
}

// GetObjectKind returns no type metadata, as Node's.
func (l *NodeList) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (l *NodeList) DeepCopyObject() runtime.Object {
	c := &NodeList{}
	l.ListMeta.DeepCopyInto(&c.ListMeta)
	if l.Items != nil {
		c.Items = make([]*Node, len(l.Items))
		for i, n := range l.Items {
			c.Items[i] = n.DeepCopyObject().(*Node)
		}
	}
	return c
}

// cloneNode copies a model node, its slices and map included, so nothing
// handed to the model points into the informer's cache.
func cloneNode(m *model.Node) model.Node {
	c := *m
	c.Roles = slices.Clone(m.Roles)
	c.Conditions = slices.Clone(m.Conditions)
	c.Annotations = maps.Clone(m.Annotations)
	return c
}

// newNode reads one Node's protobuf (the bytes inside its envelope) into
// a *Node, its shared strings through ss.
func newNode(b []byte, ss *sources.Strings) (*Node, error) {
	n := &Node{}
	var x nodeExtra
	if err := decodeNode(b, &n.Model, &x, ss); err != nil {
		return nil, err
	}
	n.Meta = informerMeta(n.Model.Name, x.namespace, n.Model.UID, x.resourceVersion, x.initialEventsEnd == "true")
	return n, nil
}

// informerMeta is the Meta a Node keeps: its name, namespace, uid and
// resourceVersion, and the initial-events-end annotation when it ends a
// WatchList's initial events.
func informerMeta(name, namespace, uid, rv string, initialEventsEnd bool) sources.Meta {
	m := sources.Meta{Name: name, Namespace: namespace, UID: types.UID(uid), ResourceVersion: rv}
	if initialEventsEnd {
		m.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return m
}

// ReadNodeList reads a NodeList in the apiserver's protobuf encoding from r
// as it streams, as DecodeNodeList does, into what the node informer keeps:
// a *NodeList of *Node with the list's resourceVersion and continue token.
func ReadNodeList(r io.Reader) (*NodeList, error) {
	l := &NodeList{}
	ss := &sources.Strings{}
	lm, err := decodeNodeList(r, func(b []byte) error {
		n, err := newNode(b, ss)
		if err != nil {
			return err
		}
		l.Items = append(l.Items, n)
		return nil
	})
	if err != nil {
		return nil, err
	}
	l.ListMeta = lm
	return l, nil
}

// protobufAccept asks for protobuf only: a server that cannot send it
// answers 406 (and restNodes falls back to the typed client), never a JSON
// body the readers would take for garbage.
const protobufAccept = "application/vnd.kubernetes.protobuf"

// restNodes lists and watches nodes as protobuf through the clientset's
// REST client, reading lists and watch events straight into *Node: the
// node informer's ListWatch on a real apiserver.
//
// A proxy between rebootwatch and the apiserver that cannot pass protobuf
// on answers 406 Not Acceptable (or, ignoring the Accept header, a list
// that is not protobuf). client-go would have taken JSON there, so with
// typed set restNodes then does the same, for good: every later list and
// watch goes through the typed client (the clientset's content
// negotiation, JSON included), its nodes made into *Node as newNode makes
// them (nodeFromTyped).
type restNodes struct {
	c rest.Interface
	// typed is the fallback for a server that sends no protobuf; nil: none.
	typed corev1client.NodeInterface
	// noProtobuf is set once the server answered a protobuf request with
	// 406 or with something else (set only with typed).
	noProtobuf *atomic.Bool
}

// newRESTNodes is restNodes for cs's nodes, with the typed client as the
// fallback.
func newRESTNodes(rc rest.Interface, cs kubernetes.Interface) restNodes {
	return restNodes{c: rc, typed: cs.CoreV1().Nodes(), noProtobuf: &atomic.Bool{}}
}

// useTyped reports whether requests go through the typed client.
func (r restNodes) useTyped() bool { return r.typed != nil && r.noProtobuf.Load() }

// fallBack reports whether err says the server cannot send protobuf and
// there is a typed client to use instead; from then on, it is used.
func (r restNodes) fallBack(err error) bool {
	if r.typed == nil {
		return false
	}
	if apierrors.IsNotAcceptable(err) || errors.Is(err, errNotProtobuf) {
		r.noProtobuf.Store(true)
		return true
	}
	return false
}

// nodeFromTyped is a typed client's Node as the informer keeps it, as
// newNode reads it from protobuf: the model's node and its identity (and
// the initial-events-end annotation of a WatchList's BOOKMARK).
func nodeFromTyped(n *corev1.Node) *Node {
	return &Node{Model: NodeToModel(n), Meta: informerMeta(n.Name, n.Namespace, string(n.UID), n.ResourceVersion,
		n.Annotations[metav1.InitialEventsAnnotationKey] == "true")}
}

// listTyped lists the nodes through the typed client into a *NodeList.
func (r restNodes) listTyped(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	tl, err := r.typed.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	l := &NodeList{ListMeta: tl.ListMeta, Items: make([]*Node, len(tl.Items))}
	for i := range tl.Items {
		l.Items[i] = nodeFromTyped(&tl.Items[i])
	}
	return l, nil
}

// watchTyped watches the nodes through the typed client, its events'
// nodes made into *Node.
func (r restNodes) watchTyped(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := r.typed.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if n, ok := ev.Object.(*corev1.Node); ok {
			ev.Object = nodeFromTyped(n)
		}
		return ev, true
	}), nil
}

// request is the typed client's request for nodes with opts, asking for
// protobuf.
func (r restNodes) request(opts *metav1.ListOptions) *rest.Request {
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	return r.c.Get().Resource("nodes").VersionedParams(opts, scheme.ParameterCodec).Timeout(timeout).
		SetHeader("Accept", protobufAccept)
}

// List lists the nodes (one page when opts.Limit is set) into a *NodeList.
func (r restNodes) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	opts.Watch = false
	if r.useTyped() {
		return r.listTyped(ctx, opts)
	}
	if opts.TimeoutSeconds != nil {
		// As the typed client's List: the request's timeout bounds it.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(*opts.TimeoutSeconds)*time.Second)
		defer cancel()
	}
	body, err := r.request(&opts).Stream(ctx)
	if err != nil {
		if r.fallBack(err) {
			return r.listTyped(ctx, opts)
		}
		return nil, err
	}
	defer body.Close()
	l, err := ReadNodeList(body)
	if err != nil && r.fallBack(err) {
		return r.listTyped(ctx, opts)
	}
	return l, err
}

// Watch opens a watch whose events carry *Node (or, for ERROR, the
// server's *metav1.Status). It lives until ctx ends, the server ends it, or
// it is stopped.
func (r restNodes) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	if r.useTyped() {
		return r.watchTyped(ctx, opts)
	}
	body, err := r.request(&opts).Stream(ctx)
	if err != nil {
		if r.fallBack(err) {
			return r.watchTyped(ctx, opts)
		}
		// As client-go's Request.Watch: a connection that broke or timed
		// out before the answer is an empty watch (the reflector starts
		// again), not an error.
		if utilnet.IsProbableEOF(err) || utilnet.IsTimeout(err) {
			return watch.NewEmptyWatch(), nil
		}
		return nil, err
	}
	// As client-go's own watches: a stream that cannot be decoded ends with
	// an ERROR event whose cause is unknown (500).
	return watch.NewStreamWatcher(newNodeWatchDecoder(body),
		apierrors.NewClientErrorReporter(http.StatusInternalServerError, http.MethodGet, "ClientWatchDecoding")), nil
}

// maxWatchFrame is the largest watch event read, as client-go's streaming
// decoder has it: a larger frame ends the watch with an error.
const maxWatchFrame = 16 << 20

// nodeWatchDecoder is a watch.Decoder reading the apiserver's protobuf watch
// stream of nodes: ADDED, MODIFIED, DELETED and BOOKMARK events carry a
// *Node (a BOOKMARK's with its resourceVersion, and the
// k8s.io/initial-events-end annotation when it ends a WatchList's initial
// events), ERROR events the *metav1.Status the server sent (on a 410 Gone
// the reflector lists again). Each frame is read into one reused buffer
// that grows only with the bytes that do arrive, whatever length a frame
// claims.
type nodeWatchDecoder struct {
	body io.ReadCloser
	d    *nodeStream
	ss   sources.Strings
}

func newNodeWatchDecoder(body io.ReadCloser) *nodeWatchDecoder {
	return &nodeWatchDecoder{body: body, d: &nodeStream{sources.NewPBStream(body, 32<<10)}}
}

// Decode reads the next event. It returns io.EOF for a stream that ended
// between events and io.ErrUnexpectedEOF for one cut inside an event, as
// watch.StreamWatcher expects them (unwrapped); a connection's own error
// comes back as it is.
func (w *nodeWatchDecoder) Decode() (watch.EventType, runtime.Object, error) {
	var prefix [4]byte
	if _, err := w.d.ReadFull(prefix[:]); err != nil {
		return "", nil, err
	}
	// The length prefix is read here, not through apimachinery's
	// length-delimited framer (util/framer): the framer hides the length
	// it reads, so a stream that is not protobuf at all (JSON from a proxy
	// that ignored the Accept header, whose first bytes read as a length of
	// about 2 GB) would end as a stream cut short, which watch.StreamWatcher
	// takes quietly and the informer retries forever, instead of an error
	// at the first frame (TestNodeWatchDecoderCutAndBroken,
	// TestNodeInformerFallsBackToJSON).
	size := binary.BigEndian.Uint32(prefix[:])
	if size > maxWatchFrame {
		return "", nil, fmt.Errorf("watch event of %d bytes: larger than %d", size, maxWatchFrame)
	}
	frame, err := w.d.Read(int64(size))
	if err != nil {
		return "", nil, err
	}
	et, obj, err := decodeNodeEvent(frame, &w.ss)
	if err != nil {
		return "", nil, fmt.Errorf("node watch event: %w", err)
	}
	return et, obj, nil
}

// Close closes the stream.
func (w *nodeWatchDecoder) Close() { _ = w.body.Close() }

// eventTypes are the watch event types client-go's decoder accepts.
var eventTypes = []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Error, watch.Bookmark}

// decodeNodeEvent reads one frame: a metav1.WatchEvent whose object is a
// Node, or a Status for an ERROR event. A field given twice keeps its last
// value (the event's raw object: the last one given), as the generated
// decoder has it.
func decodeNodeEvent(frame []byte, ss *sources.Strings) (watch.EventType, runtime.Object, error) {
	var (
		et  watch.EventType
		raw []byte
	)
	err := eachField(frame, func(f int, wire uint64, v []byte) error {
		if (f == 1 || f == 2) && wire != wireBytes {
			return wrongWire(f, wire)
		}
		switch f {
		case 1:
			et = "invalid"
			for _, t := range eventTypes {
				if string(v) == string(t) {
					et = t
				}
			}
		case 2: // a RawExtension
			return eachField(v, func(f int, wire uint64, v []byte) error {
				if f == 1 {
					if wire != wireBytes {
						return wrongWire(f, wire)
					}
					raw = v
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	if et == "" || et == "invalid" {
		return "", nil, errors.New("invalid event type")
	}
	apiVersion, kind, obj, err := unknown(raw)
	if err != nil {
		return "", nil, err
	}
	switch {
	case string(apiVersion) == "v1" && string(kind) == "Node":
		n, err := newNode(obj, ss)
		if err != nil {
			return "", nil, err
		}
		return et, n, nil
	case string(apiVersion) == "v1" && string(kind) == "Status":
		st := &metav1.Status{}
		if err := st.Unmarshal(obj); err != nil {
			return "", nil, err
		}
		return et, st, nil
	}
	return "", nil, fmt.Errorf("want a v1 Node or Status, got %q %q", apiVersion, kind)
}

// unknown reads an object in the apiserver's protobuf envelope: "k8s\x00"
// and a runtime.Unknown (typeMeta = 1 with apiVersion = 1 and kind = 2,
// raw = 2, contentEncoding = 3, contentType = 4). A typeMeta given twice
// merges; a scalar's last value wins. As client-go's protobuf decoder, it
// reads raw as protobuf whatever contentEncoding and contentType say. What
// it returns points into b.
func unknown(b []byte) (apiVersion, kind, raw []byte, err error) {
	if !bytes.HasPrefix(b, protobufEnvelope) || len(b) == len(protobufEnvelope) {
		return nil, nil, nil, errors.New("object is not in the protobuf envelope")
	}
	err = eachField(b[len(protobufEnvelope):], func(f int, wire uint64, v []byte) error {
		if f >= 1 && f <= 4 && wire != wireBytes {
			return wrongWire(f, wire)
		}
		switch f {
		case 1:
			return eachField(v, func(f int, wire uint64, v []byte) error {
				if (f == 1 || f == 2) && wire != wireBytes {
					return wrongWire(f, wire)
				}
				switch f {
				case 1:
					apiVersion = v
				case 2:
					kind = v
				}
				return nil
			})
		case 2:
			raw = v
		}
		return nil
	})
	return apiVersion, kind, raw, err
}
