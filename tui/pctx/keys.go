package pctx

import "charm.land/bubbles/v2/key"

// KeyMap is every key binding of the dashboard. In read-only mode the action
// bindings are disabled, which also hides them from every help view.
type KeyMap struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
	Filter, Sort, Detail, Back, Focus       key.Binding
	Release, Reap, Uncordon                 key.Binding
	Theme, Help, Quit                       key.Binding
}

// NewKeyMap returns the default bindings.
func NewKeyMap(readOnly bool) KeyMap {
	k := KeyMap{
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+u"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+d"), key.WithHelp("pgdn", "page down")),
		Top:      key.NewBinding(key.WithKeys("g", "home"), key.WithHelp("g", "top")),
		Bottom:   key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G", "bottom")),
		Filter:   key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Sort:     key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort")),
		Detail:   key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "detail")),
		Back:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Focus:    key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "nodes/locks")),
		Release:  key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "release lock")),
		Reap:     key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "reap lock")),
		Uncordon: key.NewBinding(key.WithKeys("u"), key.WithHelp("u", "uncordon done node")),
		Theme:    key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "theme")),
		Help:     key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:     key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
	}
	if readOnly {
		k.Release.SetEnabled(false)
		k.Reap.SetEnabled(false)
		k.Uncordon.SetEnabled(false)
	}
	return k
}

// ShortHelp is the footer's one-line help.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Up, k.Down, k.Filter, k.Sort, k.Detail, k.Release, k.Reap, k.Theme, k.Help, k.Quit}
}

// FullHelp is the `?` screen, in columns.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom},
		{k.Filter, k.Sort, k.Detail, k.Back, k.Focus},
		{k.Release, k.Reap, k.Uncordon, k.Theme, k.Help, k.Quit},
	}
}
