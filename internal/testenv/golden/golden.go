// Package golden compares what a test produced with a file under testdata/,
// and rewrites the file when the test binary runs with -update. Failures
// name the first differing line, stripped of ANSI styling and raw, so a
// screen golden stays readable.
//
// It is for tests only: it must never be imported by non-test code (it
// registers the -update flag and calls testing.TB.Fatal).
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Check compares got with path (rewritten with -update).
func Check(t testing.TB, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if string(want) == got {
		return
	}
	wl, gl := strings.Split(string(want), "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			t.Fatalf("%s differs at line %d (run with -update if the change is intended)\nwant: %s\ngot:  %s\nwant (raw): %q\ngot (raw):  %q\n--- got in full:\n%s",
				path, i+1, ansi.Strip(w), ansi.Strip(g), w, g, got)
		}
	}
	t.Fatalf("%s differs", path)
}
