package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/model"
)

// This file is the fleetlock lock kind's source: the fleetlock-<group>
// Leases of the fleetlock namespace.

// FleetlockPrefix is the name prefix of fleetlock's Leases (fleetlock-<group>).
const FleetlockPrefix = "fleetlock-"

func init() { lockSources[model.LockFleetlock] = startFleetlock }

func startFleetlock(s *Source) {
	cs := s.opts.Client
	fns := s.opts.FleetlockNamespace
	fleet := s.newPart(model.SourceFleetlock, "leases.coordination.k8s.io", fns, &coordinationv1.Lease{}, TransformLease,
		func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			return cs.CoordinationV1().Leases(fns).List(ctx, lo)
		},
		func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
			return cs.CoordinationV1().Leases(fns).Watch(ctx, lo)
		})
	s.audit(fleet, auditTarget{what: "Lease", rc: restOf(cs.CoordinationV1().RESTClient()), resource: "leases",
		kind: "LeaseList", ns: fns})
	fleet.whenSynced = func() (model.SourceStatus, string) {
		if len(s.fleet) == 0 {
			return model.StatusNotInstalled, fmt.Sprintf("no %s* Lease in namespace %q", FleetlockPrefix, fns)
		}
		return model.StatusOK, ""
	}
	onLease := func(obj any) {
		l, ok := obj.(*coordinationv1.Lease)
		if !ok || !strings.HasPrefix(l.Name, FleetlockPrefix) {
			return
		}
		s.mu.Lock()
		first := !s.fleet[l.Namespace+"/"+l.Name]
		s.fleet[l.Namespace+"/"+l.Name] = true
		s.sink(model.LockUpserted{Lock: LeaseToLock(l)})
		s.mu.Unlock()
		if first {
			s.refresh(fleet)
		}
	}
	s.handle(fleet, cache.ResourceEventHandlerFuncs{
		AddFunc:    onLease,
		UpdateFunc: func(_, obj any) { onLease(obj) },
		DeleteFunc: func(obj any) {
			l, ok := unwrap(obj).(*coordinationv1.Lease)
			if !ok || !strings.HasPrefix(l.Name, FleetlockPrefix) {
				return
			}
			s.mu.Lock()
			delete(s.fleet, l.Namespace+"/"+l.Name)
			s.sink(model.LockDeleted{Ref: model.LockRef{Kind: model.LockFleetlock, Namespace: l.Namespace, Name: l.Name}})
			s.mu.Unlock()
			s.refresh(fleet)
		},
	})
}

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

// TransformLease keeps a fleetlock Lease's identity and spec, and of its
// managedFields only the manager and time of the entry that owns the
// holder (no fields); of any other Lease only the identity.
func TransformLease(obj any) (any, error) {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return obj, nil
	}
	out := &coordinationv1.Lease{ObjectMeta: stripMeta(l.ObjectMeta)}
	if strings.HasPrefix(l.Name, FleetlockPrefix) {
		out.Spec = *l.Spec.DeepCopy()
		if e, ok := holderEntry(l.ManagedFields); ok {
			out.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: e.Manager, Operation: e.Operation, Time: e.Time,
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:holderIdentity":{}}}`)}}
		}
	}
	return out, nil
}

// LeaseToLock converts a fleetlock Lease (full or transformed) to a lock
// object.
func LeaseToLock(l *coordinationv1.Lease) model.LockObject {
	spec := &lock.FleetlockSpec{}
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
