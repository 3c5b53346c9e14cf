package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rebootwatch/rebootwatch/internal/explain"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/model"
)

// encoderJSON is what writeJSON replaces: json.Encoder with SetIndent.
func encoderJSON(t testing.TB, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestWriteJSONMatchesEncoder: writeJSON's bytes are json.Encoder's with
// SetIndent("", "  "), for values whose strings hold JSON's punctuation,
// escapes, HTML characters and line separators, and for empty and nested
// objects and arrays.
func TestWriteJSONMatchesEncoder(t *testing.T) {
	type inner struct {
		A []int          `json:"a"`
		M map[string]any `json:"m"`
		S string         `json:"s,omitempty"`
	}
	values := []any{
		nil, true, 0, -1.5e-7, "", `"`, `\`, `\"`, "a\"b\\c\"", "<script>&amp;</script>", "\u2028\u2029", "\x00\x1f\t\n",
		"héllo ✓ 🙂", "\xff\xfe invalid UTF-8",
		[]int{}, []any{[]any{}, map[string]any{}, []any{[]any{}}}, map[string]any{},
		map[string]any{"{": "}", "[": "]", ",": ":", `"k"`: `"v"`, "\\": "\\\\", "nested": map[string]any{"e": []any{}, "o": map[string]any{}}},
		inner{}, inner{A: []int{1, 2, 3}, M: map[string]any{"x": nil, "y": []string{"a,b", "c:d"}}, S: `}]"\`},
		[]inner{{}, {A: []int{}}},
		snapshotFixture(t, 40),
	}
	for i, v := range values {
		var got bytes.Buffer
		if err := writeJSON(&got, v); err != nil {
			t.Fatalf("value %d: %v", i, err)
		}
		if want := encoderJSON(t, v); !bytes.Equal(got.Bytes(), want) {
			t.Errorf("value %d (%T):\n got %q\nwant %q", i, v, got.Bytes(), want)
		}
	}
}

// TestWriteJSONError: a value json.Marshal refuses is an error, and
// nothing is written.
func TestWriteJSONError(t *testing.T) {
	var b bytes.Buffer
	if err := writeJSON(&b, map[string]any{"f": func() {}}); err == nil || b.Len() != 0 {
		t.Errorf("err %v, wrote %q", err, b.Bytes())
	}
}

// FuzzIndentCompact: any valid JSON, compacted as json.Marshal writes it,
// is indented exactly as json.Indent indents it.
func FuzzIndentCompact(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,{"b":"}\"{"},[]],"c":{}}`, `"\\\""`, `[[[[]]],{"":{"":""}}]`, `null`, `-0.5e+10`,
		`{"k":"a\u2028b","l":"<>&","m":"\\"}`, ` { "x" : [ 1 , 2 ] } `, "[\"\u202e\u0085\x7f✓\"]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, data); err != nil {
			t.Fatalf("Compact of valid JSON: %v", err)
		}
		var want bytes.Buffer
		if err := json.Indent(&want, compact.Bytes(), "", "  "); err != nil {
			t.Fatalf("Indent of valid JSON: %v", err)
		}
		if got := indentCompact(nil, compact.Bytes(), "  "); !bytes.Equal(got, escapeTerminalRunes(want.Bytes())) {
			t.Errorf("indent of %q:\n got %q\nwant %q", compact.Bytes(), got, want.Bytes())
		}
	})
}

// escapeTerminalRunes is the reference for the escapes writeJSON adds to
// encoding/json's: DEL, C1 controls and bidi controls and marks as \uXXXX,
// rune by rune (JSON text outside strings is ASCII).
func escapeTerminalRunes(b []byte) []byte {
	var out []byte
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r != utf8.RuneError && (r == 0x7f || r >= 0x80 && r <= 0x9f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 ||
			r == 0x200e || r == 0x200f || r == 0x061c) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

// Issue 22 §6: -o json never emits raw what a terminal obeys and
// encoding/json leaves raw (U+202E, U+2066/U+2069, C1 controls, DEL): they
// are \uXXXX escapes, and the document decodes to the same value.
func TestWriteJSONEscapesTerminalControls(t *testing.T) {
	hostile := "cp-1\u202e1-pc \u2066iso\u2069 \u0085\u009b[2J \x7f ✓ é"
	snap := snapshotFixture(t, 2)
	snap.Locks = append(snap.Locks, model.SnapshotLock{Kind: model.LockFleetlock, Holder: hostile, Reason: hostile, Actions: []model.Action{}})
	var got bytes.Buffer
	if err := writeJSON(&got, snap); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{"\u202e", "\u2066", "\u2069", "\u0085", "\u009b", "\x7f"} {
		if strings.Contains(got.String(), raw) {
			t.Errorf("raw %q in the JSON", raw)
		}
	}
	if want := escapeTerminalRunes(encoderJSON(t, snap)); !bytes.Equal(got.Bytes(), want) {
		t.Errorf("got %q\nwant %q", got.Bytes(), want)
	}
	var back model.Snapshot
	if err := json.Unmarshal(got.Bytes(), &back); err != nil || back.Locks[0].Holder != hostile || back.Locks[0].Reason != hostile {
		t.Fatalf("decoded %+v (%v)", back.Locks, err)
	}
	if !strings.Contains(got.String(), `cp-1\u202e1-pc \u2066iso\u2069 \u0085\u009b[2J \u007f ✓ é`) {
		t.Errorf("escapes not as \\uXXXX:\n%s", got.String())
	}
}

// snapshotFixture is the snapshot of n ready nodes and a healthy volume per
// node (no lock), judged by the lock engine.
func snapshotFixture(t testing.TB, n int) model.Snapshot {
	t.Helper()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	c := model.NewCluster("bench", model.Options{})
	e := lock.New(lock.Options{})
	c.Judge, c.Explain = e.Judge, explain.For(explain.Options{})
	for _, s := range []model.SourceName{model.SourceNodes, model.SourceKured, model.SourceLonghorn} {
		c.Apply(model.SourceChanged{Health: model.SourceHealth{Name: s, Status: model.StatusOK, LastSync: now}}, now)
	}
	for i := range n {
		name := fmt.Sprintf("node-%05d", i)
		c.Apply(model.NodeUpserted{Node: model.Node{Name: name, BootID: fmt.Sprintf("boot-%d", i), MachineID: fmt.Sprintf("%032x", i),
			OSImage: "Ubuntu 24.04.2 LTS", KernelVersion: "6.8.0-57-generic", Roles: []string{"worker"},
			Conditions: []model.Condition{{Type: "Ready", Status: "True", LastTransition: now.Add(-time.Hour)}}}}, now)
		c.Apply(model.VolumeUpserted{Volume: model.Volume{Namespace: "longhorn-system", Name: fmt.Sprintf("pvc-%06d", i),
			Robustness: model.RobustnessHealthy, Replicas: 3, Node: name}}, now)
	}
	c.Apply(model.Synced{}, now)
	c.Recompute(now)
	return c.Snapshot(now)
}

// BenchmarkWriteJSON is --snapshot -o json's output step at 5,000 nodes:
// the one-pass writer against json.Encoder with SetIndent. Run with
//
//	go test -run '^$' -bench WriteJSON -benchmem ./internal/cli/
func BenchmarkWriteJSON(b *testing.B) {
	snap := snapshotFixture(b, 5000)
	b.Run("encoder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			enc := json.NewEncoder(discard{})
			enc.SetIndent("", "  ")
			if err := enc.Encode(snap); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("writeJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := writeJSON(discard{}, snap); err != nil {
				b.Fatal(err)
			}
		}
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
