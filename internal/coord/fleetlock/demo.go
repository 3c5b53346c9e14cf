package fleetlock

import (
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord"
)

// Demo is fleetlock's demo scenario hook (coord.Demoer): a scenario
// sources/sim plays itself (--demo=fleetlock, the default demo), built into
// the simulated cluster.
func (Driver) Demo(time.Time) coord.Demo {
	return coord.Demo{Name: string(Kind), Builtin: true,
		Summary: "Fedora CoreOS under fleetlock: a ghost Lease and an orphaned, cordoned holder"}
}
