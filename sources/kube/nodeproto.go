package kube

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// This file is the one-shot read of nodes (Options.Once) against a real
// apiserver: each page of the NodeList comes as protobuf and is read
// straight into Nodes as TransformNode keeps them. A kubelet's Node is
// mostly what the model never reads — the image list, capacity,
// addresses, managedFields — and decoding a page of 500 full Nodes only to
// drop that was a third of a --snapshot's CPU at 5,000 nodes (and most of
// its heap); here those fields are skipped by their length, never decoded.
// The small parts that are kept (a condition, nodeInfo, a timestamp) go
// through the generated decoders.

// protobufEnvelope starts every protobuf response of the apiserver.
var protobufEnvelope = []byte("k8s\x00")

// nodeListREST returns the REST client behind cs's nodes, or nil when cs is
// not a real clientset (a fake's RESTClient is a nil pointer).
func nodeListREST(cs kubernetes.Interface) *rest.RESTClient {
	rc, ok := cs.CoreV1().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil {
		return nil
	}
	return rc
}

// pageBuffers holds one page's bytes at a time (pages are read one after
// another), so a one-shot read keeps one buffer of a page's size.
var pageBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// listNodesProto lists one page of nodes as protobuf and returns them as
// TransformNode keeps them, with the list's continue token.
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
	buf := pageBuffers.Get().(*bytes.Buffer)
	defer pageBuffers.Put(buf)
	buf.Reset()
	if _, err := io.Copy(buf, body); err != nil {
		return nil, "", err
	}
	nodes, cont, err := DecodeNodeList(buf.Bytes())
	if err != nil {
		return nil, "", err
	}
	objs := make([]any, len(nodes))
	for i, n := range nodes {
		objs[i] = n
	}
	return objs, cont, nil
}

// DecodeNodeList reads a NodeList in the apiserver's protobuf encoding (the
// "k8s\x00" envelope around a runtime.Unknown) and returns every node as
// TransformNode keeps it, and the list's continue token. It never decodes
// what TransformNode drops.
func DecodeNodeList(b []byte) ([]*corev1.Node, string, error) {
	nodes, cont, err := decodeNodeList(b)
	if err != nil {
		return nil, "", fmt.Errorf("node list (protobuf): %w", err)
	}
	return nodes, cont, nil
}

func decodeNodeList(b []byte) ([]*corev1.Node, string, error) {
	if !bytes.HasPrefix(b, protobufEnvelope) {
		return nil, "", errors.New("not a protobuf response")
	}
	var raw []byte
	var kind, encoding string
	sawRaw := false
	err := eachField(b[len(protobufEnvelope):], func(f int, v []byte) (err error) {
		switch f {
		case 1: // typeMeta
			err = eachField(v, func(f int, v []byte) error {
				if f == 2 { // kind
					kind = string(v)
				}
				return nil
			})
		case 2:
			raw, sawRaw = v, true
		case 3:
			encoding = string(v)
		}
		return err
	})
	if err != nil {
		return nil, "", err
	}
	if kind != "NodeList" || encoding != "" || !sawRaw {
		return nil, "", fmt.Errorf("want a NodeList, got kind %q (content encoding %q)", kind, encoding)
	}
	var nodes []*corev1.Node
	var cont string
	err = eachField(raw, func(f int, v []byte) error {
		switch f {
		case 1: // ListMeta
			return eachField(v, func(f int, v []byte) error {
				if f == 3 {
					cont = string(v)
				}
				return nil
			})
		case 2:
			n, err := decodeNode(v)
			if err != nil {
				return fmt.Errorf("item %d: %w", len(nodes), err)
			}
			nodes = append(nodes, n)
		}
		return nil
	})
	return nodes, cont, err
}

// decodeNode reads one Node into what TransformNode keeps of it.
func decodeNode(b []byte) (*corev1.Node, error) {
	out := &corev1.Node{}
	err := eachField(b, func(f int, v []byte) error {
		switch f {
		case 1:
			return decodeNodeMeta(v, &out.ObjectMeta)
		case 2: // spec
			return eachField(v, func(f int, v []byte) error {
				if f == 4 {
					u, _ := binary.Uvarint(v)
					out.Spec.Unschedulable = u != 0
				}
				return nil
			})
		case 3:
			return decodeNodeStatus(v, &out.Status)
		}
		return nil
	})
	return out, err
}

