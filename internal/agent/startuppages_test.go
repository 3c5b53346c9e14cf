package agent

import (
	"reflect"
	"strings"
	"testing"
)

// A /proc/self/maps of a cgo build of the agent, trimmed: the binary's
// three mappings (code, read-only data, data), its bss and heap, libc's,
// the same inode on another device, and the stack.
const mapsFixture = `00400000-01a2e000 r-xp 00000000 fd:01 1311835                            /usr/local/bin/rebootwatch-agent
01a2e000-0327b000 r--p 0162e000 fd:01 1311835                            /usr/local/bin/rebootwatch-agent
0327b000-032f9000 rw-p 02e7b000 fd:01 1311835                            /usr/local/bin/rebootwatch-agent
032f9000-0333c000 rw-p 00000000 00:00 0 
0404a000-0406b000 rw-p 00000000 00:00 0                                  [heap]
c000000000-c004000000 rw-p 00000000 00:00 0 
7f1c2a600000-7f1c2a628000 r--p 00000000 fd:01 2097301                    /usr/lib/x86_64-linux-gnu/libc.so.6
7f1c2a628000-7f1c2a7bd000 r-xp 00028000 fd:01 2097301                    /usr/lib/x86_64-linux-gnu/libc.so.6
7f1c2a900000-7f1c2a910000 r--p 00000000 fd:02 1311835                    /other/device/same-inode
7ffd1c5e0000-7ffd1c601000 rw-p 00000000 00:00 0                          [stack]
`

func TestReadOnlyMappingsOf(t *testing.T) {
	got, err := readOnlyMappingsOf([]byte(mapsFixture), 0x00412345)
	if err != nil {
		t.Fatal(err)
	}
	want := []addrRange{{0x00400000, 0x01a2e000}, {0x01a2e000, 0x0327b000}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %x, want the binary's code and read-only data only: %x", got, want)
	}
	// The pc found in its read-only data finds the same file.
	if got, err := readOnlyMappingsOf([]byte(mapsFixture), 0x01a2e000); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("from the read-only data: %x, %v", got, err)
	}
	for _, tc := range []struct {
		name string
		maps string
		pc   uintptr
		want string
	}{
		{"pc in no mapping", mapsFixture, 0x1000, "no mapping holds"},
		{"pc past a mapping's end", mapsFixture, 0x0333c000, "no mapping holds"},
		{"pc in an anonymous mapping", mapsFixture, 0xc000001000, "mapping of no file"},
		{"a line too short", "00400000-01a2e000 r-xp 00000000\n", 0x00400000, "maps line 1: 3 fields"},
		{"a range that is not hex", "00400000-zz r-xp 00000000 fd:01 1 /a\n", 0x00400000, "maps line 1: cannot read"},
		{"an empty range", "00400000-00400000 r-xp 00000000 fd:01 1 /a\n", 0x00400000, "maps line 1: cannot read"},
		{"a line among good ones", mapsFixture + "7ffd1c601000 rw-p 00000000 00:00 0\n", 0x00412345, "maps line 11: cannot read"},
	} {
		if got, err := readOnlyMappingsOf([]byte(tc.maps), tc.pc); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %x, %v; want an error with %q", tc.name, got, err, tc.want)
		}
	}
}
