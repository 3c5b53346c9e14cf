// Package pctx is the dashboard's shared program context: terminal size,
// theme and its precomputed paint styles, key bindings, the operator's modes
// (read-only, dry-run, allow-unsafe) and the time of the current frame.
//
// It also holds the small text helpers every component uses to build lines
// of an exact display width (Fit, Pad, Box, Overlay). It must not do I/O or
// read the clock itself: the root model sets Now from its injected clock.
package pctx

import (
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/lipgloss/v2"
	"github.com/rebootwatch/rebootwatch/themes"
)

// Context is shared, read-mostly state handed to every component's render
// function. Only the root model changes it.
type Context struct {
	Width, Height int
	Theme         *themes.Theme
	P             Painter
	Keys          KeyMap
	Help          help.Model

	ReadOnly    bool
	DryRun      bool
	AllowUnsafe bool
	Demo        bool

	// Now is the time of the current frame (from the root's clock).
	Now time.Time
}

// New returns a context for a theme and modes.
func New(t *themes.Theme, readOnly, dryRun, allowUnsafe bool) *Context {
	c := &Context{ReadOnly: readOnly, DryRun: dryRun, AllowUnsafe: allowUnsafe}
	c.Keys = NewKeyMap(readOnly)
	c.Help = help.New()
	c.SetTheme(t)
	return c
}

// SetTheme switches the theme and recomputes the paint styles.
func (c *Context) SetTheme(t *themes.Theme) {
	c.Theme = t
	c.P = NewPainter(t)
	st := help.Styles{}
	key := lipgloss.NewStyle()
	desc := lipgloss.NewStyle()
	sep := lipgloss.NewStyle()
	if !t.NoColor {
		key = key.Foreground(t.Accent)
		desc = desc.Foreground(t.Muted)
		sep = sep.Foreground(t.Border)
	} else {
		key = key.Bold(true)
	}
	st.ShortKey, st.FullKey = key, key
	st.ShortDesc, st.FullDesc = desc, desc
	st.ShortSeparator, st.FullSeparator, st.Ellipsis = sep, sep, sep
	c.Help.Styles = st
}