// decodeNodeMeta reads stripMeta's fields, role labels and kured's
// annotations; managedFields and the rest are skipped.
func decodeNodeMeta(b []byte, m *metav1.ObjectMeta) error {
	return eachField(b, func(f int, v []byte) error {
		switch f {
		case 1:
			m.Name = string(v)
		case 3:
			m.Namespace = string(v)
		case 5:
			m.UID = types.UID(v)
		case 6:
			m.ResourceVersion = string(v)
		case 8:
			return m.CreationTimestamp.Unmarshal(v)
		case 9:
			m.DeletionTimestamp = &metav1.Time{}
			return m.DeletionTimestamp.Unmarshal(v)
		case 11, 12:
			k, val, err := mapEntry(v)
			if err != nil {
				return err
			}
			if f == 11 && (strings.HasPrefix(k, roleLabelPrefix) || k == legacyRoleLabel) {
				if m.Labels == nil {
					m.Labels = map[string]string{}
				}
				m.Labels[k] = val
			}
			if f == 12 && strings.HasPrefix(k, kuredAnnotationPrefix) {
				if m.Annotations == nil {
					m.Annotations = map[string]string{}
				}
				m.Annotations[k] = val
			}
		}
		return nil
	})
}

// decodeNodeStatus reads the conditions (without heartbeats) and four
// nodeInfo fields.
func decodeNodeStatus(b []byte, st *corev1.NodeStatus) error {
	return eachField(b, func(f int, v []byte) error {
		switch f {
		case 4:
			var c corev1.NodeCondition
			if err := c.Unmarshal(v); err != nil {
				return err
			}
			st.Conditions = append(st.Conditions, corev1.NodeCondition{Type: c.Type, Status: c.Status, Reason: c.Reason,
				Message: c.Message, LastTransitionTime: c.LastTransitionTime})
		case 7:
			var ni corev1.NodeSystemInfo
			if err := ni.Unmarshal(v); err != nil {
				return err
			}
			st.NodeInfo = corev1.NodeSystemInfo{BootID: ni.BootID, MachineID: ni.MachineID,
				OSImage: ni.OSImage, KernelVersion: ni.KernelVersion}
		}
		return nil
	})
}

// mapEntry reads a map<string,string> entry (key 1, value 2).
func mapEntry(b []byte) (k, v string, err error) {
	err = eachField(b, func(f int, x []byte) error {
		switch f {
		case 1:
			k = string(x)
		case 2:
			v = string(x)
		}
		return nil
	})
	return k, v, err
}

// eachField calls fn with every field of a protobuf message: its number and
// its bytes (a length-delimited field's content, or a varint's or fixed
// field's own bytes). A malformed or cut message is an error.
func eachField(b []byte, fn func(field int, v []byte) error) error {
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			return errors.New("bad field tag")
		}
		b = b[n:]
		field, wire := int(tag>>3), tag&7
		if field <= 0 {
			return errors.New("bad field number")
		}
		var v []byte
		switch wire {
		case 0: // varint
			_, n := binary.Uvarint(b)
			if n <= 0 {
				return fmt.Errorf("field %d: bad varint", field)
			}
			v, b = b[:n], b[n:]
		case 1: // fixed64
			if len(b) < 8 {
				return fmt.Errorf("field %d: cut short", field)
			}
			v, b = b[:8], b[8:]
		case 2: // length-delimited
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return fmt.Errorf("field %d: bad length", field)
			}
			v, b = b[n:n+int(l)], b[n+int(l):]
		case 5: // fixed32
			if len(b) < 4 {
				return fmt.Errorf("field %d: cut short", field)
			}
			v, b = b[:4], b[4:]
		default:
			return fmt.Errorf("field %d: unsupported wire type %d", field, wire)
		}
		if err := fn(field, v); err != nil {
			return err
		}
	}
	return nil
}
