package kube

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
)

// This file is the one-shot read of nodes (Options.Once) against a real
// apiserver (through the typed client, as JSON, when it sends no protobuf),
// and the protobuf reader the node informer's list and watch
// share with it (nodewatch.go): each NodeList comes as protobuf and is read
// straight into the model's nodes, as NodeToModel(TransformNode(n)) makes
// them. A kubelet's Node is mostly what the model never reads — the image
// list, capacity, addresses, managedFields — and decoding full Nodes only
// to drop that would be much of a --snapshot's CPU and most of its heap at
// scale (docs/performance.md); here those fields are skipped by their
// length, never decoded. Only the timestamps go through the generated
// decoder.

// protobufEnvelope starts every protobuf response of the apiserver.
var protobufEnvelope = []byte("k8s\x00")

// errNotProtobuf is a list response that does not start with the
// envelope: not protobuf (a proxy that ignored the Accept header).
var errNotProtobuf = errors.New("not a protobuf response")

// nodeListREST returns the REST client behind cs's nodes, or nil when cs is
// not a real clientset (a fake's RESTClient is a nil pointer).
func nodeListREST(cs kubernetes.Interface) *rest.RESTClient {
	rc, ok := cs.CoreV1().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil {
		return nil
	}
	return rc
}

// listNodesProto lists one page of nodes as protobuf, decoding it as it
// streams in, and returns them as *model.Node, with the list's continue
// token.
func listNodesProto(ctx context.Context, rc *rest.RESTClient, lo metav1.ListOptions) ([]any, string, error) {
	req := rc.Get().Resource("nodes").SetHeader("Accept", "application/vnd.kubernetes.protobuf")
	if lo.Limit > 0 {
		req = req.Param("limit", strconv.FormatInt(lo.Limit, 10))
	}
	if lo.Continue != "" {
		req = req.Param("continue", lo.Continue)
	}
	body, err := req.Stream(ctx)
	if err != nil {
		return nil, "", err
	}
	defer body.Close()
	nodes, cont, err := DecodeNodeList(body)
	if err != nil {
		return nil, "", err
	}
	objs := make([]any, len(nodes))
	for i := range nodes {
		objs[i] = &nodes[i]
	}
	return objs, cont, nil
}

// listNodesTyped is listNodesProto's fallback for a server that sends no
// protobuf: one page through rn's typed client, as *Node.
func listNodesTyped(ctx context.Context, rn restNodes, lo metav1.ListOptions) ([]any, string, error) {
	obj, err := rn.listTyped(ctx, lo)
	if err != nil {
		return nil, "", err
	}
	l := obj.(*NodeList)
	objs := make([]any, len(l.Items))
	for i, n := range l.Items {
		objs[i] = n
	}
	return objs, l.Continue, nil
}

// DecodeNodeList reads a NodeList in the apiserver's protobuf encoding (the
// "k8s\x00" envelope around a runtime.Unknown) from r as it streams, one
// item at a time, and returns every node as NodeToModel(TransformNode(n))
// makes it, and the list's continue token. It never decodes what
// TransformNode drops. A response cut short or not a NodeList is an error.
func DecodeNodeList(r io.Reader) ([]model.Node, string, error) {
	var nodes []model.Node
	lm, err := decodeNodeList(r, func(b []byte) error {
		nodes = append(nodes, model.Node{})
		return decodeNode(b, &nodes[len(nodes)-1], nil, nil)
	})
	if err != nil {
		return nil, "", err
	}
	return nodes, lm.Continue, nil
}

// decodeNodeList reads a protobuf NodeList from r as DecodeNodeList does,
// calling each with every item's bytes (valid only during the call), and
// returns the list's metadata (its continue token and resourceVersion).
func decodeNodeList(r io.Reader, each func(item []byte) error) (metav1.ListMeta, error) {
	d := &nodeStream{sources.NewPBStream(r, 64<<10)}
	lm, err := d.list(each)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return metav1.ListMeta{}, fmt.Errorf("node list (protobuf): %w", err)
	}
	return lm, nil
}

