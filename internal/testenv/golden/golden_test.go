package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTB records a Fatal instead of stopping the test.
type fakeTB struct {
	testing.TB
	msg string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatal(args ...any) {
	f.msg = "fatal"
	panic(f)
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.msg = format
	panic(f)
}

func check(path, got string) (msg string) {
	f := &fakeTB{}
	defer func() {
		if r := recover(); r != nil {
			msg = f.msg
		}
	}()
	Check(f, path, got)
	return ""
}

func TestCheck(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.golden")
	if err := os.WriteFile(p, []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if msg := check(p, "a\nb\n"); msg != "" {
		t.Fatalf("equal content failed: %s", msg)
	}
	if msg := check(p, "a\nc\n"); !strings.Contains(msg, "differs at line") {
		t.Fatalf("a different line passed (%q)", msg)
	}
	if msg := check(p+".missing", "a"); !strings.Contains(msg, "-update") {
		t.Fatalf("a missing file passed (%q)", msg)
	}
}
