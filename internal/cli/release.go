package cli

import (
	"github.com/spf13/cobra"

	"github.com/rebootwatch/rebootwatch/model"
)

// newRelease is `rebootwatch release`: release a lock left behind by a node
// that finished its reboot (orphaned), or an expired kured lock.
func (r *runner) newRelease() *cobra.Command {
	return r.actionCommand(model.ActionRelease,
		"release "+kindUsage()+" [--lock ns/name] [--holder H] [--entry N] [--keep-cordoned] [--dry-run] [--yes]",
		"Release a lock left behind by a node that finished its reboot",
		`  # See the verdict, the gates and the exact write, writing nothing
  rebootwatch release --kind kured --dry-run

  # Release fleetlock's Lease from a script (the holder is uncordoned too)
  rebootwatch release --kind fleetlock --lock default/fleetlock-default --yes -o json`)
}
