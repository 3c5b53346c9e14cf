// Package golist is a test helper: the import paths a module's packages
// depend on, as `go list -deps` gives them, for the tests that hold what
// the binaries must never link (kubectl's cli-runtime, shoutrrr's router).
//
// It must only run `go list`; it builds nothing and judges nothing.
package golist

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Deps runs `go list -deps pkgs...` in the module root, which is up levels
// above the test's directory, and returns every package listed. It skips t
// when go is not on PATH and fails it when go list fails.
func Deps(t *testing.T, up int, pkgs ...string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	parts := make([]string, up)
	for i := range parts {
		parts[i] = ".."
	}
	root, err := filepath.Abs(filepath.Join(parts...))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goBin, append([]string{"list", "-deps"}, pkgs...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list -deps: %v\n%s", err, msg)
	}
	return strings.Fields(string(out))
}
