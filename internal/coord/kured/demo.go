package kured

import (
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord"
)

// Demo is kured's demo scenario hook (coord.Demoer): a scenario sources/sim
// plays itself (--demo=kured), built into the simulated cluster.
func (Driver) Demo(time.Time) coord.Demo {
	return coord.Demo{Name: string(Kind), Builtin: true,
		Summary: "kured: an orphaned lock, then a drain held by a PodDisruptionBudget and a closing window"}
}
