// Command linkcache is the go command's -toolexec wrapper for `make test`:
// it keeps the linker's outputs, so that a test binary whose inputs have not
// changed is copied instead of linked again.
//
//	go test -toolexec=bin/linkcache ./...
//
// The go command caches compiled packages, but it links every test binary
// again on every run: under -race that is about 60 links and, on two cores,
// about a quarter of a warm `make test`'s CPU time (issue 35 §3,
// docs/testing.md). For a link, linkcache hashes everything the link depends
// on: the linker (its path, size and modification time), its arguments (with
// the names of the go command's temporary work directory made neutral), among
// them the go command's build ID, whose action half is the go command's own
// hash of the link's inputs (the content of every package archive, the
// flags, the toolchain), the -importcfg file, the main package's archive and
// the environment a link reads (GO*, CGO_*, CC, CXX). An entry with that key
// is copied to -o in place of running the linker; a link that succeeds is
// stored under it. Every other tool (compile, asm, vet, cgo), and the
// `-V=full` query the go command asks each tool for its ID, runs untouched:
// the go command's action IDs and its build cache are the same as without
// the wrapper.
//
// Entries live in $REBOOTWATCH_LINKCACHE_DIR (default: the user's cache
// directory, rebootwatch-test/link); the least recently used are removed
// when they hold more than $REBOOTWATCH_LINKCACHE_MAX_MB (default 4096).
// REBOOTWATCH_LINKCACHE=off runs every tool untouched;
// REBOOTWATCH_LINKCACHE_LOG names a file that gets one line per link, copied
// or linked.
//
// It must never change what the linker would have written and never fail a
// build the linker would have passed: any fault of the cache (unreadable,
// full, a race with another link) falls back to running the linker, and a
// failed link is not stored.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "linkcache: usage: linkcache TOOL [ARGS...] (the go command's -toolexec)")
		os.Exit(2)
	}
	os.Exit(run(os.Args[1], os.Args[2:], os.Environ(), os.Stdout, os.Stderr))
}

// run runs tool with args, or copies its output from the cache, and returns
// the exit code to leave with.
func run(tool string, args, env []string, stdout, stderr io.Writer) int {
	c, ok := cacheFor(tool, args, env, stderr)
	if !ok {
		return execTool(tool, args, stdout, stderr)
	}
	if c.restore() {
		c.log(env, "copied")
		return 0
	}
	code := execTool(tool, args, stdout, stderr)
	if code == 0 {
		c.store(stderr)
		c.log(env, "linked")
	}
	return code
}

// log appends what was done for the link to $REBOOTWATCH_LINKCACHE_LOG, when
// set (for measuring a run's hits): "copied KEY TARGET" or "linked KEY
// TARGET", one line each, written at once.
func (e entry) log(env []string, what string) {
	path := envValue(env, "REBOOTWATCH_LINKCACHE_LOG")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%s %s %s\n", what, e.key, e.target)
	f.Close()
}

// execTool runs tool and returns its exit code (127 when it could not start).
func execTool(tool string, args []string, stdout, stderr io.Writer) int {
	cmd := exec.Command(tool, args...)
	cmd.Stdin = os.Stdin
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return exit.ExitCode()
	default:
		fmt.Fprintf(stderr, "linkcache: %s: %v\n", tool, err)
		return 127
	}
}

// entry is one link's place in the cache.
type entry struct {
	dir, key, target string
	max              int64
}

// skipFlags are linker flags that write something besides -o (profiles, a
// FIPS object, a dependency dump) or that depend on files outside the
// inputs linkcache hashes: a link with one of them always runs.
var skipFlags = []string{"-cpuprofile", "-memprofile", "-memprofilerate", "-trace", "-benchmark",
	"-benchprofile", "-dumpdep", "-fipso", "-linkshared", "-pluginpath", "-r", "-L", "-V", "-c"}

// cacheFor returns the cache entry of a link the cache can serve, or false.
func cacheFor(tool string, args, env []string, stderr io.Writer) (entry, bool) {
	if strings.TrimSuffix(filepath.Base(tool), ".exe") != "link" || envValue(env, "REBOOTWATCH_LINKCACHE") == "off" || len(args) == 0 {
		return entry{}, false
	}
	var target, importcfg, buildID string
	buildmode := "exe"
	for i := 0; i < len(args)-1; i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		name = "-" + strings.TrimLeft(name, "-")
		for _, s := range skipFlags {
			if name == s {
				return entry{}, false
			}
		}
		if !hasValue && (name == "-o" || name == "-importcfg" || name == "-buildid" || name == "-buildmode") && i+1 < len(args)-1 {
			i++
			value = args[i]
		}
		switch name {
		case "-o":
			target = value
		case "-importcfg":
			importcfg = value
		case "-buildid":
			buildID = value
		case "-buildmode":
			buildmode = value
		}
	}
	mainpkg := args[len(args)-1]
	if target == "" || importcfg == "" || buildID == "" || strings.HasPrefix(mainpkg, "-") || (buildmode != "exe" && buildmode != "pie") {
		return entry{}, false
	}
	h := sha256.New()
	fmt.Fprintf(h, "rebootwatch linkcache 1\n")
	info, err := os.Stat(tool)
	if err != nil {
		return entry{}, false
	}
	fmt.Fprintf(h, "tool %s %d %d\n", tool, info.Size(), info.ModTime().UnixNano())
	for i, a := range args {
		switch {
		case a == target:
			a = "OUTPUT"
		case i == len(args)-1:
			a = "MAINPKG" // hashed by content below
		}
		fmt.Fprintf(h, "arg %q\n", neutral(a))
	}
	var kept []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GO") || strings.HasPrefix(k, "CGO_") || k == "CC" || k == "CXX" {
			kept = append(kept, kv)
		}
	}
	sort.Strings(kept)
	for _, kv := range kept {
		fmt.Fprintf(h, "env %q\n", kv)
	}
	cfg, err := os.ReadFile(importcfg)
	if err != nil {
		return entry{}, false
	}
	if err := hashImportcfg(h, string(cfg)); err != nil {
		return entry{}, false
	}
	fmt.Fprintf(h, "main package ")
	if err := hashFile(h, mainpkg); err != nil {
		return entry{}, false
	}
	dir := envValue(env, "REBOOTWATCH_LINKCACHE_DIR")
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return entry{}, false
		}
		dir = filepath.Join(base, "rebootwatch-test", "link")
	}
	limit := int64(4096) << 20
	if s := envValue(env, "REBOOTWATCH_LINKCACHE_MAX_MB"); s != "" {
		mb, err := strconv.ParseInt(s, 10, 64)
		if err != nil || mb < 0 {
			fmt.Fprintf(stderr, "linkcache: REBOOTWATCH_LINKCACHE_MAX_MB=%q is not a number of MiB: linking without the cache\n", s)
			return entry{}, false
		}
		limit = mb << 20
	}
	return entry{dir: dir, key: hex.EncodeToString(h.Sum(nil)), target: target, max: limit}, true
}

