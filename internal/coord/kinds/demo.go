package kinds

import (
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord"
)

// Demos are the demo scenarios of every registered kind with a demo hook
// (coord.Demoer), in registry order, for time zero start.
func Demos(start time.Time) []coord.Demo {
	var out []coord.Demo
	for _, d := range registry {
		if h, ok := d.(coord.Demoer); ok {
			out = append(out, h.Demo(start))
		}
	}
	return out
}
