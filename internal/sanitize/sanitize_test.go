package sanitize

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

func TestLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"cp-1", "cp-1"},
		{"", ""},
		{"Fedora CoreOS 41 · ok…", "Fedora CoreOS 41 · ok…"},
		{"a\nb", `a\nb`},
		{"a\r\nb\t", `a\r\nb\t`},
		{"\x1b]0;pwned\a", `\e]0;pwned\x07`},
		{"\x1b[2J\x1b[31mred", `\e[2J\e[31mred`},
		{"nul\x00", `nul\x00`},
		{"del\x7f", `del\x7f`},
		{"c1\u0085\u009b", `c1\x85\x9b`},
		{"bidi\u202eevil\u202c", `bidi\u202eevil\u202c`},
		{"iso\u2066x\u2069", `iso\u2066x\u2069`},
		{"mark\u200f\u061c", `mark\u200f\u061c`},
		{"sep\u2028\u2029", `sep\u2028\u2029`},
		{"bad\xffutf8", `bad\xffutf8`},
	} {
		if got := Line(tc.in); got != tc.want {
			t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := Line(tc.in); !Safe(got) {
			t.Errorf("Line(%q) = %q is not Safe", tc.in, got)
		}
	}
}

func TestShort(t *testing.T) {
	long := strings.Repeat("h", 200000)
	got := Short(long, 40)
	if w := ansi.StringWidth(got); w != 40 || !strings.HasSuffix(got, Ellipsis) {
		t.Errorf("Short(200000×h, 40) = %q (width %d), want 40 cells ending in …", got, w)
	}
	if got := Short("cp-1", 40); got != "cp-1" {
		t.Errorf("Short(cp-1) = %q", got)
	}
	if got := Short("a\nbcdef", 4); got != `a\n…` {
		t.Errorf("Short(a\\nbcdef, 4) = %q, want %q", got, `a\n…`)
	}
	if got := Short("世界世界世界", 5); ansi.StringWidth(got) > 5 {
		t.Errorf("Short(wide, 5) = %q is %d cells", got, ansi.StringWidth(got))
	}
	if got := Short("abc", 0); got != "abc" {
		t.Errorf("Short(abc, 0) = %q", got)
	}
}

func TestShortMiddle(t *testing.T) {
	long := "Update Lease default/fleetlock-default: holderIdentity \"" + strings.Repeat("h\n", 100000) + "\" → \"\" (resourceVersion 7)"
	got := ShortMiddle(long, 80)
	if w := ansi.StringWidth(got); w != 80 || !strings.HasPrefix(got, "Update Lease") || !strings.HasSuffix(got, "(resourceVersion 7)") || !Safe(got) {
		t.Errorf("ShortMiddle = %q (%d cells)", got, w)
	}
	if got := ShortMiddle("short", 80); got != "short" {
		t.Errorf("ShortMiddle(short) = %q", got)
	}
}

