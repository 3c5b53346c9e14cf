package pctx

import (
	"image/color"

	"github.com/charmbracelet/x/ansi"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/themes"
)

// Role names what a piece of text is, so the theme can colour it.
type Role int

// The roles.
const (
	Text Role = iota
	Muted
	Border
	Accent
	Title
	OK
	Warning
	Critical
	Info
	Selected
	Bold
	Faint
	nRoles
)

// ToneRole is the role of a tone (model.Tone): the roles the theme colours
// OK, Info, Warning and Critical, else Muted.
func ToneRole(t model.Tone) Role {
	switch t {
	case model.ToneOK:
		return OK
	case model.ToneInfo:
		return Info
	case model.ToneWarning:
		return Warning
	case model.ToneCritical:
		return Critical
	}
	return Muted
}

// Mark is the glyph that leads an attention item of a severity: "✗ " when
// critical, "! " otherwise.
func Mark(s model.Severity) string {
	if s == model.SeverityCritical {
		return "✗ "
	}
	return "! "
}

// Reset ends any painted run.
const Reset = ansi.ResetStyle

// Painter wraps text in precomputed SGR sequences. Painting is a string
// concatenation, cheap enough for every visible cell of every frame.
type Painter struct {
	roles    [nRoles]string
	phases   map[model.Phase]string
	verdicts map[model.Verdict]string
	dim      bool
}

func seq(fg, bg color.Color, attrs ...ansi.Attr) string {
	s := ansi.NewStyle(attrs...)
	if fg != nil {
		s = s.ForegroundColor(fg)
	}
	if bg != nil {
		s = s.BackgroundColor(bg)
	}
	if len(s) == 0 {
		return ""
	}
	return s.String()
}

// NewPainter precomputes the styles of a theme.
func NewPainter(t *themes.Theme) Painter {
	p := Painter{phases: map[model.Phase]string{}, verdicts: map[model.Verdict]string{}}
	if t.NoColor {
		p.roles = [nRoles]string{
			Text: "", Muted: seq(nil, nil, ansi.AttrFaint), Border: "", Accent: seq(nil, nil, ansi.AttrBold),
			Title: seq(nil, nil, ansi.AttrBold), OK: "", Warning: seq(nil, nil, ansi.AttrBold),
			Critical: seq(nil, nil, ansi.AttrBold, ansi.AttrUnderline), Info: "",
			Selected: seq(nil, nil, ansi.AttrReverse), Bold: seq(nil, nil, ansi.AttrBold), Faint: seq(nil, nil, ansi.AttrFaint),
		}
		for _, ph := range []model.Phase{model.PhaseDraining, model.PhaseRebooting, model.PhaseRecovering} {
			p.phases[ph] = seq(nil, nil, ansi.AttrBold)
		}
		p.phases[model.PhaseDown] = seq(nil, nil, ansi.AttrBold, ansi.AttrUnderline)
		p.phases[model.PhaseIdle] = seq(nil, nil, ansi.AttrFaint)
		for _, v := range []model.Verdict{model.VerdictGhost, model.VerdictOrphaned, model.VerdictExpired, model.VerdictAmbiguous} {
			p.verdicts[v] = seq(nil, nil, ansi.AttrBold, ansi.AttrUnderline)
		}
		p.verdicts[model.VerdictFree] = seq(nil, nil, ansi.AttrFaint)
		return p
	}
	p.roles = [nRoles]string{
		Text: seq(t.Text, nil), Muted: seq(t.Muted, nil), Border: seq(t.Border, nil), Accent: seq(t.Accent, nil),
		Title: seq(t.Title, nil, ansi.AttrBold), OK: seq(t.OK, nil), Warning: seq(t.Warning, nil),
		Critical: seq(t.Critical, nil, ansi.AttrBold), Info: seq(t.Info, nil),
		Selected: seq(t.SelectionFg, t.SelectionBg, ansi.AttrBold), Bold: seq(t.Text, nil, ansi.AttrBold),
		Faint: seq(t.Muted, nil, ansi.AttrFaint),
	}
	for _, ph := range model.AllPhases {
		p.phases[ph] = seq(t.Phase(ph), nil)
	}
	for _, v := range []model.Verdict{model.VerdictFree, model.VerdictHeld, model.VerdictGhost, model.VerdictOrphaned, model.VerdictExpired, model.VerdictAmbiguous, model.VerdictUnknown} {
		attrs := []ansi.Attr{}
		if v.NeedsAttention() {
			attrs = append(attrs, ansi.AttrBold)
		}
		p.verdicts[v] = seq(t.Verdict(v), nil, attrs...)
	}
	return p
}

func wrap(prefix, s string) string {
	if prefix == "" || s == "" {
		return s
	}
	return prefix + s + Reset
}

// Dim returns a painter that paints everything faint and muted: the look of
// a panel whose source is stale or failing.
func (p Painter) Dim() Painter {
	d := p
	d.dim = true
	return d
}

// Dimmed reports whether the painter dims everything.
func (p Painter) Dimmed() bool { return p.dim }

// Paint wraps s in the style of a role.
func (p Painter) Paint(r Role, s string) string {
	if p.dim && r != Selected && r != Border {
		return wrap(p.roles[Faint], s)
	}
	return wrap(p.roles[r], s)
}

// Phase paints s in the colour of a node phase.
func (p Painter) Phase(ph model.Phase, s string) string {
	if p.dim {
		return wrap(p.roles[Faint], s)
	}
	return wrap(p.phases[ph], s)
}

// Verdict paints s in the colour of a lock verdict.
func (p Painter) Verdict(v model.Verdict, s string) string {
	if p.dim {
		return wrap(p.roles[Faint], s)
	}
	return wrap(p.verdicts[v], s)
}

// Prefix returns the raw SGR sequence of a role ("" for none).
func (p Painter) Prefix(r Role) string { return p.roles[r] }
