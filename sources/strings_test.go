package sources

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// TestStringsShareAndStayBounded: the same bytes give the same string while
// the table has room; past maxStrings distinct strings, or for a string
// longer than maxStringLen, each is its own and the table does not grow; a
// nil table makes each string its own. Every string reads as its bytes.
func TestStringsShareAndStayBounded(t *testing.T) {
	var s Strings
	a, b := s.Of([]byte("KubeletReady")), s.Of([]byte("KubeletReady"))
	if a != "KubeletReady" || unsafe.StringData(a) != unsafe.StringData(b) {
		t.Fatalf("%q and %q are not one string", a, b)
	}
	long := []byte(strings.Repeat("x", maxStringLen+1))
	if l1, l2 := s.Of(long), s.Of(long); l1 != string(long) || unsafe.StringData(l1) == unsafe.StringData(l2) {
		t.Error("a string over maxStringLen was kept")
	}
	for i := range 2 * maxStrings {
		want := fmt.Sprintf("message %d", i)
		if got := s.Of([]byte(want)); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	if len(s.m) != maxStrings {
		t.Errorf("table holds %d strings, want its bound %d", len(s.m), maxStrings)
	}
	late := []byte(fmt.Sprintf("message %d", 2*maxStrings-1))
	if x, y := s.Of(late), s.Of(late); x != string(late) || unsafe.StringData(x) == unsafe.StringData(y) {
		t.Error("a string past the bound was kept")
	}
	if a2 := s.Of([]byte("KubeletReady")); unsafe.StringData(a2) != unsafe.StringData(a) {
		t.Error("a string kept before the table filled is no longer handed out")
	}
	var none *Strings
	if x, y := none.Of([]byte("Ready")), none.Of([]byte("Ready")); x != "Ready" || unsafe.StringData(x) == unsafe.StringData(y) {
		t.Error("a nil table shared a string")
	}
}
