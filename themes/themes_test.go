package themes

import (
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/rebootwatch/rebootwatch/model"
)

func TestBuiltinsComplete(t *testing.T) {
	for _, name := range append(Names(), NameNoColor) {
		th, ok := Builtin(name)
		if !ok {
			t.Fatalf("builtin %q missing", name)
		}
		if th.Name != name {
			t.Errorf("builtin %q has name %q", name, th.Name)
		}
		if th.NoColor {
			continue
		}
		for _, p := range model.AllPhases {
			if _, ok := th.Phases[p]; !ok {
				t.Errorf("%s: no colour for phase %s", name, p)
			}
		}
		for _, v := range []model.Verdict{model.VerdictFree, model.VerdictHeld, model.VerdictGhost, model.VerdictOrphaned, model.VerdictExpired, model.VerdictAmbiguous, model.VerdictUnknown} {
			if _, ok := th.Verdicts[v]; !ok {
				t.Errorf("%s: no colour for verdict %s", name, v)
			}
		}
		for _, c := range []color.Color{th.Text, th.Muted, th.Border, th.Accent, th.OK, th.Warning, th.Critical, th.SelectionBg} {
			if c == nil {
				t.Errorf("%s: a role colour is nil", name)
			}
		}
	}
}

func TestColorBlindNeverRedVersusGreen(t *testing.T) {
	th := ColorBlind()
	// Good and bad must differ in the blue channel (the axis every common
	// colour-vision deficiency keeps), not only red/green.
	_, _, okB, _ := th.OK.RGBA()
	_, _, crB, _ := th.Critical.RGBA()
	if okB>>8 < 0x80 || crB>>8 > 0x40 {
		t.Fatalf("ok=%v critical=%v: want a blue ok and a blue-free critical", th.OK, th.Critical)
	}
}

func TestParseColor(t *testing.T) {
	for in, want := range map[string]color.Color{
		"#fff":    color.RGBA{0xff, 0xff, 0xff, 0xff},
		"#102030": color.RGBA{0x10, 0x20, 0x30, 0xff},
		"9":       ansi.IndexedColor(9),
		" 255 ":   ansi.IndexedColor(255),
	} {
		got, err := ParseColor(in)
		if err != nil || got != want {
			t.Errorf("ParseColor(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "#12", "#ggg", "red", "256", "-1", "#1234567"} {
		if _, err := ParseColor(bad); err == nil {
			t.Errorf("ParseColor(%q): want an error", bad)
		}
	}
}

func TestParseTheme(t *testing.T) {
	th, err := Parse([]byte("name: mine\nbase: light\ncolors:\n  ok: \"#00ff00\"\n  critical: 196\nphases:\n  draining: '#123456'\nverdicts:\n  ghost: '#abcdef'\n"))
	if err != nil {
		t.Fatal(err)
	}
	if th.Name != "mine" || th.Dark {
		t.Errorf("name/dark = %q/%v", th.Name, th.Dark)
	}
	if th.OK != (color.RGBA{0, 0xff, 0, 0xff}) || th.Critical != ansi.IndexedColor(196) {
		t.Errorf("colours not applied: ok=%v critical=%v", th.OK, th.Critical)
	}
	if th.Phase(model.PhaseDraining) != (color.RGBA{0x12, 0x34, 0x56, 0xff}) {
		t.Errorf("phase colour not applied")
	}
	if th.Verdict(model.VerdictGhost) != (color.RGBA{0xab, 0xcd, 0xef, 0xff}) {
		t.Errorf("verdict colour not applied")
	}
	// Unset keys keep the base's colours; the base itself is not modified.
	if th.Text != Light().Text {
		t.Errorf("text should come from the light base")
	}
	if Light().OK == th.OK {
		t.Errorf("builtin modified")
	}
}

func TestParseErrorsNameTheKey(t *testing.T) {
	for doc, want := range map[string]string{
		"colour:\n  ok: '#fff'\n":               `unknown key "colour"`,
		"colors:\n  okay: '#fff'\n":             `unknown key "colors.okay"`,
		"phases:\n  drainin: '#fff'\n":          `unknown key "phases.drainin"`,
		"verdicts:\n  ghosty: '#fff'\n":         `unknown key "verdicts.ghosty"`,
		"colors:\n  ok: '#ggg'\n":               `colors.ok: "#ggg" is not a colour`,
		"colors:\n  ok: [1]\n":                  `colors.ok: want a colour string`,
		"base: solarized\n":                     `base: unknown theme "solarized"`,
		"colors: 3\n":                           `colors: want a mapping`,
		"- a\n- b\n":                            `want a mapping`,
		"colors: {ok: '#fff'\n":                 `not valid YAML`,
		"colors:\n  ok: '#fff'\n  ok: '#000'\n": `duplicate key`,
		"base: dark\nbase: light\n":             `duplicate key`,
	} {
		_, err := Parse([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) error = %v; want it to contain %q", doc, err, want)
		}
	}
}

func TestLoadFileAndUser(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"XDG_CONFIG_HOME": dir}
	getenv := func(k string) string { return env[k] }
	if th, err := LoadUser(getenv); th != nil || err != nil {
		t.Fatalf("missing user theme: got %v, %v; want nil, nil", th, err)
	}
	p := filepath.Join(dir, "rebootwatch", "theme.yaml")
	if DefaultPath(getenv) != p {
		t.Fatalf("DefaultPath = %q; want %q", DefaultPath(getenv), p)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("colors:\n  accent: '#010203'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	th, err := LoadUser(getenv)
	if err != nil || th == nil || th.Name != "theme" || th.Accent != (color.RGBA{1, 2, 3, 0xff}) {
		t.Fatalf("LoadUser = %+v, %v", th, err)
	}
	if err := os.WriteFile(p, []byte("colors:\n  acent: '#010203'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadUser(getenv)
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), `"colors.acent"`) {
		t.Fatalf("bad user theme error = %v; want the path and the key", err)
	}
	if DefaultPath(func(string) string { return "" }) != "" {
		t.Fatalf("DefaultPath without env should be empty")
	}
}

func TestNoColorRequested(t *testing.T) {
	if NoColorRequested(func(string) string { return "" }) {
		t.Error("empty NO_COLOR must not disable colour")
	}
	if !NoColorRequested(func(k string) string {
		if k == "NO_COLOR" {
			return "1"
		}
		return ""
	}) {
		t.Error("NO_COLOR=1 must disable colour")
	}
}

// TestExampleFile keeps docs/dashboard.md's example theme valid.
func TestExampleFile(t *testing.T) {
	th, err := LoadFile("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if th.Name != "mine" || th.Phase(model.PhaseDraining) != (color.RGBA{0xff, 0x87, 0x00, 0xff}) || th.Verdict(model.VerdictGhost) != (color.RGBA{0xff, 0, 0, 0xff}) {
		t.Fatalf("example theme = %+v", th)
	}
}

func TestToneColours(t *testing.T) {
	for _, name := range Names() {
		th, _ := Builtin(name)
		for tone, want := range map[model.Tone]any{model.ToneOK: th.OK, model.ToneInfo: th.Info,
			model.ToneWarning: th.Warning, model.ToneCritical: th.Critical, model.ToneMuted: th.Muted} {
			if got := th.Tone(tone); got != want {
				t.Errorf("%s: tone %d is %v, want %v", name, tone, got, want)
			}
		}
	}
}
