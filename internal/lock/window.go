package lock

import (
	"github.com/rebootwatch/rebootwatch/internal/timewindow"
)

// RebootWindow is kured's reboot window (internal/timewindow: kured's
// pkg/timewindow semantics, shared with the coordinators built on it).
type RebootWindow = timewindow.Window

// ParseRebootWindow builds kured's window from its four settings. An error
// is what kured itself fails on at start (it then does not run at all).
func ParseRebootWindow(days []string, start, end, zone string) (*RebootWindow, error) {
	return timewindow.Parse(days, start, end, zone)
}
