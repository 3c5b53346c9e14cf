package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/testenv/gobuild"
)

const modulePath = "github.com/rebootwatch/rebootwatch"

// moduleFile is one file of the module as the proxy serves it.
type moduleFile struct {
	rel  string // slash-separated, relative to the module root
	data []byte
}

// moduleFiles reads root's module as the module proxy serves it: every file
// under root but nested modules (hack/helm, …), bin/, dist/, .git and, in a
// git checkout, the files git ignores, in lexical order. The proxy serves a
// tag's committed files, so an ignored build artefact (a `go test -c`
// binary left in the tree) is not part of the module; zipping one made this
// test hash and compress 52 MB more under -race (about 40 CPU-seconds).
func moduleFiles(t *testing.T, root string) []moduleFile {
	t.Helper()
	kept := gitKept(t, root)
	var files []moduleFile
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
		if kept != nil && !kept[rel] {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, moduleFile{rel: rel, data: data})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// gitKept returns the files of root's checkout that git does not ignore
// (tracked, or untracked and not ignored), slash-separated and relative to
// root; nil when root is not a git checkout (the module's own zip), where
// every file is kept.
func gitKept(t *testing.T, root string) map[string]bool {
	t.Helper()
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		return nil
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files in %s: %v", root, err)
	}
	kept := map[string]bool{}
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			kept[f] = true
		}
	}
	return kept
}

// contentVersion is a pseudo-version no release will have, named by the
// checkout's path and the module's content: the same tree in the same
// checkout gets the same version, so the go command's build cache (keyed
// on the extracted directory and the files' content) serves a second
// install of an unchanged tree; any changed file, or another checkout,
// gets a version of its own, so a tree another run left in the shared
// module cache is never built instead of the tree under test.
func contentVersion(root string, files []moduleFile) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", root)
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00", f.rel, len(f.data))
		h.Write(f.data)
	}
	return fmt.Sprintf("v0.0.0-20000101000000-%x", h.Sum(nil)[:6])
}

// moduleZip writes the files as the module proxy serves them, prefixed
// with module@version.
func moduleZip(t *testing.T, files []moduleFile, version string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, f := range files {
		w, err := zw.Create(modulePath + "@" + version + "/" + f.rel)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(f.data); err != nil {
			t.Fatal(err)
		}
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
	// shared module cache, and removed from it afterwards; named by the
	// content (contentVersion).
	files := moduleFiles(t, root)
	version := contentVersion(root, files)
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
		version + ".zip":  moduleZip(t, files, version),
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
	// GOBIN of the checkout's own, kept between runs: go install leaves a
	// binary there that is up to date (the same build ID) as it is.
	gobin := filepath.Join(gobuild.Dir(t), "install")
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
