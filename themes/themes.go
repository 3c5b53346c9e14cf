// Package themes holds rebootwatch's colour themes: the built-in palettes
// (dark, light, high-contrast, colour-blind-safe and a colourless one for
// NO_COLOR) and the loader of a user theme file.
//
// A theme is data only: named colours for roles (text, muted, ok, …), for
// each node phase and for each lock verdict. It must not render anything,
// query the terminal or read the environment except through the explicit
// helpers (DefaultPath, NoColor) the wiring calls.
package themes

import (
	"fmt"
	"image/color"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/rebootwatch/rebootwatch/model"
)

// Theme is a named set of colours. A nil colour means "the terminal's
// default"; a theme with NoColor set uses attributes (bold, reverse, faint)
// instead of colours everywhere.
type Theme struct {
	Name string
	// Dark says the theme is meant for a dark background.
	Dark bool
	// NoColor makes every colour nil (NO_COLOR).
	NoColor bool

	Text        color.Color
	Muted       color.Color
	Border      color.Color
	Accent      color.Color
	Title       color.Color
	SelectionBg color.Color
	SelectionFg color.Color
	OK          color.Color
	Warning     color.Color
	Critical    color.Color
	Info        color.Color

	Phases   map[model.Phase]color.Color
	Verdicts map[model.Verdict]color.Color
}

// Phase returns the colour of a phase (Muted when the theme has none).
func (t *Theme) Phase(p model.Phase) color.Color {
	if c, ok := t.Phases[p]; ok {
		return c
	}
	return t.Muted
}

// Verdict returns the colour of a verdict (Muted when the theme has none).
func (t *Theme) Verdict(v model.Verdict) color.Color {
	if c, ok := t.Verdicts[v]; ok {
		return c
	}
	return t.Muted
}

// Tone returns the colour of a tone (model.Tone): the role colours OK,
// Info, Warning and Critical, else Muted.
func (t *Theme) Tone(x model.Tone) color.Color {
	switch x {
	case model.ToneOK:
		return t.OK
	case model.ToneInfo:
		return t.Info
	case model.ToneWarning:
		return t.Warning
	case model.ToneCritical:
		return t.Critical
	}
	return t.Muted
}

// clone returns a deep copy of t.
func (t *Theme) clone() *Theme {
	c := *t
	c.Phases = make(map[model.Phase]color.Color, len(t.Phases))
	for k, v := range t.Phases {
		c.Phases[k] = v
	}
	c.Verdicts = make(map[model.Verdict]color.Color, len(t.Verdicts))
	for k, v := range t.Verdicts {
		c.Verdicts[k] = v
	}
	return &c
}

// ParseColor parses "#rgb", "#rrggbb" or an ANSI colour number 0-255.
func ParseColor(s string) (color.Color, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "#") {
		h := s[1:]
		if len(h) == 3 {
			h = string([]byte{h[0], h[0], h[1], h[1], h[2], h[2]})
		}
		if len(h) != 6 {
			return nil, fmt.Errorf("%q is not a colour (want #rgb, #rrggbb or an ANSI number 0-255)", s)
		}
		v, err := strconv.ParseUint(h, 16, 32)
		if err != nil {
			return nil, fmt.Errorf("%q is not a colour (want #rgb, #rrggbb or an ANSI number 0-255)", s)
		}
		return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 255 {
		return nil, fmt.Errorf("%q is not a colour (want #rgb, #rrggbb or an ANSI number 0-255)", s)
	}
	return ansi.IndexedColor(n), nil
}

func hex(s string) color.Color {
	c, err := ParseColor(s)
	if err != nil {
		panic(err)
	}
	return c
}

// Built-in theme names, in the order `t` cycles through them.
const (
	NameDark         = "dark"
	NameLight        = "light"
	NameHighContrast = "high-contrast"
	NameColorBlind   = "colour-blind"
	NameNoColor      = "no-color"
)

// Names lists the built-in themes `t` cycles through.
func Names() []string {
	return []string{NameDark, NameLight, NameHighContrast, NameColorBlind}
}

// Builtin returns a fresh copy of a built-in theme by name.
func Builtin(name string) (*Theme, bool) {
	switch name {
	case NameDark:
		return Dark(), true
	case NameLight:
		return Light(), true
	case NameHighContrast, "highcontrast", "hc":
		return HighContrast(), true
	case NameColorBlind, "color-blind", "colorblind", "colourblind":
		return ColorBlind(), true
	case NameNoColor, "none", "mono":
		return NoColor(), true
	}
	return nil, false
}

// Dark is the default theme for dark backgrounds.
func Dark() *Theme {
	return &Theme{
		Name: NameDark, Dark: true,
		Text: hex("#d0d4dc"), Muted: hex("#7a8294"), Border: hex("#4b5263"), Accent: hex("#61afef"),
		Title: hex("#c8ccd4"), SelectionBg: hex("#2f4163"), SelectionFg: hex("#ffffff"),
		OK: hex("#98c379"), Warning: hex("#e5c07b"), Critical: hex("#e06c75"), Info: hex("#56b6c2"),
		Phases: map[model.Phase]color.Color{
			model.PhaseIdle: hex("#7a8294"), model.PhasePending: hex("#e5c07b"),
			model.PhaseDraining: hex("#d19a66"), model.PhaseRebooting: hex("#c678dd"),
			model.PhaseRecovering: hex("#61afef"), model.PhaseDone: hex("#98c379"),
			model.PhaseDown: hex("#e06c75"), model.PhaseUnknown: hex("#abb2bf"),
		},
		Verdicts: map[model.Verdict]color.Color{
			model.VerdictFree: hex("#7a8294"), model.VerdictHeld: hex("#61afef"),
			model.VerdictGhost: hex("#e06c75"), model.VerdictOrphaned: hex("#d19a66"),
			model.VerdictExpired: hex("#e06c75"), model.VerdictAmbiguous: hex("#c678dd"),
			model.VerdictUnknown: hex("#e5c07b"),
		},
	}
}

