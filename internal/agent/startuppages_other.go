//go:build !linux

package agent

import "errors"

// pageOutBinary does nothing outside Linux (see startuppages_linux.go).
func pageOutBinary() (int64, error) { return 0, errors.New("not supported on this OS") }

// residentFileBytes is unknown outside Linux.
func residentFileBytes() (int64, bool) { return 0, false }
