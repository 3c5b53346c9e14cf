package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/themes"
)

// Options control rendering.
type Options struct {
	// Color enables colours (a terminal without NO_COLOR).
	Color bool
	// Theme gives the colours; nil means themes.Dark().
	Theme *themes.Theme
}

type palette struct {
	on          bool
	t           *themes.Theme
	bold, title lipgloss.Style
}

func newPalette(o Options) palette {
	if !o.Color {
		return palette{}
	}
	t := o.Theme
	if t == nil {
		t = themes.Dark()
	}
	return palette{on: true, t: t, bold: lipgloss.NewStyle().Bold(true), title: lipgloss.NewStyle().Bold(true).Underline(true)}
}

func (p palette) r(st lipgloss.Style, s string) string {
	if !p.on || s == "" {
		return s
	}
	return st.Render(s)
}

// plain is p.r with no style: the text itself (lipgloss would only turn
// its tabs into spaces, so only a text with a tab goes through it).
func (p palette) plain(s string) string {
	if !p.on || !strings.Contains(s, "\t") {
		return s
	}
	return lipgloss.NewStyle().Render(s)
}

// textWidth is lipgloss.Width(s), counted without it for printable ASCII
// (one cell per byte), which node names, phases and the like are.
func textWidth(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return lipgloss.Width(s)
		}
	}
	return len(s)
}

func ptr[T any](v T) *T { return &v }

// tone is the style of a tone in the theme: muted is faint, critical bold.
func (p palette) tone(x model.Tone) lipgloss.Style {
	if !p.on {
		return lipgloss.NewStyle()
	}
	switch x {
	case model.ToneMuted:
		return lipgloss.NewStyle().Faint(true)
	case model.ToneCritical:
		return lipgloss.NewStyle().Foreground(p.t.Tone(x)).Bold(true)
	}
	return lipgloss.NewStyle().Foreground(p.t.Tone(x))
}

