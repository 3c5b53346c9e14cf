package agent

import (
	"errors"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPageOutBinaryReclaimsResidentPages: the test binary's own pages, the
// code that has run so far among them, leave its RSS; and the process goes
// on (this test's own code is read back as it runs).
func TestPageOutBinaryReclaimsResidentPages(t *testing.T) {
	before, ok := residentFileBytes()
	if !ok {
		t.Fatal("cannot read RssFile in /proc/self/status")
	}
	advised, err := pageOutBinary()
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) {
		t.Skipf("this kernel or its seccomp profile refuses MADV_PAGEOUT: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	after, _ := residentFileBytes()
	exe, err := os.Stat("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("advised %d MiB of a %d MiB binary; file-backed RSS %d → %d KiB", advised>>20, exe.Size()>>20, before>>10, after>>10)
	if advised <= 0 || advised > exe.Size()+1<<20 {
		t.Errorf("advised %d bytes for a binary of %d bytes", advised, exe.Size())
	}
	if after >= before {
		t.Errorf("file-backed RSS %d KiB after the page-out, %d KiB before: nothing reclaimed", after>>10, before>>10)
	}
	// Every read-only mapping of the binary reads a page back alone now
	// (MADV_RANDOM: smaps' VmFlags "rr"), and no other mapping does.
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	ranges, err := readOnlyMappingsOf(maps, reflect.ValueOf(pageOutBinary).Pointer())
	if err != nil {
		t.Fatal(err)
	}
	mine := map[uintptr]bool{}
	for _, r := range ranges {
		mine[r.lo] = true
	}
	random := randomReadMappings(t)
	for _, r := range ranges {
		if !random[r.lo] {
			t.Errorf("mapping %x-%x of the binary is not read page by page", r.lo, r.hi)
		}
	}
	for lo := range random {
		if !mine[lo] {
			t.Errorf("mapping at %x, not the binary's read-only one, reads page by page", lo)
		}
	}
}

// randomReadMappings is the start of every mapping whose VmFlags in
// /proc/self/smaps hold "rr" (MADV_RANDOM).
func randomReadMappings(t *testing.T) map[uintptr]bool {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	out := map[uintptr]bool{}
	var lo uintptr
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if a, _, ok := strings.Cut(f[0], "-"); ok && !strings.HasSuffix(f[0], ":") {
			if v, err := strconv.ParseUint(a, 16, 64); err == nil {
				lo = uintptr(v)
			}
			continue
		}
		if f[0] == "VmFlags:" && slices.Contains(f[1:], "rr") {
			out[lo] = true
		}
	}
	return out
}
