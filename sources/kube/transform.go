package kube

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/model"
)

// kuredAnnotationPrefix selects the node annotations the model keeps.
const kuredAnnotationPrefix = "weave.works/kured-"

// roleLabelPrefix is the prefix of node role labels.
const roleLabelPrefix = "node-role.kubernetes.io/"

// legacyRoleLabel is the old single-valued role label.
const legacyRoleLabel = "kubernetes.io/role"

// roleLabel reports whether the model reads a node label with key k: a
// role label, new (node-role.kubernetes.io/<role>) or old
// (kubernetes.io/role). TransformNode, NodeToModel and the protobuf reader
// (nodeproto.go, on the bytes before they become strings) all ask here.
func roleLabel[K ~string | ~[]byte](k K) bool {
	return hasPrefix(k, roleLabelPrefix) || string(k) == legacyRoleLabel
}

// kuredAnnotation reports whether the model reads a node annotation with
// key k: kured's (weave.works/kured-*).
func kuredAnnotation[K ~string | ~[]byte](k K) bool { return hasPrefix(k, kuredAnnotationPrefix) }

// hasPrefix is strings.HasPrefix for a string or a byte slice, without
// making a string of the bytes.
func hasPrefix[K ~string | ~[]byte](k K, prefix string) bool {
	return len(k) >= len(prefix) && string(k[:len(prefix)]) == prefix
}

// stripMeta keeps only the identity of an object: no managedFields, owner
// references, finalizers, labels or annotations.
func stripMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		CreationTimestamp: m.CreationTimestamp,
		DeletionTimestamp: m.DeletionTimestamp,
	}
}

// TransformNode strips a Node down to what the model needs before it enters
// the informer cache: role labels, kured annotations, unschedulable,
// conditions (without heartbeats) and four nodeInfo fields. Images, addresses,
// capacity and the rest are dropped, which is most of a Node's size.
func TransformNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{ObjectMeta: stripMeta(n.ObjectMeta)}
	for k, v := range n.Labels {
		if roleLabel(k) {
			if out.Labels == nil {
				out.Labels = map[string]string{}
			}
			out.Labels[k] = v
		}
	}
	for k, v := range n.Annotations {
		if kuredAnnotation(k) {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	out.Spec.Unschedulable = n.Spec.Unschedulable
	if e, ok := unschedulableEntry(n.ManagedFields); ok {
		out.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: e.Manager, Operation: e.Operation, Time: e.Time,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:unschedulable":{}}}`)}}
	}
	if len(n.Status.Conditions) > 0 {
		out.Status.Conditions = make([]corev1.NodeCondition, len(n.Status.Conditions))
		for i, c := range n.Status.Conditions {
			out.Status.Conditions[i] = corev1.NodeCondition{Type: c.Type, Status: c.Status, Reason: c.Reason,
				Message: c.Message, LastTransitionTime: c.LastTransitionTime}
		}
	}
	ni := n.Status.NodeInfo
	out.Status.NodeInfo = corev1.NodeSystemInfo{BootID: ni.BootID, MachineID: ni.MachineID,
		OSImage: ni.OSImage, KernelVersion: ni.KernelVersion}
	return out, nil
}

// NodeToModel converts a (transformed or full) Node to the model's node.
func NodeToModel(n *corev1.Node) model.Node {
	m := model.Node{
		Name:          n.Name,
		UID:           string(n.UID),
		Unschedulable: n.Spec.Unschedulable,
		BootID:        n.Status.NodeInfo.BootID,
		MachineID:     n.Status.NodeInfo.MachineID,
		OSImage:       n.Status.NodeInfo.OSImage,
		KernelVersion: n.Status.NodeInfo.KernelVersion,
		Created:       n.CreationTimestamp.Time,
	}
	if e, ok := unschedulableEntry(n.ManagedFields); ok {
		m.UnschedulableSetAt, m.UnschedulableSetBy = e.Time.Time, e.Manager
	}
	for k, v := range n.Labels {
		addRole(&m, k, v)
	}
	sort.Strings(m.Roles)
	for k, v := range n.Annotations {
		addAnnotation(&m, k, v)
	}
	if len(n.Status.Conditions) > 0 {
		m.Conditions = make([]model.Condition, len(n.Status.Conditions))
		for i := range n.Status.Conditions {
			m.Conditions[i] = modelCondition(&n.Status.Conditions[i])
		}
	}
	return m
}

// addRole adds the role a node label names, if it names one.
func addRole(m *model.Node, k, v string) {
	switch {
	case strings.HasPrefix(k, roleLabelPrefix):
		if r := strings.TrimPrefix(k, roleLabelPrefix); r != "" {
			m.Roles = appendUnique(m.Roles, r)
		}
	case k == legacyRoleLabel && v != "":
		m.Roles = appendUnique(m.Roles, v)
	}
}

// addAnnotation keeps a node annotation if it is kured's.
func addAnnotation(m *model.Node, k, v string) {
	if kuredAnnotation(k) {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[k] = v
	}
}

func modelCondition(c *corev1.NodeCondition) model.Condition {
	return model.Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason,
		Message: c.Message, LastTransition: c.LastTransitionTime.Time}
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// sameNode reports whether two model nodes carry the same facts, so an
// update that only moved a heartbeat or the resourceVersion is not sent.
func sameNode(a, b *model.Node) bool {
	if a.Name != b.Name || a.UID != b.UID || a.Unschedulable != b.Unschedulable || a.BootID != b.BootID ||
		a.MachineID != b.MachineID || a.OSImage != b.OSImage || a.KernelVersion != b.KernelVersion ||
		!a.Created.Equal(b.Created) || len(a.Roles) != len(b.Roles) || len(a.Conditions) != len(b.Conditions) ||
		len(a.Annotations) != len(b.Annotations) {
		return false
	}
	for i := range a.Roles {
		if a.Roles[i] != b.Roles[i] {
			return false
		}
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message ||
			!x.LastTransition.Equal(y.LastTransition) {
			return false
		}
	}
	for k, v := range a.Annotations {
		if w, ok := b.Annotations[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// unschedulableField is how a managedFields entry's fieldsV1 names
// spec.unschedulable (a Node has no other field of that name).
var unschedulableField = []byte(`"f:unschedulable"`)

// unschedulableEntry returns the newest managedFields entry that owns
// spec.unschedulable, as holderEntry does for fleetlock's holder: its time
// is when that manager last wrote the field.
func unschedulableEntry(m []metav1.ManagedFieldsEntry) (metav1.ManagedFieldsEntry, bool) {
	var best metav1.ManagedFieldsEntry
	found := false
	for _, e := range m {
		if e.FieldsV1 == nil || e.Time == nil || !ownsUnschedulable(e.FieldsV1.GetRawBytes()) {
			continue
		}
		if !found || e.Time.After(best.Time.Time) {
			best, found = e, true
		}
	}
	return best, found
}

// ownsUnschedulable reports whether a fieldsV1 set owns
// f:spec.f:unschedulable.
func ownsUnschedulable(raw []byte) bool {
	if !bytes.Contains(raw, unschedulableField) {
		return false // most entries (the kubelet's status) never name it
	}
	var f struct {
		Spec map[string]json.RawMessage `json:"f:spec"`
	}
	if json.Unmarshal(raw, &f) != nil {
		return false
	}
	_, ok := f.Spec["f:unschedulable"]
	return ok
}