// nodeStream reads a protobuf NodeList from a stream (the sources'
// one protobuf reader).
type nodeStream struct{ *sources.PBStream }

// The protobuf wire types.
const (
	wireVarint  = sources.PBVarint
	wireFixed32 = sources.PBFixed32
	wireBytes   = sources.PBBytes
)

// wrongWire is the error for a known field sent with another wire type
// (the generated decoders reject it too).
func wrongWire(f int, wire uint64) error {
	return fmt.Errorf("field %d: wrong wire type %d", f, wire)
}

func (d *nodeStream) list(each func(item []byte) error) (metav1.ListMeta, error) {
	return d.listOf("NodeList", each)
}

// listOf reads a protobuf list of the kind given (a NodeList, a PodList,
// ...: every list of the API has its ListMeta in field 1 and its items in
// field 2), handing each item's bytes to each.
func (d *nodeStream) listOf(want string, each func(item []byte) error) (metav1.ListMeta, error) {
	var lm metav1.ListMeta
	var env [4]byte
	if _, err := d.ReadFull(env[:]); err != nil {
		return lm, err
	}
	if !bytes.Equal(env[:], protobufEnvelope) {
		return lm, errNotProtobuf
	}
	var kind string
	sawList := false
	for {
		f, wire, n, err := d.Field()
		if err == io.EOF {
			break
		}
		if err != nil {
			return lm, err
		}
		if (f == 1 || f == 2) && wire != wireBytes {
			return lm, wrongWire(f, wire)
		}
		switch {
		case f == 1: // typeMeta
			b, err := d.Read(n)
			if err != nil {
				return lm, err
			}
			err = eachField(b, func(f int, wire uint64, v []byte) error {
				if f == 2 {
					if wire != wireBytes {
						return wrongWire(f, wire)
					}
					kind = string(v)
				}
				return nil
			})
			if err != nil {
				return lm, err
			}
		case f == 2: // raw: the list, read item by item
			if kind != want {
				return lm, fmt.Errorf("want a %s, got kind %q", want, kind)
			}
			if lm, err = d.nodeList(n, each); err != nil {
				return lm, err
			}
			sawList = true
		case f == 3 && wire == wireBytes && n > 0:
			return lm, errors.New("content encoding not supported")
		default:
			if err := d.Skip(wire, n); err != nil {
				return lm, err
			}
		}
	}
	if !sawList {
		return lm, fmt.Errorf("want a %s, got kind %q and no list", want, kind)
	}
	return lm, nil
}

// nodeList reads a NodeList of size bytes, handing each item to each.
func (d *nodeStream) nodeList(size int64, each func(item []byte) error) (metav1.ListMeta, error) {
	var lm metav1.ListMeta
	items := 0
	end := d.Off() + size
	for d.Off() < end {
		f, wire, n, err := d.Field()
		if err != nil {
			return lm, sources.UnexpectedEOF(err)
		}
		if wire != wireBytes || d.Off()+n > end {
			return lm, fmt.Errorf("NodeList field %d: bad wire type or length", f)
		}
		b, err := d.Read(n)
		if err != nil {
			return lm, err
		}
		switch f {
		case 1: // ListMeta; given twice, its fields merge (a scalar's last value wins)
			err = eachField(b, func(f int, wire uint64, v []byte) error {
				if f == 2 || f == 3 {
					if wire != wireBytes {
						return wrongWire(f, wire)
					}
					if f == 2 {
						lm.ResourceVersion = string(v)
					} else {
						lm.Continue = string(v)
					}
				}
				return nil
			})
			if err != nil {
				return lm, err
			}
		case 2:
			if err := each(b); err != nil {
				return lm, fmt.Errorf("item %d: %w", items, err)
			}
			items++
		}
	}
	if d.Off() != end {
		return lm, errors.New("NodeList overruns its length")
	}
	return lm, nil
}

// nodeExtra is what the informer keeps of a node beside the model's node
// (nodewatch.go): its resourceVersion, and the k8s.io/initial-events-end
// annotation that marks the BOOKMARK ending a WatchList's initial events.
type nodeExtra struct {
	namespace        string // a Node has none; kept as TransformNode keeps it
	resourceVersion  string
	initialEventsEnd string
}