// Text writes the report of c at now.
func Text(w io.Writer, c *model.Cluster, now time.Time, o Options) error {
	p := newPalette(o)
	snap := c.Snapshot(now)
	var b strings.Builder

	fmt.Fprintf(&b, "%s · context %s · %s\n", p.r(p.bold, "rebootwatch"), x(snap.Context, maxName), now.UTC().Format("2006-01-02 15:04:05 MST"))
	fmt.Fprintln(&b, summary(p, snap))
	var srcs []string
	for _, s := range snap.Sources {
		txt := string(s.Name) + " " + p.r(p.tone(s.Status.Tone()), string(s.Status))
		srcs = append(srcs, txt)
	}
	if len(srcs) > 0 {
		fmt.Fprintf(&b, "Sources: %s\n", strings.Join(srcs, " · "))
	}

	b.WriteString("\n" + p.r(p.title, "LOCKS") + "\n")
	locksWhy, locksUnread := model.UnreadReason(snap.Unread, "locks")
	switch {
	case len(snap.Locks) == 0 && locksUnread:
		// Nothing seen is not nothing there.
		b.WriteString("  " + p.r(p.warn(), x(locksWhy, maxText)) + "\n")
	case len(snap.Locks) == 0 && !slotsBeyondLocks(snap.Slots):
		b.WriteString("  no reboot lock found (kured DaemonSet or fleetlock Lease)\n")
		// Where each lock source looked ("none" is a claim about a place).
		for _, h := range snap.Sources {
			if (h.Name == model.SourceKured || h.Name == model.SourceFleetlock) && h.Status == model.StatusNotInstalled && h.Message != "" {
				b.WriteString("    " + string(h.Name) + ": " + x(h.Message, maxText) + "\n")
			}
		}
	case len(snap.Locks) == 0:
		// Only the slots of kinds without a lock object (below).
	default:
		t := table{head: []string{"KIND", "LOCK", "HOLDER", "HELD", "VERDICT", "ACTIONS", "REASON"}}
		for _, l := range snap.Locks {
			holder := l.Holder
			switch {
			case l.Holder == "":
				holder = "—"
			case l.HolderNode != nil && *l.HolderNode != l.Holder:
				holder = *l.HolderNode + " (" + sanitize.ID(l.Holder) + ")"
			case l.HolderNode == nil && l.Verdict == model.VerdictGhost:
				holder = sanitize.ID(l.Holder) + " (no node)"
			case l.HolderNode == nil:
				// Not mapped, but not known to match no node either
				// (nodes forbidden, stale, ambiguous): say so.
				holder = sanitize.ID(l.Holder) + " (node unknown)"
			}
			held := "—"
			if l.HeldSeconds != nil {
				held = model.HumanDuration(time.Duration(*l.HeldSeconds) * time.Second)
			}
			var acts []string
			for _, a := range l.Actions {
				acts = append(acts, string(a))
			}
			act := strings.Join(acts, ",")
			if act == "" && l.Pending != nil {
				// What the verdict calls for, and the gates that refuse it
				// (the BLOCKED section says why).
				act = string(l.Pending.Action) + " ✗ " + strings.Join(l.Pending.Gates(), ",")
			}
			if act == "" {
				act = "—"
			}
			t.add([]cell{{s: string(l.Kind)}, {s: l.Namespace + "/" + l.Name}, {s: holder}, {s: held},
				{s: string(l.Verdict), st: ptr(p.tone(l.Verdict.Tone()))}, {s: act}, {s: l.Reason, last: true}})
		}
		t.write(&b, p)
		if locksUnread {
			b.WriteString("  " + p.r(p.warn(), "! "+x(locksWhy, maxText)+": other locks may be there unseen") + "\n")
		}
	}

	slotTable(&b, p, snap.Slots)

	b.WriteString("\n" + p.r(p.title, "NODES") + "\n")
	if why, unread := model.UnreadReason(snap.Unread, "nodes"); unread && len(snap.Nodes) == 0 {
		b.WriteString("  " + p.r(p.warn(), "nodes unknown: "+x(why, maxText)) + "\n")
	} else if len(snap.Nodes) == 0 {
		b.WriteString("  no nodes\n")
	} else {
		target := c.TargetOS()
		t := table{head: []string{"NAME", "ROLE", "PHASE", "PROGRESS", "IN PHASE", "READY", "SCHED", "OS", "REBOOT", "LOCK"}}
		for _, n := range snap.Nodes {
			node, _ := c.Node(n.Name)
			tr := c.Track(n.Name)
			inPhase := "—"
			if tr != nil && !tr.Since.IsZero() && !tr.SinceUnknown {
				inPhase = model.HumanDuration(now.Sub(tr.Since))
			}
			ready := "Ready"
			rst := p.ok()
			if !n.Ready {
				ready, rst = "NotReady", p.crit()
			}
			sched := "yes"
			sst := p.dim()
			if !n.Schedulable {
				sched, sst = "cordoned", p.warn()
			}
			reboot := "?"
			if n.RebootRequired != nil {
				reboot = map[bool]string{true: "yes", false: "no"}[*n.RebootRequired]
			}
			lk := "—"
			if n.HoldsLock != nil {
				lk = string(*n.HoldsLock)
				if n.Step != nil {
					lk += " · " + *n.Step
				}
			}
			os := x(shortOS(n.OSImage, n.Kernel), maxName/2)
			if !c.Upgraded(node, target) {
				to := c.TargetFor(node) // its own OS family's target
				os += " → " + x(shortOS(to.Image, to.Kernel), maxName/2)
			}
			t.add([]cell{{s: n.Name}, {s: node.Role()}, {s: string(n.Phase), st: ptr(p.tone(n.Phase.Tone()))},
				{s: Stepper(n.Phase)}, {s: inPhase}, {s: ready, st: &rst}, {s: sched, st: &sst}, {s: os}, {s: reboot}, {s: lk, last: true}})
		}
		t.write(&b, p)
	}

	b.WriteString("\n" + p.r(p.title, "VOLUMES") + "\n")
	if why, unread := c.LonghornUnread(); unread {
		b.WriteString("  " + p.r(p.warn(), "volumes unknown: "+x(why, 300)) + " (the volume gate fails)\n")
	} else if v := snap.Volumes; v == nil {
		b.WriteString("  Longhorn not installed: no volume gate\n")
	} else {
		line := fmt.Sprintf("  %d total · %s healthy · %s degraded · %s faulted · %d unknown", v.Total,
			p.r(p.ok(), fmt.Sprint(v.Healthy)), p.r(ifAny(p, v.Degraded, p.warn()), fmt.Sprint(v.Degraded)),
			p.r(ifAny(p, v.Faulted, p.crit()), fmt.Sprint(v.Faulted)), v.Unknown)
		b.WriteString(line + "\n")
		if len(v.NotHealthy) > 0 {
			names := make([]string, 0, len(v.NotHealthy))
			for _, n := range v.NotHealthy {
				names = append(names, x(n, maxName))
			}
			b.WriteString("  not healthy: " + strings.Join(names, ", ") + "\n")
		}
	}

	blocked(&b, p, snap)

	b.WriteString("\n" + p.r(p.title, "ATTENTION") + "\n")
	if len(snap.Attention) == 0 {
		b.WriteString("  " + p.r(p.ok(), "nothing needs attention") + "\n")
	}
	for _, a := range snap.Attention {
		mark, st := "!", p.warn()
		if a.Severity == model.SeverityCritical {
			mark, st = "✗", p.crit()
		}
		fmt.Fprintf(&b, "  %s %s\n", p.r(st, mark+" "+string(a.Severity)), x(a.Message, maxText))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// blocked writes the BLOCKED section: what stops the fleet now, with its
// evidence, then every waiting node's blockers (first first).
func blocked(b *strings.Builder, p palette, snap model.Snapshot) {
	b.WriteString("\n" + p.r(p.title, "BLOCKED") + "\n")
	fb := snap.Fleet.Blockers
	if len(fb) > 0 && fb[0].Others != nil {
		f := fb[0]
		line := "fleet: " + x(f.Reason, maxText)
		if *f.Others > 0 {
			line += fmt.Sprintf(" (and %d other %s blocked)", *f.Others, plural(*f.Others, "node", "nodes"))
		}
		fmt.Fprintf(b, "  %s %s\n", p.r(p.warn(), "■"), line)
		if f.Clears != "" {
			fmt.Fprintf(b, "    clears: %s\n", x(f.Clears, maxText))
		}
		for _, e := range f.Evidence {
			fmt.Fprintf(b, "    %s: %s\n", x(e.Key, maxName), x(e.Value, maxText))
		}
		fb = fb[1:]
		if why, unread := model.UnreadReason(snap.Unread, "fleet.blockers"); unread {
			fmt.Fprintf(b, "    %s\n", p.r(p.warn(), "(maybe not all: "+x(why, maxText)+")"))
		}
	} else if why, unread := model.UnreadReason(snap.Unread, "fleet.blockers"); unread {
		b.WriteString("  " + p.r(p.warn(), x(why, maxText)) + "\n")
	} else {
		b.WriteString("  " + p.r(p.ok(), "nothing stops the fleet") + "\n")
	}
	for _, g := range fb {
		fmt.Fprintf(b, "  %s %s\n", p.r(p.dim(), "·"), x(g.Reason, maxText))
	}
	t := table{head: []string{"NODE", "BLOCKER", "CLEARS", "REASON"}}
	for _, n := range snap.Nodes {
		for _, bl := range n.Blockers {
			st := p.warn()
			if !bl.Stalls {
				st = p.dim()
			}
			t.add([]cell{{s: n.Name}, {s: string(bl.Kind), st: &st}, {s: bl.Clears}, {s: bl.Reason, last: true}})
		}
	}
	if len(t.rows) > 0 {
		t.write(b, p)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ifAny is st when n > 0, else the muted tone.
func ifAny(p palette, n int, st lipgloss.Style) lipgloss.Style {
	if n > 0 {
		return st
	}
	return p.dim()
}

func (p palette) dim() lipgloss.Style  { return p.tone(model.ToneMuted) }
func (p palette) ok() lipgloss.Style   { return p.tone(model.ToneOK) }
func (p palette) warn() lipgloss.Style { return p.tone(model.ToneWarning) }
func (p palette) crit() lipgloss.Style { return p.tone(model.ToneCritical) }

func summary(p palette, s model.Snapshot) string {
	f := s.Fleet
	var parts []string
	for _, ph := range model.AllPhases {
		if n := f.Phases[ph]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, ph))
		}
	}
	eta := "ETA unknown"
	if f.ETA != nil {
		eta = "ETA " + *f.ETA
	}
	target := x(f.TargetOS, maxName)
	if target == "" {
		target = "?"
	}
	line := fmt.Sprintf("Fleet: %s upgraded to %s · %s", p.r(p.bold, fmt.Sprintf("%d/%d", f.Upgraded, f.Nodes)), target, eta)
	if len(f.Families) > 1 {
		// Several OS families: each has its own target, never compared.
		var fams []string
		for _, fm := range f.Families {
			fams = append(fams, fmt.Sprintf("%d/%d %s to %s", fm.Upgraded, fm.Nodes, x(fm.Family, maxName), x(fm.TargetOS, maxName)))
		}
		line = fmt.Sprintf("Fleet: %s upgraded (%s) · %s", p.r(p.bold, fmt.Sprintf("%d/%d", f.Upgraded, f.Nodes)), strings.Join(fams, "; "), eta)
	}
	if len(parts) > 0 {
		line += " · " + strings.Join(parts, ", ")
	}
	return line
}

// slotsBeyondLocks reports whether a kind without a lock object has slot
// groups (a SUC Plan, FLUO's slot).
func slotsBeyondLocks(gs []model.SnapshotSlots) bool {
	for _, g := range gs {
		if !g.LockObject {
			return true
		}
	}
	return false
}

// slotTable lists the slots of the kinds without a lock object, one line
// per holder (one for a group with none): kind, whose slots, used of the
// capacity, holder, and the coordinator's step. Cluster strings go through
// the table's sanitiser (x) like every other cell.
func slotTable(b *strings.Builder, p palette, gs []model.SnapshotSlots) {
	if !slotsBeyondLocks(gs) {
		return
	}
	t := table{head: []string{"KIND", "SLOTS OF", "USED", "HOLDER", "STEP"}}
	for _, g := range gs {
		if g.LockObject {
			continue
		}
		owner := g.Owner
		if owner == "" {
			owner = "—"
		}
		used := "?"
		if g.Known {
			used = fmt.Sprintf("%d/?", len(g.Holders))
			if g.Capacity != nil {
				used = fmt.Sprintf("%d/%d", len(g.Holders), *g.Capacity)
			}
		}
		ust := p.dim()
		switch {
		case g.Over:
			ust = p.crit()
		case !g.Known:
			ust = p.warn()
		}
		if len(g.Holders) == 0 {
			step := "free"
			if !g.Known {
				step = "slots unknown: " + g.Unknown
			}
			t.add([]cell{{s: string(g.Kind)}, {s: owner}, {s: used, st: &ust}, {s: "—"}, {s: step, last: true}})
			continue
		}
		for _, h := range g.Holders {
			holder := h.Holder
			if h.Node != nil && *h.Node != h.Holder {
				holder = *h.Node + " (" + sanitize.ID(h.Holder) + ")"
			} else if h.Node == nil {
				holder = sanitize.ID(h.Holder) + " (no node)"
			}
			step := h.Step
			if !g.Known {
				step += " (last read; now unknown: " + g.Unknown + ")"
			}
			t.add([]cell{{s: string(g.Kind)}, {s: owner}, {s: used, st: &ust}, {s: holder}, {s: step, last: true}})
		}
	}
	t.write(b, p)
}

// Stepper renders a node's place in pending → draining → rebooting →
// recovering → done as five marks: ● passed or current, ○ to come.
func Stepper(ph model.Phase) string {
	i := ph.Step()
	if i < 0 {
		switch ph {
		case model.PhaseDown:
			return "✗ down"
		case model.PhaseUnknown:
			return "? ?"
		}
		return "· idle"
	}
	return strings.Repeat("●", i+1) + strings.Repeat("○", len(model.CycleSteps)-i-1)
}

// Bounds of cluster values in the report: a 200,000-character holder is
// shown shortened, never repeated whole.
const (
	maxName = 64  // names, ids, OS labels
	maxText = 300 // reasons and messages
)

// x sanitises a value from the cluster for the report: one line, controls
// escaped, at most n cells. Every table cell passes through it (table.add),
// so the report's one boundary is the table plus the few lines above.
func x(s string, n int) string { return sanitize.Short(s, n) }

// shortOS drops a kernel's flavour suffix and joins image and kernel.
func shortOS(image, kernel string) string {
	k := strings.TrimSuffix(kernel, "-generic")
	switch {
	case image == "":
		return k
	case k == "":
		return image
	}
	return image + " " + k
}

type cell struct {
	s string
	// st is the cell's style, nil for none: an unstyled cell is written
	// as it is, without going through lipgloss for each of a 5,000-node
	// table's cells (and a Style is large: only styled cells hold one).
	st   *lipgloss.Style
	last bool
}

type table struct {
	head []string
	rows [][]cell
}

// add appends a row; every cell is sanitised here (the last column, a
// reason, may be longer than the others).
func (t *table) add(r []cell) {
	for i := range r {
		n := maxName
		if r[i].last || i == len(r)-1 {
			n = maxText
		}
		r[i].s = x(r[i].s, n)
	}
	t.rows = append(t.rows, r)
}

func (t *table) write(b *strings.Builder, p palette) {
	w := make([]int, len(t.head))
	for i, h := range t.head {
		w[i] = textWidth(h)
	}
	for _, r := range t.rows {
		for i, c := range r {
			if n := textWidth(c.s); n > w[i] {
				w[i] = n
			}
		}
	}
	pad := func(s string, n int) string { return s + strings.Repeat(" ", max(0, n-textWidth(s))) }
	render := func(c cell, s string) string {
		if c.st == nil {
			return p.plain(s)
		}
		return p.r(*c.st, s)
	}
	b.WriteString("  ")
	for i, h := range t.head {
		if i == len(t.head)-1 {
			b.WriteString(p.r(p.dim(), h))
		} else {
			b.WriteString(p.r(p.dim(), pad(h, w[i])) + "  ")
		}
	}
	b.WriteString("\n")
	for _, r := range t.rows {
		b.WriteString("  ")
		for i, c := range r {
			if c.last || i == len(r)-1 {
				b.WriteString(render(c, c.s))
			} else {
				b.WriteString(render(c, pad(c.s, w[i])) + "  ")
			}
		}
		b.WriteString("\n")
	}
}
