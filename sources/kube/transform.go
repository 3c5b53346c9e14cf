package kube

import (
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/model"
)

// KuredLockAnnotation is the DaemonSet annotation kured keeps its lock in.
const KuredLockAnnotation = "weave.works/kured-node-lock"

// kuredAnnotationPrefix selects the node annotations the model keeps.
const kuredAnnotationPrefix = "weave.works/kured-"

// roleLabelPrefix is the prefix of node role labels.
const roleLabelPrefix = "node-role.kubernetes.io/"

// legacyRoleLabel is the old single-valued role label.
const legacyRoleLabel = "kubernetes.io/role"

// FleetlockPrefix is the name prefix of fleetlock's Leases (fleetlock-<group>).
const FleetlockPrefix = "fleetlock-"

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
		if strings.HasPrefix(k, roleLabelPrefix) || k == legacyRoleLabel {
			if out.Labels == nil {
				out.Labels = map[string]string{}
			}
			out.Labels[k] = v
		}
	}
	for k, v := range n.Annotations {
		if strings.HasPrefix(k, kuredAnnotationPrefix) {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	out.Spec.Unschedulable = n.Spec.Unschedulable
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
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, roleLabelPrefix):
			if r := strings.TrimPrefix(k, roleLabelPrefix); r != "" {
				m.Roles = appendUnique(m.Roles, r)
			}
		case k == legacyRoleLabel && v != "":
			m.Roles = appendUnique(m.Roles, v)
		}
	}
	sort.Strings(m.Roles)
	for k, v := range n.Annotations {
		if strings.HasPrefix(k, kuredAnnotationPrefix) {
			if m.Annotations == nil {
				m.Annotations = map[string]string{}
			}
			m.Annotations[k] = v
		}
	}
	if len(n.Status.Conditions) > 0 {
		m.Conditions = make([]model.Condition, len(n.Status.Conditions))
		for i, c := range n.Status.Conditions {
			m.Conditions[i] = model.Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason,
				Message: c.Message, LastTransition: c.LastTransitionTime.Time}
		}
	}
	return m
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

// TransformDaemonSet keeps a DaemonSet's identity, its kured lock annotation
// and the labels that identify kured; spec and status are dropped.
func TransformDaemonSet(obj any) (any, error) {
	d, ok := obj.(*appsv1.DaemonSet)
	if !ok {
		return obj, nil
	}
	out := &appsv1.DaemonSet{ObjectMeta: stripMeta(d.ObjectMeta)}
	if v, ok := d.Annotations[KuredLockAnnotation]; ok {
		out.Annotations = map[string]string{KuredLockAnnotation: v}
	}
	for _, k := range kuredLabels {
		if v, ok := d.Labels[k]; ok {
			if out.Labels == nil {
				out.Labels = map[string]string{}
			}
			out.Labels[k] = v
		}
	}
	return out, nil
}

// kuredLabels are labels whose value "kured" marks kured's DaemonSet (the
// Helm chart's and the plain manifest's).
var kuredLabels = []string{"app.kubernetes.io/name", "name", "app"}

// looksLikeKured reports whether a DaemonSet is kured's without an explicit
// --kured-daemonset: it carries the lock annotation, is named kured (or
// <release>-kured), or is labelled as kured.
func looksLikeKured(d *appsv1.DaemonSet) bool {
	if _, ok := d.Annotations[KuredLockAnnotation]; ok {
		return true
	}
	if d.Name == "kured" || strings.HasSuffix(d.Name, "-kured") {
		return true
	}
	for _, k := range kuredLabels {
		if d.Labels[k] == "kured" {
			return true
		}
	}
	return false
}

// DaemonSetToLock converts kured's DaemonSet to a lock object.
func DaemonSetToLock(d *appsv1.DaemonSet) model.LockObject {
	v, ok := d.Annotations[KuredLockAnnotation]
	return model.LockObject{
		LockRef:         model.LockRef{Kind: model.LockKured, Namespace: d.Namespace, Name: d.Name},
		UID:             string(d.UID),
		ResourceVersion: d.ResourceVersion,
		Annotation:      v,
		Present:         ok,
	}
}

// TransformLease keeps a fleetlock Lease's identity and spec, and only the
// identity of any other Lease.
func TransformLease(obj any) (any, error) {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return obj, nil
	}
	out := &coordinationv1.Lease{ObjectMeta: stripMeta(l.ObjectMeta)}
	if strings.HasPrefix(l.Name, FleetlockPrefix) {
		out.Spec = *l.Spec.DeepCopy()
	}
	return out, nil
}

// LeaseToLock converts a fleetlock Lease to a lock object.
func LeaseToLock(l *coordinationv1.Lease) model.LockObject {
	o := model.LockObject{
		LockRef:         model.LockRef{Kind: model.LockFleetlock, Namespace: l.Namespace, Name: l.Name},
		UID:             string(l.UID),
		ResourceVersion: l.ResourceVersion,
	}
	if l.Spec.HolderIdentity != nil {
		o.Holder = *l.Spec.HolderIdentity
	}
	if l.Spec.AcquireTime != nil {
		o.AcquireTime = l.Spec.AcquireTime.Time
	}
	if l.Spec.RenewTime != nil {
		o.RenewTime = l.Spec.RenewTime.Time
	}
	if l.Spec.LeaseTransitions != nil {
		o.LeaseTransitions = *l.Spec.LeaseTransitions
	}
	return o
}
