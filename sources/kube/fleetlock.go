package kube

import (
	"context"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/model"
)

// This file is the fleetlock lock kind's source: the fleetlock-<group>
// Leases of the fleetlock namespace. While there is none there, it says
// where it looked, and whether fleetlock was found elsewhere (its
// Deployment, or fleetlock-* Leases of another namespace: fleetlock.Look,
// listed once at start): then the source is an error, never not-installed.

func init() { lockSources[model.LockFleetlock] = startFleetlock }

func startFleetlock(s *Source) {
	cs := s.opts.Client
	fns := s.opts.FleetlockNamespace
	fleet := s.newPart(model.SourceFleetlock, "leases.coordination.k8s.io", fns, &coordinationv1.Lease{}, fleetlock.Transform,
		func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			return cs.CoordinationV1().Leases(fns).List(ctx, lo)
		},
		func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
			return cs.CoordinationV1().Leases(fns).Watch(ctx, lo)
		})
	s.audit(fleet, auditTarget{what: "Lease", rc: restOf(cs.CoordinationV1().RESTClient()), resource: "leases",
		kind: "LeaseList", ns: fns})
	// Looked for elsewhere once the namespace read shows none (under s.mu).
	var elsewhere *fleetlock.Elsewhere
	looking := false
	fleet.whenSynced = func() (model.SourceStatus, string) {
		if len(s.fleet) > 0 {
			return model.StatusOK, ""
		}
		if elsewhere != nil {
			return elsewhere.Status()
		}
		if !looking {
			looking = true
			s.wg.Go(func() {
				ctx, cancel := context.WithTimeout(s.ctx, s.opts.RequestTimeout)
				e := fleetlock.Look(ctx, cs, fns)
				cancel()
				s.mu.Lock()
				elsewhere = &e
				s.mu.Unlock()
				s.refresh(fleet)
			})
		}
		return "", "" // not decided before other namespaces were looked at
	}
	onLease := func(obj any) {
		l, ok := obj.(*coordinationv1.Lease)
		if !ok || !strings.HasPrefix(l.Name, fleetlock.Prefix) {
			return
		}
		s.mu.Lock()
		first := !s.fleet[l.Namespace+"/"+l.Name]
		s.fleet[l.Namespace+"/"+l.Name] = true
		s.sink(model.LockUpserted{Lock: fleetlock.LockOf(l)})
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
			if !ok || !strings.HasPrefix(l.Name, fleetlock.Prefix) {
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
