package fleetlock

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/model"
)

// Kind and Source are fleetlock's lock kind and the model source that
// reads it.
const (
	Kind   = model.LockFleetlock
	Source = model.SourceFleetlock
)

// Capabilities implements coord.Driver: one lock object per group (a
// fleetlock-<group> Lease), judged by the lock engine.
func (Driver) Capabilities() coord.Capabilities {
	return coord.Capabilities{
		Kind: Kind, Source: Source,
		Slots:           coord.SlotsLockObject,
		DefaultCapacity: 1,
		CapacityFrom:    "one holder per fleetlock-<group> Lease (spec.holderIdentity)",
		// Zincati asks fleetlock for the lock; nothing in the API says who
		// is waiting.
		WaitersVisible: false,
		// fleetlock keeps nothing on a node: its holder is mapped through
		// the node's machine id (status.nodeInfo.machineID), which every
		// node decoder keeps.
		NodeAnnotations: nil,
		RBAC: []rbacv1.PolicyRule{
			// The fleetlock-<group> Leases of fleetlock's namespace.
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch"}},
		},
		Blockers: []model.BlockerKind{model.BlockerLock, model.BlockerCordon, model.BlockerSlowReboot, model.BlockerDrain},
		Actions:  []model.Action{model.ActionRelease, model.ActionReap, model.ActionUncordon},
		Writes:   "spec.holderIdentity of a fleetlock-<group> Lease (release, reap: set to \"\", as fleetlock's own unlock), and the holder's uncordon",
		// The steady-state handler: only while the holder still holds.
		Uncordons: "fleetlock does when the holder unlocks itself",
	}
}

// ReadLocks implements coord.LockReader: the fleetlock-<group> Leases of
// c.Names["fleetlock-namespace"] (fleetlock's default when unset).
func (Driver) ReadLocks(ctx context.Context, c coord.Clients) ([]model.LockObject, error) {
	return ReadLocks(ctx, c.Kube, c.Names["fleetlock-namespace"])
}