// workDir matches the go command's temporary work directory ($WORK, named
// go-buildNNN) and, in it, an action's directory (bNNN): both are named
// afresh on every run.
var workDir = regexp.MustCompile(`go-build[0-9]+(/b[0-9]+)?`)

// neutral is s with the work directory's names made the same on every run.
func neutral(s string) string {
	return workDir.ReplaceAllStringFunc(s, func(m string) string {
		if strings.Contains(m, "/") {
			return "go-build/b"
		}
		return "go-build"
	})
}

// cached matches a file in the go command's build cache: it is named by the
// SHA-256 of its content.
var cached = regexp.MustCompile(`(^|/)([0-9a-f]{2})/([0-9a-f]{64})-d$`)

// hashImportcfg hashes the linker's -importcfg with each package archive
// named by the SHA-256 of its content, not by its path: the go command names
// an archive it has just compiled by its place in the work directory, and the
// same archive on the next run by its place in the build cache, whose file
// names are their content's SHA-256.
func hashImportcfg(h io.Writer, cfg string) error {
	for _, line := range strings.Split(cfg, "\n") {
		verb, rest, _ := strings.Cut(line, " ")
		name, path, isFile := strings.Cut(rest, "=")
		if !isFile || (verb != "packagefile" && verb != "packageshlib") {
			fmt.Fprintf(h, "importcfg %q\n", neutral(line))
			continue
		}
		fmt.Fprintf(h, "importcfg %s %s ", verb, name)
		if m := cached.FindStringSubmatch(path); m != nil && strings.HasPrefix(m[3], m[2]) {
			fmt.Fprintf(h, "sha256 %s\n", m[3])
			continue
		}
		if err := hashFile(h, path); err != nil {
			return err
		}
	}
	return nil
}

// hashFile writes the SHA-256 of path's content to h.
func hashFile(h io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return err
	}
	fmt.Fprintf(h, "sha256 %x\n", sum.Sum(nil))
	return nil
}

func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// restore copies the entry to the link's output and reports whether the
// output is now the entry's.
func (e entry) restore() bool {
	path := filepath.Join(e.dir, e.key)
	src, err := os.Open(path)
	if err != nil {
		return false
	}
	defer src.Close()
	info, err := src.Stat()
	if err != nil || !info.Mode().IsRegular() || info.Size() == 0 {
		return false
	}
	dst, err := os.OpenFile(e.target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o777)
	if err != nil {
		return false
	}
	n, err := io.Copy(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil || n != info.Size() {
		os.Remove(e.target)
		return false
	}
	now := time.Now()
	_ = os.Chtimes(path, now, now) // most recently used: the last to be trimmed
	return true
}

// store copies the link's output into the cache, then trims the cache. A
// fault is reported on stderr and otherwise ignored: the link succeeded.
func (e entry) store(stderr io.Writer) {
	if err := e.put(); err != nil {
		fmt.Fprintf(stderr, "linkcache: not stored: %v\n", err)
		return
	}
	if err := trim(e.dir, e.max); err != nil {
		fmt.Fprintf(stderr, "linkcache: trim: %v\n", err)
	}
}

func (e entry) put() error {
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		return err
	}
	src, err := os.Open(e.target)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp, err := os.CreateTemp(e.dir, "tmp-*")
	if err != nil {
		return err
	}
	_, err = io.Copy(tmp, src)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// Renamed into place whole: another link reads either no entry
		// or this one, never a part.
		err = os.Rename(tmp.Name(), filepath.Join(e.dir, e.key))
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// staleTemp is the age past which a temporary file is a crashed store's.
const staleTemp = time.Hour

// trim removes the least recently used entries until those left hold at
// most limit bytes, and temporary files older than staleTemp.
func trim(dir string, limit int64) error {
	des, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	type file struct {
		name string
		size int64
		used time.Time
	}
	var files []file
	var total int64
	for _, de := range des {
		info, err := de.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		if strings.HasPrefix(de.Name(), "tmp-") {
			if time.Since(info.ModTime()) > staleTemp {
				os.Remove(filepath.Join(dir, de.Name()))
			}
			continue
		}
		files = append(files, file{de.Name(), info.Size(), info.ModTime()})
		total += info.Size()
	}
	sort.Slice(files, func(i, j int) bool { return files[i].used.Before(files[j].used) })
	for _, f := range files {
		if total <= limit {
			break
		}
		if err := os.Remove(filepath.Join(dir, f.name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		total -= f.size
	}
	return nil
}
