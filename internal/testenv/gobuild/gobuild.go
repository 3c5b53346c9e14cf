// Package gobuild is a test helper: it builds this module's commands
// (./cmd/rebootwatch, ./cmd/rebootwatch-agent, …) for the tests that must
// run the real binary (signals, terminals, an agent in its own process).
//
// Each binary is built with `go build -o` into a directory of this checkout's
// own under the user's cache directory, which the go command leaves alone
// when the binary there is already up to date: a link of a whole command
// costs about 4 CPU-seconds, and the suite is CPU-bound (issue 35 §3). Go's
// build ID decides "up to date", so a changed source is always rebuilt; a
// lock file serialises the test binaries that build the same command at once.
//
// It must only build: it never judges, starts or removes what it built.
package gobuild

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var built struct {
	mu   sync.Mutex
	bins map[string]*binary
}

type binary struct {
	once sync.Once
	path string
	err  error
}

// Command returns the path of the module's command pkg (a path relative to
// the module root, "./cmd/rebootwatch"), built on the process's first call
// for pkg. It skips t when go is not on PATH and fails it when the build
// fails.
func Command(t testing.TB, pkg string) string {
	t.Helper()
	if !strings.HasPrefix(pkg, "./cmd/") {
		t.Fatalf("gobuild: %q is not one of the module's commands (./cmd/NAME)", pkg)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	built.mu.Lock()
	if built.bins == nil {
		built.bins = map[string]*binary{}
	}
	b := built.bins[pkg]
	if b == nil {
		b = &binary{}
		built.bins[pkg] = b
	}
	built.mu.Unlock()
	b.once.Do(func() { b.path, _, b.err = build(goBin, pkg) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// build runs `go build [flags] -o BIN pkg` and returns BIN and what the go
// command printed.
func build(goBin, pkg string, flags ...string) (string, []byte, error) {
	dir, err := checkoutDir()
	if err != nil {
		return "", nil, err
	}
	root, err := moduleRoot()
	if err != nil {
		return "", nil, err
	}
	name := filepath.Base(pkg)
	unlock, err := lock(filepath.Join(dir, name+".lock"))
	if err != nil {
		return "", nil, fmt.Errorf("gobuild: lock %s: %w", name, err)
	}
	defer unlock()
	bin := filepath.Join(dir, name)
	cmd := exec.Command(goBin, append(append([]string{"build"}, flags...), "-o", bin, pkg)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", out, fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin, out, nil
}

// Dir returns this checkout's directory under the user's cache directory,
// made if missing: for a test that installs something it wants kept
// between runs (a GOBIN), in a subdirectory of its own.
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := checkoutDir()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func checkoutDir() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	return cacheDir(root)
}

// cacheDir is this checkout's directory of built commands: one per module
// root, so two checkouts (worktrees) never build into the same file.
func cacheDir(root string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = filepath.Join(os.TempDir(), fmt.Sprintf("rebootwatch-test-%d", os.Getuid()))
	}
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(base, "rebootwatch-test", "bin-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("gobuild: %w", err)
	}
	return dir, nil
}

// moduleRoot is the nearest directory above the working directory (the
// test's package) holding go.mod.
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("gobuild: no go.mod above %s", wd)
		}
	}
}