// Light is the default theme for light backgrounds.
func Light() *Theme {
	return &Theme{
		Name: NameLight, Dark: false,
		Text: hex("#1f2328"), Muted: hex("#656d76"), Border: hex("#8c959f"), Accent: hex("#0969da"),
		Title: hex("#24292f"), SelectionBg: hex("#cfe6ff"), SelectionFg: hex("#0a0c10"),
		OK: hex("#1a7f37"), Warning: hex("#9a6700"), Critical: hex("#cf222e"), Info: hex("#0550ae"),
		Phases: map[model.Phase]color.Color{
			model.PhaseIdle: hex("#656d76"), model.PhasePending: hex("#9a6700"),
			model.PhaseDraining: hex("#bc4c00"), model.PhaseRebooting: hex("#8250df"),
			model.PhaseRecovering: hex("#0969da"), model.PhaseDone: hex("#1a7f37"),
			model.PhaseDown: hex("#cf222e"), model.PhaseUnknown: hex("#57606a"),
		},
		Verdicts: map[model.Verdict]color.Color{
			model.VerdictFree: hex("#656d76"), model.VerdictHeld: hex("#0969da"),
			model.VerdictGhost: hex("#cf222e"), model.VerdictOrphaned: hex("#bc4c00"),
			model.VerdictExpired: hex("#cf222e"), model.VerdictAmbiguous: hex("#8250df"),
			model.VerdictUnknown: hex("#9a6700"),
		},
	}
}

// HighContrast uses the 16 basic ANSI colours at full intensity, for
// projectors and low-vision users.
func HighContrast() *Theme {
	return &Theme{
		Name: NameHighContrast, Dark: true,
		Text: hex("15"), Muted: hex("7"), Border: hex("15"), Accent: hex("14"),
		Title: hex("15"), SelectionBg: hex("11"), SelectionFg: hex("0"),
		OK: hex("10"), Warning: hex("11"), Critical: hex("9"), Info: hex("14"),
		Phases: map[model.Phase]color.Color{
			model.PhaseIdle: hex("7"), model.PhasePending: hex("11"),
			model.PhaseDraining: hex("11"), model.PhaseRebooting: hex("13"),
			model.PhaseRecovering: hex("14"), model.PhaseDone: hex("10"),
			model.PhaseDown: hex("9"), model.PhaseUnknown: hex("15"),
		},
		Verdicts: map[model.Verdict]color.Color{
			model.VerdictFree: hex("7"), model.VerdictHeld: hex("14"),
			model.VerdictGhost: hex("9"), model.VerdictOrphaned: hex("11"),
			model.VerdictExpired: hex("9"), model.VerdictAmbiguous: hex("13"),
			model.VerdictUnknown: hex("11"),
		},
	}
}

// ColorBlind uses the Okabe–Ito palette, distinguishable with the common
// colour-vision deficiencies: good is blue, bad is vermillion, never
// red-versus-green. Glyphs (✓ ✗ !) carry the same meaning as the colours.
func ColorBlind() *Theme {
	return &Theme{
		Name: NameColorBlind, Dark: true,
		Text: hex("#e8e8e8"), Muted: hex("#999999"), Border: hex("#666666"), Accent: hex("#56b4e9"),
		Title: hex("#ffffff"), SelectionBg: hex("#0072b2"), SelectionFg: hex("#ffffff"),
		OK: hex("#56b4e9"), Warning: hex("#f0e442"), Critical: hex("#d55e00"), Info: hex("#cc79a7"),
		Phases: map[model.Phase]color.Color{
			model.PhaseIdle: hex("#999999"), model.PhasePending: hex("#f0e442"),
			model.PhaseDraining: hex("#e69f00"), model.PhaseRebooting: hex("#cc79a7"),
			model.PhaseRecovering: hex("#009e73"), model.PhaseDone: hex("#56b4e9"),
			model.PhaseDown: hex("#d55e00"), model.PhaseUnknown: hex("#e8e8e8"),
		},
		Verdicts: map[model.Verdict]color.Color{
			model.VerdictFree: hex("#999999"), model.VerdictHeld: hex("#56b4e9"),
			model.VerdictGhost: hex("#d55e00"), model.VerdictOrphaned: hex("#e69f00"),
			model.VerdictExpired: hex("#d55e00"), model.VerdictAmbiguous: hex("#cc79a7"),
			model.VerdictUnknown: hex("#f0e442"),
		},
	}
}

// NoColor is the colourless theme used when NO_COLOR is set: every colour is
// the terminal default; emphasis comes from bold, reverse and faint.
func NoColor() *Theme {
	return &Theme{Name: NameNoColor, Dark: true, NoColor: true,
		Phases: map[model.Phase]color.Color{}, Verdicts: map[model.Verdict]color.Color{}}
}

// NoColorRequested reports whether the NO_COLOR convention asks for no
// colour: the variable is set to a non-empty value (https://no-color.org).
func NoColorRequested(getenv func(string) string) bool {
	return getenv("NO_COLOR") != ""
}
