package agent

import (
	"bytes"
	"os"
	"reflect"
	"strconv"

	"golang.org/x/sys/unix"
)

// pageOutBinary asks the kernel to reclaim the resident pages of the agent's
// own binary: madvise MADV_PAGEOUT over its read-only mappings (its code and
// read-only data), after MADV_RANDOM over the same, so that a page touched
// again is read back alone instead of with its neighbours (read-ahead would
// bring back most of what was reclaimed). Start-up touches pages it never
// needs again, and they stay counted in the agent's RSS and its container's
// working set until memory runs short. The hints lose nothing: a page still
// in use is read back from the page cache or the file at its next touch. It
// returns the bytes of the ranges advised; an error (a kernel before 5.4 has
// no MADV_PAGEOUT, a seccomp profile may refuse madvise) changes nothing but
// the ranges already advised.
func pageOutBinary() (int64, error) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	ranges, err := readOnlyMappingsOf(maps, reflect.ValueOf(pageOutBinary).Pointer())
	if err != nil {
		return 0, err
	}
	var advised int64
	for _, r := range ranges {
		for _, advice := range []uintptr{unix.MADV_RANDOM, unix.MADV_PAGEOUT} {
			if _, _, e := unix.Syscall(unix.SYS_MADVISE, r.lo, r.hi-r.lo, advice); e != 0 {
				return advised, e
			}
		}
		advised += int64(r.hi - r.lo)
	}
	return advised, nil
}

// residentFileBytes is the process's file-backed RSS (RssFile in
// /proc/self/status), and whether it could be read.
func residentFileBytes() (int64, bool) {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("RssFile:")); ok {
			f := bytes.Fields(v)
			if len(f) == 2 && string(f[1]) == "kB" {
				if kib, err := strconv.ParseInt(string(f[0]), 10, 64); err == nil {
					return kib << 10, true
				}
			}
		}
	}
	return 0, false
}
