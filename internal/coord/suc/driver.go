package suc

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/model"
)

// Driver is SUC's coordinator driver.
type Driver struct{}

var _ coord.Driver = Driver{}

// Capabilities declares what SUC's kind is to the engine, the sources and
// the RBAC render.
func (Driver) Capabilities() coord.Capabilities {
	return coord.Capabilities{
		Kind: Kind, Source: Source,
		Slots:           coord.SlotsObjectStatus,
		DefaultCapacity: 0,
		CapacityFrom:    "each Plan's spec.concurrency",
		// A selected node whose plan label is not the latest hash waits.
		WaitersVisible: true,
		NodeLabels:     []string{LabelPlanPrefix, LabelHostname},
		RBAC: []rbacv1.PolicyRule{
			{APIGroups: []string{Group}, Resources: []string{Resource}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list", "watch"}},
		},
		Blockers: []model.BlockerKind{BlockerNotValidated, BlockerNotResolved, BlockerJobFailed,
			model.BlockerCordon, model.BlockerDrain, model.BlockerWindow, model.BlockerLock},
		Actions: []model.Action{model.ActionUncordon},
		Writes:  "",
		// handle_batch.go handleJobs: the node label, then the uncordon,
		// only for a job Complete; a failed job never uncordons.
		Uncordons: "system-upgrade-controller does only after a successful job (with the plan's node label)",
	}
}
