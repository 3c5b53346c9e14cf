package fleetlock

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/model"
)

// This file is what fleetlock's source reads (the informer that watches
// it is sources/kube's): the fleetlock-<group> Leases of the fleetlock
// namespace, the informer's transform, the lock object, and the one-shot
// read.

// DefaultNamespace is fleetlock's namespace when its NAMESPACE env is unset.
const DefaultNamespace = "default"

// Prefix is the name prefix of fleetlock's Leases (fleetlock-<group>).
const Prefix = "fleetlock-"

// holderEntry returns the managedFields entry that owns
// f:spec.f:holderIdentity (the newest, should several co-own it). Its time
// changes only when a write changes the holder, so it is when the holder was
// set: fleetlock never writes acquireTime.
func holderEntry(m []metav1.ManagedFieldsEntry) (metav1.ManagedFieldsEntry, bool) {
	var best metav1.ManagedFieldsEntry
	found := false
	for _, e := range m {
		if e.FieldsV1 == nil || e.Time == nil {
			continue
		}
		var f struct {
			Spec map[string]json.RawMessage `json:"f:spec"`
		}
		if json.Unmarshal(e.FieldsV1.GetRawBytes(), &f) != nil {
			continue
		}
		if _, ok := f.Spec["f:holderIdentity"]; !ok {
			continue
		}
		if !found || e.Time.After(best.Time.Time) {
			best, found = e, true
		}
	}
	return best, found
}

// Transform keeps a fleetlock Lease's identity and spec, and of its
// managedFields only the manager and time of the entry that owns the
// holder (no fields); of any other Lease only the identity.
func Transform(obj any) (any, error) {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return obj, nil
	}
	out := &coordinationv1.Lease{ObjectMeta: keepMeta(l.ObjectMeta)}
	if strings.HasPrefix(l.Name, Prefix) {
		out.Spec = *l.Spec.DeepCopy()
		if e, ok := holderEntry(l.ManagedFields); ok {
			out.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: e.Manager, Operation: e.Operation, Time: e.Time,
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:holderIdentity":{}}}`)}}
		}
	}
	return out, nil
}

// LockOf converts a fleetlock Lease (full or transformed) to a lock
// object.
func LockOf(l *coordinationv1.Lease) model.LockObject {
	spec := &Spec{}
	if l.Spec.HolderIdentity != nil {
		spec.Holder = *l.Spec.HolderIdentity
	}
	if l.Spec.AcquireTime != nil {
		spec.AcquireTime = l.Spec.AcquireTime.Time
	}
	if l.Spec.LeaseTransitions != nil {
		spec.LeaseTransitions = *l.Spec.LeaseTransitions
	}
	if e, ok := holderEntry(l.ManagedFields); ok {
		spec.HolderSet, spec.HolderSetBy = e.Time.Time, e.Manager
	}
	return model.LockObject{
		LockRef:         model.LockRef{Kind: model.LockFleetlock, Namespace: l.Namespace, Name: l.Name},
		UID:             string(l.UID),
		ResourceVersion: l.ResourceVersion,
		Spec:            spec,
	}
}

// keepMeta is the identity of an object, all the informer keeps of its
// metadata beside what Transform picks.
func keepMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp}
}

// ReadLocks reads fleetlock's Leases once: every fleetlock-<group> Lease
// of namespace ns ("" for DefaultNamespace).
func ReadLocks(ctx context.Context, cs kubernetes.Interface, ns string) ([]model.LockObject, error) {
	if ns == "" {
		ns = DefaultNamespace
	}
	ls, err := cs.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list leases.coordination.k8s.io: %w", err)
	}
	var out []model.LockObject
	for i := range ls.Items {
		if strings.HasPrefix(ls.Items[i].Name, Prefix) {
			out = append(out, LockOf(&ls.Items[i]))
		}
	}
	return out, nil
}
