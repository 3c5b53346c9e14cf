package sourcetest

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

const importPath = "github.com/rebootwatch/rebootwatch/sources/sourcetest"

func TestRecorder(t *testing.T) {
	r := NewRecorder("rec")
	r.Read(func(c *model.Cluster) {
		if c.Context != "rec" {
			t.Errorf("cluster context %q, want rec", c.Context)
		}
	})
	if h := r.Source(model.SourceNodes); h.Status != "" {
		t.Errorf("health before any report: %+v", h)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		r.Sink(model.SourceChanged{Health: model.SourceHealth{Name: model.SourceNodes, Status: model.StatusOK}})
	}()
	r.Eventually(t, "nodes ok", func(c *model.Cluster) bool {
		h, ok := c.Source(model.SourceNodes)
		return ok && h.Status == model.StatusOK
	})
	if h := r.Source(model.SourceNodes); h.Status != model.StatusOK {
		t.Errorf("Source after the report: %+v", h)
	}
	if n := r.Events(); n != 1 {
		t.Errorf("Events() = %d, want 1", n)
	}
}

// fatalTB records Fatal and Fatalf and stops the goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = format
	runtime.Goexit()
}
func (f *fatalTB) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

// fatal runs f on a fatalTB in its own goroutine, as a test would, and
// returns what it failed with ("" if it did not) and whether f returned.
func fatal(t *testing.T, f func(tb testing.TB)) (msg string, returned bool) {
	tb := &fatalTB{TB: t}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		f(tb)
		returned = true
	}()
	wg.Wait()
	return tb.msg, returned
}

func TestEventuallyFails(t *testing.T) {
	r := NewRecorder("rec").WithTimeout(50 * time.Millisecond)
	msg, returned := fatal(t, func(tb testing.TB) {
		r.Eventually(tb, "never", func(*model.Cluster) bool { return false })
	})
	if returned || !strings.HasPrefix(msg, "never saw: ") {
		t.Fatalf("Eventually on a condition that never holds: returned=%v, Fatalf %q", returned, msg)
	}
}

// importers lists the non-test Go files below root that import sourcetest.
func importers(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "vendor" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); p == importPath {
				out = append(out, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOnlyTestsImportIt keeps sourcetest (and with it package testing) out
// of every binary.
func TestOnlyTestsImportIt(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	if got := importers(t, root); len(got) > 0 {
		t.Errorf("non-test code imports %s: %v", importPath, got)
	}

	// Negative control: a non-test file that imports it is found.
	dir := t.TempDir()
	src := "package x\n\nimport _ \"" + importPath + "\"\n"
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x_test.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := importers(t, dir); len(got) != 1 || filepath.Base(got[0]) != "x.go" {
		t.Errorf("importers on a planted file: %v, want only x.go", got)
	}
}
