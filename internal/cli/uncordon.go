package cli

import (
	"github.com/spf13/cobra"

	"github.com/rebootwatch/rebootwatch/model"
)

// newUncordon is `rebootwatch uncordon --node NODE`: uncordon a node that
// finished its reboot but that its coordinator left cordoned.
func (r *runner) newUncordon() *cobra.Command {
	return r.actionCommand(model.ActionUncordon,
		"uncordon --node NODE [--dry-run] [--yes]",
		"Uncordon a node that finished its reboot but that its coordinator left cordoned (done · still cordoned)",
		`  # fleetlock left worker-1 cordoned after someone else freed its Lease
  rebootwatch uncordon --node worker-1`)
}
