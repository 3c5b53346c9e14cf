package agent

import (
	"bytes"
	"fmt"
	"log/slog"
	"strconv"
)

// reclaimStartupPages has the kernel reclaim the pages of the agent's binary
// that start-up touched (pageOutBinary), when --reclaim-startup-pages is on:
// twice, at "start" (after the flags are read, before any client is made:
// what package initialisation touched, every API group's scheme
// registration among it) and at "synced" (every source synced: what the
// first lists' decoding touched). It logs what that did: the bytes advised
// and the file-backed RSS before and after. A kernel or a seccomp profile
// that refuses is logged and changes nothing else.
func reclaimStartupPages(log *slog.Logger, stage string) {
	before, _ := residentFileBytes()
	advised, err := pageOutBinary()
	if err != nil {
		log.Info("start-up pages not reclaimed", "stage", stage, "error", err.Error())
		return
	}
	attrs := []any{"stage", stage, "advisedMiB", mib(advised)}
	if after, ok := residentFileBytes(); ok {
		attrs = append(attrs, "fileBackedRSSMiBBefore", mib(before), "fileBackedRSSMiBAfter", mib(after))
	}
	log.Info("start-up pages reclaimed", attrs...)
}

// mib is n bytes in MiB, to a tenth.
func mib(n int64) float64 { return float64(n*10/(1<<20)) / 10 }

// addrRange is one mapping of the process's address space, [lo, hi).
type addrRange struct{ lo, hi uintptr }

// readOnlyMappingsOf reads /proc/self/maps (maps) for the mappings of the
// file that the mapping holding pc maps: the one holding the agent's own code
// (pc is one of its functions), found by address so that no path is compared
// (an overlay filesystem may name the file differently in maps than
// /proc/self/exe does). It returns every mapping of that file (device and
// inode) that is not writable: the binary's code and read-only data, never
// its data, its bss, the heap or another file. A maps line it cannot parse is
// an error, not a line skipped.
func readOnlyMappingsOf(maps []byte, pc uintptr) ([]addrRange, error) {
	type mapping struct {
		r          addrRange
		writable   bool
		dev, inode string
	}
	var all []mapping
	var file *mapping
	for n, line := range bytes.Split(maps, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		// address perms offset dev inode [path]
		f := bytes.Fields(line)
		if len(f) < 5 {
			return nil, fmt.Errorf("maps line %d: %d fields, want at least 5", n+1, len(f))
		}
		lo, hi, ok := bytes.Cut(f[0], []byte("-"))
		a, err1 := strconv.ParseUint(string(lo), 16, 64)
		b, err2 := strconv.ParseUint(string(hi), 16, 64)
		if !ok || err1 != nil || err2 != nil || b <= a || len(f[1]) < 2 {
			return nil, fmt.Errorf("maps line %d: cannot read the range %q and permissions %q", n+1, f[0], f[1])
		}
		all = append(all, mapping{
			r:        addrRange{uintptr(a), uintptr(b)},
			writable: f[1][1] == 'w',
			dev:      string(f[3]),
			inode:    string(f[4]),
		})
		if uintptr(a) <= pc && pc < uintptr(b) {
			file = &all[len(all)-1]
		}
	}
	if file == nil {
		return nil, fmt.Errorf("no mapping holds the agent's code at %#x", pc)
	}
	if file.inode == "0" {
		return nil, fmt.Errorf("the agent's code at %#x is in a mapping of no file", pc)
	}
	dev, inode := file.dev, file.inode
	var out []addrRange
	for _, m := range all {
		if m.dev == dev && m.inode == inode && !m.writable {
			out = append(out, m.r)
		}
	}
	return out, nil
}