// decodeNode reads one Node into the model's node (and, when x is not nil,
// what the informer keeps beside it: nodeExtra), making the strings a
// fleet's nodes share through ss (nil: each its own). A message field
// given twice merges into the first, as protobuf has it; a scalar's last
// value wins.
func decodeNode(b []byte, m *model.Node, x *nodeExtra, ss *sources.Strings) error {
	var legacyRole string // the last kubernetes.io/role label's value
	err := eachField(b, func(f int, wire uint64, v []byte) error {
		if f >= 1 && f <= 3 && wire != wireBytes {
			return wrongWire(f, wire)
		}
		switch f {
		case 1:
			return decodeNodeMeta(v, m, x, ss, &legacyRole)
		case 2: // spec
			return eachField(v, func(f int, wire uint64, v []byte) error {
				if f == 4 {
					if wire != wireVarint {
						return wrongWire(f, wire)
					}
					u, _ := binary.Uvarint(v)
					m.Unschedulable = u != 0
				}
				return nil
			})
		case 3:
			return decodeNodeStatus(v, m, ss)
		}
		return nil
	})
	addRole(m, legacyRoleLabel, legacyRole)
	sort.Strings(m.Roles)
	return err
}

// decodeNodeMeta reads the name, uid, creation time, role labels,
// kured's annotations and the managedFields entry that owns
// spec.unschedulable (and, into x when not nil, the namespace,
// resourceVersion and the initial-events-end annotation); the rest is
// skipped. The legacy role label's value is left in legacyRole (a map
// key's last value wins).
func decodeNodeMeta(b []byte, m *model.Node, x *nodeExtra, ss *sources.Strings, legacyRole *string) error {
	return eachField(b, func(f int, wire uint64, v []byte) error {
		switch f {
		case 1, 3, 5, 6, 8, 11, 12:
			if wire != wireBytes {
				return wrongWire(f, wire)
			}
		}
		switch f {
		case 1:
			m.Name = string(v)
		case 3:
			if x != nil {
				x.namespace = string(v)
			}
		case 5:
			m.UID = string(v)
		case 6:
			if x != nil {
				x.resourceVersion = string(v)
			}
		case 8:
			var t metav1.Time
			if err := t.Unmarshal(v); err != nil {
				return err
			}
			m.Created = t.Time
		case 17:
			if wire != wireBytes {
				return wrongWire(f, wire)
			}
			return decodeManagedEntry(v, m)
		case 11, 12:
			// Only the entries the model keeps become strings.
			k, val, err := mapEntry(v)
			if err != nil {
				return err
			}
			switch {
			case f == 11 && string(k) == legacyRoleLabel:
				*legacyRole = ss.Of(val)
			case f == 11 && roleLabel(k):
				addRole(m, ss.Of(k), ss.Of(val))
			case f == 12 && kuredAnnotation(k):
				addAnnotation(m, ss.Of(k), string(val))
			case f == 12 && x != nil && string(k) == metav1.InitialEventsAnnotationKey:
				x.initialEventsEnd = string(val)
			}
		}
		return nil
	})
}

