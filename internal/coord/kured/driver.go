package kured

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/model"
)

// Kind and Source are kured's lock kind and the model source that reads it.
const (
	Kind   = model.LockKured
	Source = model.SourceKured
)

// The node annotations kured writes with --annotate-nodes (the node
// decoders keep them into model.Node).
const (
	// MarkAnnotation is set on a node while kured reboots it, and removed
	// right before kured's --lock-release-delay.
	MarkAnnotation = "weave.works/kured-reboot-in-progress"
	// RebootNeededAnnotation is when kured last saw the node need a reboot
	// (RFC3339).
	RebootNeededAnnotation = "weave.works/kured-most-recent-reboot-needed"
)

// Capabilities implements coord.Driver: one lock object (an annotation of
// kured's DaemonSet), read as kured reads it and judged by the lock engine.
func (Driver) Capabilities() coord.Capabilities {
	return coord.Capabilities{
		Kind: Kind, Source: Source,
		Slots:           coord.SlotsLockObject,
		DefaultCapacity: 1,
		CapacityFrom:    "kured's --concurrency (its DaemonSet's args or KURED_CONCURRENCY; default 1)",
		// Nodes waiting for kured's lock are seen only through its metric
		// (kured_reboot_required), never in its objects.
		WaitersVisible:  false,
		NodeAnnotations: []string{MarkAnnotation, RebootNeededAnnotation},
		RBAC: []rbacv1.PolicyRule{
			// kured's DaemonSet: its lock annotation and its settings
			// (discovered cluster-wide unless named).
			{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"get", "list", "watch"}},
		},
		Blockers: []model.BlockerKind{model.BlockerLock, model.BlockerCordon, model.BlockerSlowReboot, model.BlockerDrain,
			model.BlockerReleaseDelay, model.BlockerWindow, model.BlockerAlert, model.BlockerPod},
		Actions: []model.Action{model.ActionRelease, model.ActionReap, model.ActionUncordon},
		Writes:  "the lock annotation of kured's DaemonSet (release, reap: one entry removed, or the annotation when it is the last)",
		// rebootAsRequired: after the reboot, holding the lock, unless the
		// node was cordoned before kured took it.
		Uncordons: "kured does after the reboot, at its release loop's first tick, when kured cordoned the node",
	}
}

// ReadLocks implements coord.LockReader: kured's locks, from the
// DaemonSets c.Names["kured-daemonset"] names (namespace/name,
// comma-separated: one per node pool), else discovered.
func (Driver) ReadLocks(ctx context.Context, c coord.Clients) ([]model.LockObject, error) {
	named, err := ParseDaemonSets(c.Names["kured-daemonset"])
	if err != nil {
		return nil, err
	}
	return ReadLocks(ctx, c.Kube, named)
}
