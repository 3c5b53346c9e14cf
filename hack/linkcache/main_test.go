package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeLinker writes a tool named link into dir: it appends one line to
// dir/runs per run, and writes -o from its inputs (the importcfg and the
// main package's archive). With FAKE_LINK_FAIL set it fails instead.
func fakeLinker(t *testing.T, dir string) string {
	t.Helper()
	tool := filepath.Join(dir, "link")
	script := `#!/bin/sh
echo run >>"` + filepath.Join(dir, "runs") + `"
if [ -n "$FAKE_LINK_FAIL" ]; then echo "link: undefined: main.main" >&2; exit 2; fi
out= cfg=
while [ $# -gt 1 ]; do
  case "$1" in
    -o) out=$2; shift ;;
    -importcfg) cfg=$2; shift ;;
  esac
  shift
done
{ echo "linked"; cat "$cfg" "$1"; } >"$out"
echo "link says hello"
`
	if err := os.WriteFile(tool, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return tool
}

func runs(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "runs"))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "run\n")
}

// work lays out one link's inputs as the go command does, in a work
// directory named go-buildNNN with the action's directory bNNN.
type work struct {
	out, cfg, pkg string
}

func newWork(t *testing.T, n int, cfg, pkg string) work {
	t.Helper()
	b := filepath.Join(tmpRoot(t), "go-build"+strconv.Itoa(1000+n), "b"+strconv.Itoa(n))
	if err := os.MkdirAll(filepath.Join(b, "exe"), 0o755); err != nil {
		t.Fatal(err)
	}
	w := work{out: filepath.Join(b, "exe", "a.test"), cfg: filepath.Join(b, "importcfg.link"), pkg: filepath.Join(b, "_pkg_.a")}
	// The importcfg names the main package's archive in the work directory.
	if err := os.WriteFile(w.cfg, []byte(cfg+"\npackagefile main="+w.pkg+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.pkg, []byte(pkg), 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

// archive writes a package archive into a build cache under the test's
// directory, named as the go command names it (the SHA-256 of its content),
// and returns the importcfg line naming it.
func archive(t *testing.T, name, content string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(content))
	hexSum := hex.EncodeToString(sum[:])
	dir := filepath.Join(tmpRoot(t), "gocache", hexSum[:2])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, hexSum+"-d")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return "packagefile " + name + "=" + path
}

// tmpRoot is the test's temporary directory: the same for every work
// directory of one test, as os.TempDir is for the go command's.
func tmpRoot(t *testing.T) string {
	roots.Lock()
	defer roots.Unlock()
	if roots.m[t] == "" {
		roots.m[t] = t.TempDir()
	}
	return roots.m[t]
}

var roots = struct {
	sync.Mutex
	m map[*testing.T]string
}{m: map[*testing.T]string{}}

func (w work) args(extra ...string) []string {
	args := []string{"-o", w.out, "-importcfg", w.cfg, "-buildmode=exe", "-buildid=act/main/act"}
	return append(append(args, extra...), w.pkg)
}

func link(t *testing.T, tool string, args, env []string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(tool, args, env, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func testEnv(t *testing.T) (cacheDir string, env []string) {
	cacheDir = filepath.Join(t.TempDir(), "cache")
	return cacheDir, []string{"REBOOTWATCH_LINKCACHE_DIR=" + cacheDir, "GOROOT=/usr/local/go", "PWD=/somewhere"}
}

// A second link with the same inputs, in another run's work directory, is
// copied from the cache: the linker does not run, the output is the same.
func TestSameInputsAreCopied(t *testing.T) {
	dir := t.TempDir()
	tool := fakeLinker(t, dir)
	cacheDir, env := testEnv(t)

	first := newWork(t, 1, archive(t, "fmt", "fmt v1"), "main v1")
	code, stdout, stderr := link(t, tool, first.args(), env)
	if code != 0 || stdout != "link says hello\n" || stderr != "" {
		t.Fatalf("first link: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	want, err := os.ReadFile(first.out)
	if err != nil {
		t.Fatal(err)
	}

	second := newWork(t, 7, archive(t, "fmt", "fmt v1"), "main v1")
	code, stdout, stderr = link(t, tool, second.args(), append(env, "PWD=/elsewhere"))
	if code != 0 || stdout != "" || stderr != "" {
		t.Fatalf("second link: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if n := runs(t, dir); n != 1 {
		t.Errorf("the linker ran %d times, want 1 (the second link is a copy)", n)
	}
	got, err := os.ReadFile(second.out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the copied output differs from the linked one:\n%s\nwant\n%s", got, want)
	}
	info, err := os.Stat(second.out)
	if err != nil || info.Mode().Perm()&0o100 == 0 {
		t.Errorf("the copied output is not executable: %v %v", info.Mode(), err)
	}

	// The go command rewrites the build ID inside its output in place: the
	// output is a copy, and writing it leaves the entry as it was.
	if err := os.WriteFile(second.out, []byte("rewritten"), 0o755); err != nil {
		t.Fatal(err)
	}
	third := newWork(t, 3, archive(t, "fmt", "fmt v1"), "main v1")
	if code, _, _ := link(t, tool, third.args(), env); code != 0 {
		t.Fatalf("third link: exit %d", code)
	}
	if got, _ := os.ReadFile(third.out); !bytes.Equal(got, want) {
		t.Errorf("after the second output was rewritten, the third copy is %q, want %q", got, want)
	}
	if n := runs(t, dir); n != 1 {
		t.Errorf("the linker ran %d times, want 1", n)
	}

	// The go command names an archive it has just compiled by its place in
	// the work directory, and the same archive on the next run by its
	// place in the build cache: the same content, the same link.
	fresh := filepath.Join(tmpRoot(t), "go-build1004", "b9", "_fmt_.a")
	if err := os.MkdirAll(filepath.Dir(fresh), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fresh, []byte("fmt v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	fourth := newWork(t, 4, "packagefile fmt="+fresh, "main v1")
	if code, _, _ := link(t, tool, fourth.args(), env); code != 0 {
		t.Fatalf("fourth link: exit %d", code)
	}
	if n := runs(t, dir); n != 1 {
		t.Errorf("the linker ran %d times, want 1 (an archive in the work directory is named by its content)", n)
	}
	entries, err := os.ReadDir(cacheDir)
	if err != nil || len(entries) != 1 {
		t.Errorf("cache holds %d entries (%v), want 1", len(entries), err)
	}
}

// Any input that differs is a new link: the package archives the importcfg
// names, the main package, the flags, the build ID, the environment a link
// reads, the linker itself.
func TestChangedInputsLinkAgain(t *testing.T) {
	dir := t.TempDir()
	tool := fakeLinker(t, dir)
	_, env := testEnv(t)
	base := func(n int) work { return newWork(t, n, archive(t, "fmt", "fmt v1"), "main v1") }

	if code, _, _ := link(t, tool, base(1).args(), env); code != 0 {
		t.Fatal("first link failed")
	}
	cases := []struct {
		name string
		args []string
		env  []string
	}{
		{"another package archive", newWork(t, 2, archive(t, "fmt", "fmt v2"), "main v1").args(), env},
		{"another main package", newWork(t, 3, archive(t, "fmt", "fmt v1"), "main v2").args(), env},
		{"another flag", base(4).args("-w"), env},
		{"another build ID", func() []string {
			a := base(5).args()
			for i := range a {
				if strings.HasPrefix(a[i], "-buildid=") {
					a[i] = "-buildid=other/main/other"
				}
			}
			return a
		}(), env},
		{"another GOROOT", base(6).args(), append(env, "GOROOT=/opt/go")},
		{"another CC", base(7).args(), append(env, "CC=clang")},
		{"another CGO_LDFLAGS", base(8).args(), append(env, "CGO_LDFLAGS=-lfoo")},
	}
	for i, c := range cases {
		before := runs(t, dir)
		code, _, stderr := link(t, tool, c.args, c.env)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.name, code, stderr)
		}
		if runs(t, dir) != before+1 {
			t.Errorf("case %d, %s: served from the cache, want a link", i, c.name)
		}
	}

	// A new linker binary (its size or time changed): linked again.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(tool, later, later); err != nil {
		t.Fatal(err)
	}
	before := runs(t, dir)
	if code, _, _ := link(t, tool, base(9).args(), env); code != 0 || runs(t, dir) != before+1 {
		t.Errorf("a changed linker was served from the cache (exit %d)", code)
	}
}

// A failed link fails with the linker's code and message, and is not stored.
func TestFailedLinkIsNotStored(t *testing.T) {
	dir := t.TempDir()
	tool := fakeLinker(t, dir)
	cacheDir, env := testEnv(t)
	w := newWork(t, 1, archive(t, "fmt", "fmt v1"), "main v1")
	t.Setenv("FAKE_LINK_FAIL", "1") // the linker's own environment
	code, _, stderr := link(t, tool, w.args(), env)
	if code != 2 || !strings.Contains(stderr, "undefined: main.main") {
		t.Fatalf("failed link: exit %d, stderr %q; want 2 and the linker's message", code, stderr)
	}
	if entries, _ := os.ReadDir(cacheDir); len(entries) != 0 {
		t.Errorf("a failed link left %d cache entries", len(entries))
	}
	t.Setenv("FAKE_LINK_FAIL", "")
	if code, _, _ := link(t, tool, w.args(), env); code != 0 || runs(t, dir) != 2 {
		t.Errorf("the link after a failure: exit %d, %d runs; want 0 and a second run", code, runs(t, dir))
	}
}

// What is not a cacheable link runs as it is: other tools, the -V=full
// query, links with flags that write more than -o, and everything when
// REBOOTWATCH_LINKCACHE=off.
func TestPassThrough(t *testing.T) {
	dir := t.TempDir()
	tool := fakeLinker(t, dir)
	cacheDir, env := testEnv(t)
	w := newWork(t, 1, archive(t, "fmt", "fmt v1"), "main v1")

	for i, c := range []struct {
		name string
		args []string
		env  []string
	}{
		{"off", w.args(), append(env, "REBOOTWATCH_LINKCACHE=off")},
		{"a profile", w.args("-cpuprofile", filepath.Join(dir, "cpu.out")), env},
		{"no build ID", []string{"-o", w.out, "-importcfg", w.cfg, w.pkg}, env},
		{"a plugin", w.args("-buildmode=plugin"), env},
	} {
		for round := 0; round < 2; round++ {
			before := runs(t, dir)
			if code, _, stderr := link(t, tool, c.args, c.env); code != 0 {
				t.Fatalf("%s: exit %d: %s", c.name, code, stderr)
			}
			if runs(t, dir) != before+1 {
				t.Errorf("case %d, %s, round %d: served from the cache, want a link", i, c.name, round)
			}
		}
	}
	if entries, _ := os.ReadDir(cacheDir); len(entries) != 0 {
		t.Errorf("pass-through links left %d cache entries", len(entries))
	}

	// Another tool: its arguments, output and exit code untouched.
	echo := filepath.Join(dir, "compile")
	if err := os.WriteFile(echo, []byte("#!/bin/sh\necho \"compile $*\"\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ := link(t, echo, []string{"-V=full"}, env)
	if code != 3 || stdout != "compile -V=full\n" {
		t.Errorf("compile -V=full: exit %d, stdout %q; want 3 and the tool's own output", code, stdout)
	}
	code, _, stderr := link(t, filepath.Join(dir, "missing"), nil, env)
	if code != 127 || !strings.Contains(stderr, "missing") {
		t.Errorf("a missing tool: exit %d, stderr %q", code, stderr)
	}
}

// A cache the wrapper cannot write (its directory is a file) costs the cache,
// never the build.
func TestBrokenCacheStillLinks(t *testing.T) {
	dir := t.TempDir()
	tool := fakeLinker(t, dir)
	blocker := filepath.Join(dir, "not-a-dir")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"REBOOTWATCH_LINKCACHE_DIR=" + blocker}
	for n := 1; n <= 2; n++ {
		w := newWork(t, n, archive(t, "fmt", "fmt v1"), "main v1")
		code, _, stderr := link(t, tool, w.args(), env)
		if code != 0 {
			t.Fatalf("link %d: exit %d", n, code)
		}
		if !strings.Contains(stderr, "linkcache: not stored") {
			t.Errorf("link %d: stderr %q, want the cache's fault reported", n, stderr)
		}
		if b, err := os.ReadFile(w.out); err != nil || !strings.HasPrefix(string(b), "linked") {
			t.Errorf("link %d: output %q, %v", n, b, err)
		}
	}
	if runs(t, dir) != 2 {
		t.Errorf("the linker ran %d times, want 2", runs(t, dir))
	}

	w := newWork(t, 3, archive(t, "fmt", "fmt v1"), "main v1")
	code, _, stderr := link(t, tool, w.args(), append(env, "REBOOTWATCH_LINKCACHE_MAX_MB=lots"))
	if code != 0 || !strings.Contains(stderr, "REBOOTWATCH_LINKCACHE_MAX_MB") {
		t.Errorf("a bad limit: exit %d, stderr %q; want a link and the setting named", code, stderr)
	}
}

// Past the limit, the least recently used entries go first: one used by a
// copy is kept over an older-stored one that was not.
func TestTrimKeepsTheRecentlyUsed(t *testing.T) {
	dir := t.TempDir()
	tool := fakeLinker(t, dir)
	cacheDir, env := testEnv(t)
	env = append(env, "REBOOTWATCH_LINKCACHE_MAX_MB=1")
	big := strings.Repeat("x", 400<<10) // each output is about 400 KiB
	pkgs := []string{"a" + big, "b" + big}
	for i, p := range pkgs {
		if code, _, _ := link(t, tool, newWork(t, i, "", p).args(), env); code != 0 {
			t.Fatal("link failed")
		}
	}
	entries, _ := os.ReadDir(cacheDir)
	if len(entries) != 2 {
		t.Fatalf("cache holds %d entries, want 2", len(entries))
	}
	// Age both, then use a's: b is now the least recently used.
	old := time.Now().Add(-time.Hour)
	for _, e := range entries {
		if err := os.Chtimes(filepath.Join(cacheDir, e.Name()), old, old); err != nil {
			t.Fatal(err)
		}
	}
	stale := filepath.Join(cacheDir, "tmp-crashed")
	if err := os.WriteFile(stale, []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(stale, old.Add(-time.Hour), old.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	before := runs(t, dir)
	link(t, tool, newWork(t, 10, "", pkgs[0]).args(), env)
	if runs(t, dir) != before {
		t.Fatal("a's second link was not a copy")
	}
	// A third entry takes the cache past 1 MiB: b goes, a and c stay.
	link(t, tool, newWork(t, 11, "", "c"+big).args(), env)
	// b last: linking it again stores it, and trims again.
	for i, c := range []struct {
		name, pkg string
		copied    bool
	}{{"a", pkgs[0], true}, {"c", "c" + big, true}, {"b", pkgs[1], false}} {
		before := runs(t, dir)
		link(t, tool, newWork(t, 20+i, "", c.pkg).args(), env)
		if copied := runs(t, dir) == before; copied != c.copied {
			t.Errorf("entry %s after the trim: copied %v, want %v", c.name, copied, c.copied)
		}
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a crashed store's temporary file is still there: %v", err)
	}
}

// With the real go command: the wrapper leaves go's own tool IDs alone (no
// recompile, the build succeeds), a second build of the same program is a
// copy, and the copy runs.
func TestWithTheGoCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds with the go command")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "linkcache")
	if out, err := exec.Command(goBin, "build", "-o", wrapper, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	src := filepath.Join(dir, "hello")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"go.mod":  "module hello\n\ngo 1.22\n",
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello from a cached link\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cacheDir := filepath.Join(dir, "cache")
	logFile := filepath.Join(dir, "log")
	build := func(out string) string {
		cmd := exec.Command(goBin, "build", "-x", "-toolexec="+wrapper, "-o", out, ".")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "REBOOTWATCH_LINKCACHE_DIR="+cacheDir, "REBOOTWATCH_LINKCACHE_LOG="+logFile, "GOFLAGS=")
		trace, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go build -toolexec: %v\n%s", err, trace)
		}
		got, err := exec.Command(out).Output()
		if err != nil || string(got) != "hello from a cached link\n" {
			t.Fatalf("%s: %q %v", out, got, err)
		}
		return string(trace)
	}
	build(filepath.Join(dir, "one"))
	entries, _ := os.ReadDir(cacheDir)
	if len(entries) != 1 {
		t.Fatalf("after one build the cache holds %d entries, want 1", len(entries))
	}
	// Another output path: the go command links again (nothing is up to
	// date there), and the wrapper copies.
	trace := build(filepath.Join(dir, "two"))
	if !strings.Contains(trace, "-toolexec") && !strings.Contains(trace, wrapper) {
		t.Errorf("go build -x shows no link through the wrapper:\n%s", trace)
	}
	log, _ := os.ReadFile(logFile)
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "linked "+entries[0].Name()) || !strings.HasPrefix(lines[1], "copied "+entries[0].Name()) {
		t.Errorf("the wrapper's log is %q, want one link, then one copy of the same entry", lines)
	}
	one, _ := os.ReadFile(filepath.Join(dir, "one"))
	two, _ := os.ReadFile(filepath.Join(dir, "two"))
	if !bytes.Equal(one, two) {
		t.Errorf("the copied binary differs from the linked one (%d vs %d bytes)", len(two), len(one))
	}
}
