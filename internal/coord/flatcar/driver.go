package flatcar

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/model"
)

// Driver is FLUO's coordinator driver.
type Driver struct{}

var _ coord.Driver = Driver{}

// Capabilities declares what FLUO's kind is to the engine, the sources and
// the RBAC render.
func (Driver) Capabilities() coord.Capabilities {
	return coord.Capabilities{
		Kind: Kind, Source: Source,
		Slots:           coord.SlotsNodeAnnotations,
		DefaultCapacity: DefaultMaxRebooting,
		CapacityFrom:    "operator.go defaultMaxRebootingNodes (no flag sets it)",
		// reboot-needed=true on a node without a slot: it waits.
		WaitersVisible:  true,
		NodeAnnotations: []string{Prefix},
		NodeLabels:      []string{Prefix},
		RBAC: []rbacv1.PolicyRule{
			// The operator's Deployment, for its settings (discovered
			// cluster-wide unless named).
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list"}},
			// The update-agent pod on a node the agent cordoned (listed by
			// spec.nodeName): whether the agent runs decides the uncordon.
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
		},
		Blockers: []model.BlockerKind{BlockerAgentStopped, BlockerRebootCheck, BlockerPaused,
			model.BlockerCordon, model.BlockerSlowReboot, model.BlockerWindow, model.BlockerLock},
		Actions: []model.Action{model.ActionUncordon},
		Writes:  "",
		// agent.go process: after the reboot, once the operator's
		// after-reboot checks passed and it cleared reboot-ok, and only
		// when agent-made-unschedulable is true.
		Uncordons: "FLUO's update-agent does after the operator's after-reboot checks, when it made the node unschedulable",
	}
}
