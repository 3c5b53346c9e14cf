package scalebench_test

import (
	"os"
	"regexp"
	"testing"
)

// rwFull must recognise the full picture on real screens of the terminal
// case: at 5,000 nodes the Longhorn summary's four-digit counts cut
// "unknown" to "un…" at 160 columns, and the case waited 3 minutes for a
// picture that was on the screen. A screen missing a volume is not full.
func TestFullPictureOnRealScreens(t *testing.T) {
	for _, c := range []struct {
		file           string
		nodes, volumes int
	}{{"testdata/full-1000.txt", 1000, 3000}, {"testdata/full-5000.txt", 5000, 10000}} {
		raw, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		if !rwFull(string(raw), c.nodes, c.volumes) {
			t.Errorf("%s: the full picture is not recognised", c.file)
		}
		if rwFull(string(raw), c.nodes, c.volumes+1) {
			t.Errorf("%s: a screen short of a volume passes as full", c.file)
		}
		if rwFull(string(raw), c.nodes+1, c.volumes) {
			t.Errorf("%s: a screen short of a node passes as full", c.file)
		}
		// A narrower panel cuts the summary right after the last count's
		// digits ("? 1111…"): still the full picture.
		cut := rwLonghornUnknown.ReplaceAllString(string(raw), "? $1…")
		if cut == string(raw) {
			t.Fatalf("%s: no unknown count to cut", c.file)
		}
		if !rwFull(cut, c.nodes, c.volumes) {
			t.Errorf("%s: the summary cut right after the digits is not recognised", c.file)
		}
	}
}

// rwLonghornUnknown is the unknown count of the Longhorn summary with what
// follows it on the line, however it is cut.
var rwLonghornUnknown = regexp.MustCompile(`\? (\d+) un[a-z…]*`)
