package main

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const modulePath = "github.com/rebootwatch/rebootwatch"

// moduleZip writes root's module as the module proxy serves it: every file
// under root but nested modules (hack/helm, …), bin/, dist/ and .git,
// prefixed with module@version.
func moduleZip(t *testing.T, root, version string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			if strings.HasPrefix(d.Name(), ".") || rel == "bin" || rel == "dist" || rel == "screenshots" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir // a module of its own
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		w, err := zw.Create(modulePath + "@" + version + "/" + rel)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestGoInstallAtVersion (issue 23 §2): `go install
// github.com/rebootwatch/rebootwatch/cmd/rebootwatch@<version>` builds from
// the module proxy (here a file proxy serving this tree as v0.0.0-…), and
// the binary's --version, built with no -ldflags, says that version (the
// module version Go records in it).
func TestGoInstallAtVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the CLI from a module zip")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	// A version no release will have, so nothing real is shadowed in the
	// shared module cache, and removed from it afterwards.
	// A version of this run's own: a run killed before its cleanup leaves
	// its extracted tree in the shared module cache, which a later run of
	// the same version would build instead of the tree under test.
	version := fmt.Sprintf("v0.0.0-20000101000000-%012x", uint64(time.Now().UnixNano())&0xffffffffffff)
	proxy := t.TempDir()
	dir := filepath.Join(proxy, modulePath, "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"list":            []byte(version + "\n"),
		version + ".info": []byte(`{"Version":"` + version + `","Time":"2000-01-01T00:00:00Z"}`),
		version + ".mod":  gomod,
		version + ".zip":  moduleZip(t, root, version),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	modcache := strings.TrimSpace(run(t, root, nil, goBin, "env", "GOMODCACHE"))
	t.Cleanup(func() {
		// The extracted module, its download files and the version list
		// the file proxy answered (a cache the go command rebuilds).
		dl := filepath.Join(modcache, "cache", "download", modulePath, "@v")
		matches, _ := filepath.Glob(filepath.Join(dl, version+".*"))
		for _, m := range append(matches, filepath.Join(modcache, modulePath+"@"+version), filepath.Join(dl, "list")) {
			_ = os.RemoveAll(m)
		}
	})
	gobin := t.TempDir()
	// The dependencies come from the module cache (go.sum checks them);
	// only this module comes from the file proxy. No sum DB: offline, and
	// the dependencies are checked against the cache's own hashes.
	env := []string{"GOPROXY=file://" + filepath.ToSlash(proxy), "GOSUMDB=off", "GOFLAGS=-modcacherw",
		"GOBIN=" + gobin, "GOWORK=off"}
	run(t, t.TempDir(), env, goBin, "install", modulePath+"/cmd/rebootwatch@"+version)
	out := run(t, root, nil, filepath.Join(gobin, "rebootwatch"), "--version")
	if !strings.HasPrefix(out, "rebootwatch "+version+" ") {
		t.Fatalf("--version after go install @%s: %q", version, out)
	}
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s%s", name, args, err, out.String(), errb.String())
	}
	return out.String()
}
