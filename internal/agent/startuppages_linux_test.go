package agent

import (
	"errors"
	"os"
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
}
