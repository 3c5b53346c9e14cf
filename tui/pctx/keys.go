package pctx

import "charm.land/bubbles/v2/key"

// KeyMap is every key binding of the dashboard. In read-only mode the action
// bindings are disabled, which also hides them from every help view.
type KeyMap struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
	Filter, Sort, Detail, Back, Focus       key.Binding
	Release, Reap, Uncordon                 key.Binding
	Timeline, Theme, Help, Quit             key.Binding
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
		Timeline: key.NewBinding(key.WithKeys("l"), key.WithHelp("l", "timeline")),
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

// ShortHelp is the footer's one-line help at its fullest.
func (k KeyMap) ShortHelp() []key.Binding { return k.Footer()[0] }

// FooterWith is Footer, with u (uncordon) in every set, after the
// actions, when an uncordon is offered for the node under the cursor.
func (k KeyMap) FooterWith(uncordon bool) [][]key.Binding {
	sets := k.Footer()
	if !uncordon || !k.Uncordon.Enabled() {
		return sets
	}
	u := k.Uncordon
	u.SetHelp(u.Help().Key, "uncordon")
	for i, set := range sets {
		next := make([]key.Binding, 0, len(set)+1)
		for _, b := range set {
			if b.Help() == k.Help.Help() {
				next = append(next, u)
			}
			next = append(next, b)
		}
		sets[i] = next
	}
	return sets
}

// Footer is the footer's one-line help, fullest first: each next set
// shortens a hint or leaves one out, the least needed first (timeline, theme, sort,
// moving, filter, detail, reap, release). tab, ? and q are in every set:
// the README's story starts with tab, and help and quit must stay findable
// on any terminal.
func (k KeyMap) Footer() [][]key.Binding {
	short := func(b key.Binding, desc string) key.Binding {
		b.SetHelp(b.Help().Key, desc)
		return b
	}
	move := key.NewBinding(key.WithKeys("up", "down", "k", "j"), key.WithHelp("↑↓", "move"))
	release, reap := short(k.Release, "release"), short(k.Reap, "reap")
	sets := [][]key.Binding{
		{k.Up, k.Down, k.Focus, k.Filter, k.Sort, k.Detail, k.Release, k.Reap, k.Timeline, k.Theme, k.Help, k.Quit},
		{move, k.Focus, k.Filter, k.Sort, k.Detail, release, reap, k.Timeline, k.Theme, k.Help, k.Quit},
	}
	for _, drop := range []key.Binding{k.Timeline, k.Theme, k.Sort, move, k.Filter, k.Detail, reap, release} {
		last := sets[len(sets)-1]
		next := make([]key.Binding, 0, len(last)-1)
		for _, b := range last {
			if b.Help() != drop.Help() {
				next = append(next, b)
			}
		}
		sets = append(sets, next)
	}
	return sets
}

// FullHelp is the `?` screen, in columns.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom},
		{k.Filter, k.Sort, k.Detail, k.Back, k.Focus},
		{k.Release, k.Reap, k.Uncordon, k.Timeline, k.Theme, k.Help, k.Quit},
	}
}