func TestStyledKeepsSGROnly(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"\x1b[1;31mred\x1b[0m", "\x1b[1;31mred\x1b[0m"},
		{"\x1b[38:2::1:2:3mx\x1b[m", "\x1b[38:2::1:2:3mx\x1b[m"},
		{"\x1b[2Jx", `\e[2Jx`},
		{"\x1b]0;t\a\x1b[1mx", "\\e]0;t\\x07\x1b[1mx"},
		{"a\nb", `a\nb`},
		{"\x1b[31", `\e[31`},
	} {
		if got := Styled(tc.in); got != tc.want {
			t.Errorf("Styled(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzLine(f *testing.F) {
	for _, s := range []string{"cp-1", "\x1b]0;x\a", "a\nb", "\u202e", "\xff", "\x1b[31mx\x1b[0m"} {
		f.Add(s, 10)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		l := Line(s)
		if !Safe(l) || !utf8.ValidString(l) || strings.ContainsAny(l, "\n\r\x1b") {
			t.Fatalf("Line(%q) = %q is not safe", s, l)
		}
		if Line(l) != l {
			t.Fatalf("Line is not idempotent on %q", s)
		}
		n = n%200 + 1
		if n < 1 {
			n = -n + 1
		}
		sh := Short(s, n)
		if !Safe(sh) || ansi.StringWidth(sh) > n {
			t.Fatalf("Short(%q, %d) = %q (%d cells)", s, n, sh, ansi.StringWidth(sh))
		}
		if sm := ShortMiddle(s, n); !Safe(sm) || ansi.StringWidth(sm) > n {
			t.Fatalf("ShortMiddle(%q, %d) = %q (%d cells)", s, n, sm, ansi.StringWidth(sm))
		}
		st := Styled(s)
		if !SafeStyled(st) || strings.ContainsAny(st, "\n\r") {
			t.Fatalf("Styled(%q) = %q is not safe", s, st)
		}
	})
}

func BenchmarkLineClean(b *testing.B) {
	s := "ip-10-0-1-23.eu-west-1.compute.internal"
	for b.Loop() {
		_ = Line(s)
	}
}

func TestID(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"978a225b3d7b40e9acd7ce9b62f68444", "978a225b3d7b…"},
		{"short-holder", "short-holder"},
		{"\x1b]0;pwn\a", `\e]0;pwn\x07`},
	} {
		if got := ID(tc.in); got != tc.want {
			t.Errorf("ID(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// One masking function for every surface (issue 22 §6): a password and
// every query value are masked; what carries no secret is unchanged.
func TestMaskURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"http://prometheus:9090", "http://prometheus:9090"},
		{"https://u:pw@prom:9090/p?token=a&b=c", "https://u:xxxxx@prom:9090/p?b=xxxxx&token=xxxxx"},
		{"http://prom/?token=s3cret", "http://prom/?token=xxxxx"},
		{"https://admin:hunter2@prom/", "https://admin:xxxxx@prom/"},
		{"http://[::1%zz/", "(unparsable URL)"},
	} {
		if got := MaskURL(tc.in); got != tc.want {
			t.Errorf("MaskURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// AppendJSON escapes in JSON text what a terminal obeys and encoding/json
// leaves raw (issue 22 §6): DEL, C1 controls, bidi controls and marks. The
// value decodes the same; ordinary text (é, ✓, emoji) is left as it is.
func TestAppendJSON(t *testing.T) {
	for _, s := range []string{"plain", "héllo ✓ 🙂 ÿ", "rlo\u202eevil\u202c", "iso\u2066x\u2069y", "c1\u0085\u009b[2J", "del\x7f",
		"mark\u200e\u200f\u061c", "all \u202a\u202b\u202d\u2067\u2068 \u0080\u009f", "\u00a0nbsp", "\xff\xfe bad"} {
		raw, err := json.Marshal(map[string]string{"k": s})
		if err != nil {
			t.Fatal(err)
		}
		got := AppendJSON([]byte("x"), raw)[1:]
		if !json.Valid(got) || !Safe(string(got)) {
			t.Errorf("%q: %q is not valid JSON free of terminal controls", s, got)
		}
		var back, want map[string]string
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(got, &back); err != nil || back["k"] != want["k"] {
			t.Errorf("%q: decodes to %q, not %q (%v)", s, back["k"], want["k"], err)
		}
		if clean := JSON(raw); Safe(string(raw)) && &clean[0] != &raw[0] {
			t.Errorf("%q: JSON copied a document with nothing to escape", s)
		}
	}
	if got := string(AppendJSON(nil, []byte(`"a`+"\u202e"+`b"`))); got != `"a\u202eb"` {
		t.Errorf("got %s", got)
	}
}

func TestMiddleKeepsStartAndEnd(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdefghij", 5, "ab…ij"},
		{"ééééééé", 4, "é…éé"},
		{"", 3, ""},
	} {
		if got := Middle(tc.in, tc.n); got != tc.want {
			t.Errorf("Middle(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
