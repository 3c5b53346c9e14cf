package cli

import (
	"github.com/spf13/cobra"

	"github.com/rebootwatch/rebootwatch/model"
)

// newReap is `rebootwatch reap`: reap a lock held by a node that no longer
// exists (ghost), or whose kured TTL passed.
func (r *runner) newReap() *cobra.Command {
	return r.actionCommand(model.ActionReap,
		"reap "+kindUsage()+" [--lock ns/name] [--holder H] [--entry N] [--dry-run] [--yes]",
		"Reap a lock held by a node that no longer exists (or whose TTL passed)",
		`  # Reap fleetlock's ghost Lease
  rebootwatch reap --kind fleetlock --lock default/fleetlock-default

  # A kured multi-lock entry of a deleted node, from a script
  rebootwatch reap --kind kured --holder worker-9 --yes`)
}
