package gobuild

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// linked matches the go command's -x line that runs the linker.
var linked = regexp.MustCompile(`(?m)/link(\.exe)? `)

// A second build of an unchanged command leaves the binary as it was (the
// go command's up-to-date check: no link), and the binary runs.
func TestUpToDateBinaryIsNotRelinked(t *testing.T) {
	if testing.Short() {
		t.Skip("links a command")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	bin, _, err := build(goBin, "./cmd/kubectl-rebootwatch")
	if err != nil {
		t.Fatal(err)
	}
	// -x prints every tool the go command runs: no link this time.
	again, trace, err := build(goBin, "./cmd/kubectl-rebootwatch", "-x")
	if err != nil {
		t.Fatal(err)
	}
	if again != bin {
		t.Errorf("second build into %s, first into %s", again, bin)
	}
	if linked.Match(trace) {
		t.Errorf("second build of an unchanged command linked it again:\n%s", trace)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "rebootwatch ") {
		t.Errorf("%s --version: %v %q", bin, err, out)
	}
	if got := Command(t, "./cmd/kubectl-rebootwatch"); got != bin {
		t.Errorf("Command = %s, want %s", got, bin)
	}
}

// Two checkouts never share a binary.
func TestCacheDirPerCheckout(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	a, err := cacheDir("/src/a/rebootwatch")
	if err != nil {
		t.Fatal(err)
	}
	b, err := cacheDir("/src/b/rebootwatch")
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Errorf("cacheDir gave %s for both checkouts", a)
	}
}