// decodeManagedEntry reads one managedFields entry (manager = 1, time = 4,
// fieldsV1 = 7 whose raw = 1) and, when it owns spec.unschedulable and is
// newer than the one kept, keeps its time and manager (as
// unschedulableEntry does for a typed Node). Other entries' fields stay
// bytes: only a set that names f:unschedulable is parsed.
func decodeManagedEntry(b []byte, m *model.Node) error {
	var manager, raw, ts []byte
	err := eachField(b, func(f int, wire uint64, v []byte) error {
		if (f == 1 || f == 4 || f == 7) && wire != wireBytes {
			return wrongWire(f, wire)
		}
		switch f {
		case 1:
			manager = v
		case 4:
			ts = v
		case 7:
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
	if err != nil || ts == nil || !ownsUnschedulable(raw) {
		return err
	}
	var t metav1.Time
	if err := t.Unmarshal(ts); err != nil {
		return err
	}
	if m.UnschedulableSetAt.IsZero() || t.After(m.UnschedulableSetAt) {
		m.UnschedulableSetAt, m.UnschedulableSetBy = t.Time, string(manager)
	}
	return nil
}

// decodeNodeStatus reads the conditions and four nodeInfo fields. The
// conditions' slice is made to their count first (a pass over the fields
// that decodes nothing): appended one by one, five conditions (the
// kubelet's four and a CNI's NetworkUnavailable) kept room for eight in
// the informer's cache, 256 bytes more per node, and the kubelet's four
// cost two allocations and 272 bytes more to decode
// (BenchmarkDecodeNodeList; docs/performance.md).
func decodeNodeStatus(b []byte, m *model.Node, ss *sources.Strings) error {
	n := 0
	if err := eachField(b, func(f int, _ uint64, _ []byte) error {
		if f == 4 {
			n++
		}
		return nil
	}); err != nil {
		return err
	}
	if n > 0 {
		m.Conditions = slices.Grow(m.Conditions, n)
	}
	return eachField(b, func(f int, wire uint64, v []byte) error {
		if (f == 4 || f == 7) && wire != wireBytes {
			return wrongWire(f, wire)
		}
		switch f {
		case 4:
			c, err := decodeCondition(v, ss)
			if err != nil {
				return err
			}
			m.Conditions = append(m.Conditions, c)
		case 7:
			// Field by field, so a second nodeInfo merges into the first
			// and the six fields the model never reads stay bytes.
			return decodeNodeInfo(v, m, ss)
		}
		return nil
	})
}

// decodeCondition reads a NodeCondition as modelCondition keeps it: type =
// 1, status = 2, lastTransitionTime = 4, reason = 5, message = 6 (not the
// heartbeat, 3).
func decodeCondition(b []byte, ss *sources.Strings) (model.Condition, error) {
	var c model.Condition
	err := eachField(b, func(f int, wire uint64, v []byte) error {
		if f >= 1 && f <= 6 && wire != wireBytes {
			return wrongWire(f, wire)
		}
		switch f {
		case 1:
			c.Type = ss.Of(v)
		case 2:
			c.Status = ss.Of(v)
		case 4:
			var t metav1.Time
			if err := t.Unmarshal(v); err != nil {
				return err
			}
			c.LastTransition = t.Time
		case 5:
			c.Reason = ss.Of(v)
		case 6:
			c.Message = ss.Of(v)
		}
		return nil
	})
	return c, err
}

// decodeNodeInfo reads the four nodeInfo fields TransformNode keeps:
// machineID = 1, bootID = 3, kernelVersion = 4, osImage = 5.
func decodeNodeInfo(b []byte, m *model.Node, ss *sources.Strings) error {
	return eachField(b, func(f int, wire uint64, v []byte) error {
		var dst *string
		shared := false // the same on many nodes
		switch f {
		case 1:
			dst = &m.MachineID
		case 3:
			dst = &m.BootID
		case 4:
			dst, shared = &m.KernelVersion, true
		case 5:
			dst, shared = &m.OSImage, true
		default:
			return nil
		}
		if wire != wireBytes {
			return wrongWire(f, wire)
		}
		if shared {
			*dst = ss.Of(v)
		} else {
			*dst = string(v)
		}
		return nil
	})
}

// mapEntry reads a map<string,string> entry (key 1, value 2); both point
// into b.
func mapEntry(b []byte) (k, v []byte, err error) {
	err = eachField(b, func(f int, wire uint64, x []byte) error {
		if (f == 1 || f == 2) && wire != wireBytes {
			return wrongWire(f, wire)
		}
		switch f {
		case 1:
			k = x
		case 2:
			v = x
		}
		return nil
	})
	return k, v, err
}

// eachField calls fn with every field of a protobuf message
// (sources.PBFields, the sources' one field walker).
func eachField(b []byte, fn func(field int, wire uint64, v []byte) error) error {
	return sources.PBFields(b, fn)
}
