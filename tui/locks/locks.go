// Package locks renders the dashboard's locks panel: one line per judged
// lock (per kured multi-lock entry) with kind, lock object, holder (node
// name and raw id), how long it has been held, the verdict in its colour and
// the engine's reason; then one line per held slot of every coordinator kind
// without a lock object (a SUC Plan's, FLUO's) with its capacity, holder and
// the coordinator's step. It is a pure function of the lock statuses and
// slot groups, and must not read the cluster or know a kind by name.
package locks

import (
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/tui/pctx"
)

// maxHolder bounds the raw id HolderFull shows: dialogs must keep room for
// their gates and their write.
const maxHolder = 160

// HolderFull renders a lock's holder with the raw id (dialogs), sanitised
// and shortened to maxHolder cells.
func HolderFull(s model.LockStatus) string { return sanitize.Short(holderFull(s), maxHolder) }

func holderFull(s model.LockStatus) string {
	switch {
	case s.Holder == "":
		return "–"
	case s.Verdict == model.VerdictAmbiguous && len(s.HolderNodes) > 0:
		return strings.Join(s.HolderNodes, ", ") + " (id " + s.Holder + ")"
	case s.HolderNode() != "" && s.HolderNode() != s.Holder:
		return s.HolderNode() + " (id " + s.Holder + ")"
	case s.HolderNode() == "" && s.Verdict == model.VerdictGhost:
		return s.Holder + " (matches no node)"
	}
	return s.Holder
}

// Holder renders a lock's holder: node name and raw id when they differ,
// sanitised.
func Holder(s model.LockStatus) string { return sanitize.Short(holder(s), maxHolder) }

func holder(s model.LockStatus) string {
	switch {
	case s.Holder == "":
		return "–"
	case s.Verdict == model.VerdictAmbiguous && len(s.HolderNodes) > 0:
		return strings.Join(s.HolderNodes, ",") + " (" + sanitize.ID(s.Holder) + ")"
	case s.HolderNode() != "" && s.HolderNode() != s.Holder:
		return s.HolderNode() + " (" + sanitize.ID(s.Holder) + ")"
	case s.HolderNode() == "" && s.Verdict == model.VerdictGhost:
		return sanitize.ID(s.Holder) + " (no node)"
	}
	return s.Holder
}

// Held renders how long a lock has been held.
func Held(s model.LockStatus, now time.Time) string {
	if d, ok := s.HeldFor(now); ok {
		return model.HumanDuration(d)
	}
	if s.Holder == "" {
		return "–"
	}
	return "?"
}

// Connecting returns exactly h lines of w cells for a cluster whose sources
// have not all delivered their first picture: its locks are not judged yet
// (an empty list then means "not known", never "no lock").
func Connecting(p pctx.Painter, w, h int) []string {
	if w <= 0 || h <= 0 {
		return nil
	}
	return pctx.Lines([]string{p.Paint(pctx.Warning, "? locks not judged yet: not every source has delivered its first picture")}, w, h)
}

// Unknown returns exactly h lines of w cells for a cluster whose lock
// sources were not read (forbidden, failing, stale): no lock is listed, and
// that is not "no lock" — why says what could not be read.
func Unknown(p pctx.Painter, why string, w, h int) []string {
	if w <= 0 || h <= 0 {
		return nil
	}
	return pctx.Lines([]string{p.Paint(pctx.Warning, "? locks unknown: "+sanitize.Short(why, 400))}, w, h)
}

// SlotLines are the lines of the slot groups that are not lock objects
// (those are listed as locks), one per held slot, or one for a group with
// none: kind, owner, used/capacity (critical when over it), holder, and the
// coordinator's step for it. Sanitised.
func SlotLines(p pctx.Painter, groups []model.SlotGroup, w int) []string {
	return slotLines(p, groups, w, 0, 0)
}

// slotLines is SlotLines with its KIND and owner columns at least kindMin
// and ownerMin wide: under the locks, they line up with KIND and LOCK.
func slotLines(p pctx.Painter, groups []model.SlotGroup, w, kindMin, ownerMin int) []string {
	kindW, ownerW, usedW, holderW := slotWidths(groups, w)
	kindW, ownerW = max(kindW, kindMin), max(ownerW, ownerMin)
	stepW := w - kindW - ownerW - usedW - holderW - 4
	var out []string
	for _, g := range groups {
		if g.Lock {
			continue
		}
		owner := sanitize.Line(g.Owner)
		if owner == "" {
			owner = "—"
		}
		if pctx.Width(owner) > ownerW {
			owner = "…" + ansi.TruncateLeft(owner, pctx.Width(owner)-ownerW+1, "")
		}
		usedTone := pctx.Text
		if g.Over() {
			usedTone = pctx.Critical
		} else if !g.Known {
			usedTone = pctx.Warning
		}
		type row struct{ holder, step string }
		var rows []row
		for _, h := range g.Holders {
			rows = append(rows, row{sanitize.Line(h.HolderName()), sanitize.Line(h.Step)})
		}
		switch {
		case !g.Known && len(rows) == 0:
			rows = append(rows, row{"?", "slots unknown: " + sanitize.Line(g.Unknown)})
		case len(rows) == 0:
			rows = append(rows, row{"–", "free"})
		}
		for i, r := range rows {
			step := r.step
			if i == 0 && !g.Known && len(g.Holders) > 0 {
				step += " (last read; now unknown: " + sanitize.Line(g.Unknown) + ")"
			}
			line := p.Paint(pctx.Accent, pctx.Fit(pctx.Trunc(sanitize.Line(string(g.Kind)), kindW), kindW)) + " " +
				p.Paint(pctx.Text, pctx.Fit(pctx.Trunc(owner, ownerW), ownerW)) + " " +
				p.Paint(usedTone, pctx.Fit(g.Used(), usedW)) + " " +
				p.Paint(pctx.Bold, pctx.Fit(pctx.Trunc(r.holder, holderW), holderW))
			if stepW > 0 {
				line += " " + p.Paint(pctx.Muted, pctx.Trunc(step, stepW))
			}
			out = append(out, line)
		}
	}
	return out
}

// slotWidths are the slot lines' column widths: each as wide as its
// widest cell (its title at least), capped so the step keeps room.
func slotWidths(groups []model.SlotGroup, w int) (kindW, ownerW, usedW, holderW int) {
	kindW, ownerW, usedW, holderW = 4, 8, 4, 6
	for _, g := range groups {
		if g.Lock {
			continue
		}
		kindW = max(kindW, pctx.Width(sanitize.Line(string(g.Kind))))
		ownerW = max(ownerW, pctx.Width(sanitize.Line(g.Owner)))
		usedW = max(usedW, pctx.Width(g.Used()))
		for _, h := range g.Holders {
			holderW = max(holderW, pctx.Width(sanitize.Line(h.HolderName())))
		}
	}
	ownerCap, holderCap := 40, 30
	if w < 90 {
		ownerCap, holderCap = 28, 20
	}
	return min(kindW, 10), min(ownerW, ownerCap), min(usedW, 9), min(holderW, holderCap)
}

// SlotHeader is the slot lines' column header.
func SlotHeader(p pctx.Painter, groups []model.SlotGroup, w int) string {
	kindW, ownerW, usedW, holderW := slotWidths(groups, w)
	return p.Paint(pctx.Muted, pctx.Fit(pctx.Fit("KIND", kindW)+" "+pctx.Fit("SLOTS OF", ownerW)+" "+pctx.Fit("USED", usedW)+" "+pctx.Fit("HOLDER", holderW)+" STEP", w))
}

// Render returns exactly h lines of w cells: a header and one line per lock,
// then the slot lines (SlotLines) of the kinds without a lock object.
// selected is the highlighted lock (-1 for none).
func Render(ctx *pctx.Context, p pctx.Painter, statuses []model.LockStatus, groups []model.SlotGroup, selected int, w, h int) []string {
	if w <= 0 || h <= 0 {
		return nil
	}
	return pctx.Lines(render(ctx, p, statuses, groups, selected, w, h, false), w, h)
}

// RenderWrapped is Render with each lock's REASON wrapped under its column
// (in order, while the h lines have room; the last line the room holds is
// cut) instead of cut on its first line.
func RenderWrapped(ctx *pctx.Context, p pctx.Painter, statuses []model.LockStatus, groups []model.SlotGroup, selected int, w, h int) []string {
	if w <= 0 || h <= 0 {
		return nil
	}
	return pctx.Lines(render(ctx, p, statuses, groups, selected, w, h, true), w, h)
}

// WrapLines is how many lines RenderWrapped needs at width w to show
// every reason whole: the header, the locks with their reasons, the slot
// lines.
func WrapLines(ctx *pctx.Context, statuses []model.LockStatus, groups []model.SlotGroup, w int) int {
	if w <= 0 {
		return 0
	}
	return len(render(ctx, pctx.Painter{}, statuses, groups, -1, w, 1<<10, true))
}

func render(ctx *pctx.Context, p pctx.Painter, statuses []model.LockStatus, groups []model.SlotGroup, selected int, w, h int, wrap bool) []string {
	if slots := SlotLines(p, groups, w); len(statuses) == 0 && len(slots) > 0 {
		return append([]string{SlotHeader(p, groups, w)}, slots...)
	}
	if len(statuses) == 0 {
		return []string{p.Paint(pctx.Muted, "no reboot lock found (kured DaemonSet annotation, fleetlock Lease)")}
	}
	compact := w < 90
	// Every column as wide as its widest cell (its title at least), the
	// REASON the rest. Condensed: the LOCK column stays (two free Leases
	// of one kind are told apart only by it), narrowed to the lock's name,
	// and the holder gives way first.
	names := lockNames(statuses, compact)
	kinds := make([]string, len(statuses))
	kindW, lockW, holderW, heldW, verdictW := 4, 4, 6, 4, 7
	for i, s := range statuses {
		kinds[i] = string(s.Kind)
		if compact && s.Kind == model.LockFleetlock {
			kinds[i] = "fleet"
		}
		kindW = max(kindW, pctx.Width(kinds[i]))
		lockW = max(lockW, pctx.Width(names[i]))
		holderW = max(holderW, pctx.Width(Holder(s)))
		heldW = max(heldW, pctx.Width(Held(s, ctx.Now)))
		verdictW = max(verdictW, pctx.Width(string(s.Verdict)))
	}
	kindW, lockW, holderW = min(kindW, 10), min(lockW, 40), min(holderW, 40)
	if compact {
		lockW = min(lockW, 17)
		holderW = min(holderW, max(w-kindW-lockW-heldW-verdictW-5-12, 12))
	}
	// The slot lines below line up with KIND and LOCK.
	sk, so, _, _ := slotWidths(groups, w)
	kindW = max(kindW, sk)
	if !compact {
		lockW = max(lockW, min(so, 40))
	}
	slots := slotLines(p, groups, w, kindW, lockW)
	reasonW := w - kindW - lockW - holderW - heldW - verdictW - 5
	out := make([]string, 0, h)
	hdr := pctx.Fit("KIND", kindW) + " " + pctx.Fit("LOCK", lockW) + " "
	hdr += pctx.Fit("HOLDER", holderW) + " " + pctx.Fit("HELD", heldW) + " " + pctx.Fit("VERDICT", verdictW) + " " + "REASON"
	out = append(out, p.Paint(pctx.Muted, pctx.Fit(hdr, w)))
	// spare is how many lines the reasons may wrap onto.
	spare := h - 1 - len(statuses) - len(slots)
	for i, s := range statuses {
		if len(out) >= h {
			break
		}
		reason := sanitize.Short(s.Reason, max(reasonW, 1))
		var more []string
		if wrap && reasonW >= 20 && spare > 0 {
			parts := strings.Split(ansi.Wrap(sanitize.Short(s.Reason, 600), reasonW, " "), "\n")
			if n := len(parts) - 1; n > spare {
				// What the room holds, the last line cut.
				parts[spare] = pctx.Trunc(parts[spare]+" "+parts[spare+1], reasonW)
				parts = parts[:spare+1]
			}
			if n := len(parts) - 1; n > 0 {
				reason, more, spare = parts[0], parts[1:], spare-n
			}
		}
		kind := kinds[i]
		lock := names[i]
		if pctx.Width(lock) > lockW {
			// The end of a name tells Leases apart (fleetlock-<group>).
			lock = "…" + ansi.TruncateLeft(lock, pctx.Width(lock)-lockW+1, "")
		}
		verdict := string(s.Verdict)
		cells := []struct {
			text  string
			w     int
			paint func(string) string
		}{
			{kind, kindW, func(x string) string { return p.Paint(pctx.Accent, x) }},
			{lock, lockW, func(x string) string { return p.Paint(pctx.Text, x) }},
			{Holder(s), holderW, func(x string) string { return p.Paint(pctx.Bold, x) }},
			{Held(s, ctx.Now), heldW, func(x string) string { return p.Paint(pctx.Text, x) }},
			{verdict, verdictW, func(x string) string { return p.Verdict(s.Verdict, x) }},
			{reason, max(reasonW, 0), func(x string) string { return p.Paint(pctx.Muted, x) }},
		}
		var sb strings.Builder
		first := true
		for _, c := range cells {
			if c.w <= 0 {
				continue
			}
			if !first {
				sb.WriteByte(' ')
			}
			first = false
			t := pctx.Trunc(c.text, c.w)
			if i == selected {
				sb.WriteString(pctx.Fit(t, c.w))
				continue
			}
			sb.WriteString(c.paint(t))
			if pad := c.w - pctx.Width(t); pad > 0 {
				sb.WriteString(strings.Repeat(" ", pad))
			}
		}
		line := sb.String()
		if i == selected {
			line = p.Paint(pctx.Selected, pctx.Fit(line, w))
		}
		out = append(out, line)
		indent := strings.Repeat(" ", w-reasonW)
		for _, x := range more {
			out = append(out, indent+p.Paint(pctx.Muted, strings.TrimLeft(x, " ")))
		}
	}
	for _, l := range slots {
		if len(out) >= h {
			break
		}
		out = append(out, pctx.Fit(l, w))
	}
	return out
}

// lockNames are the LOCK column's texts: namespace/name, or in the condensed
// panel the name alone unless two locks of different namespaces share it.
func lockNames(statuses []model.LockStatus, compact bool) []string {
	out := make([]string, len(statuses))
	short := compact
	seen := map[string]string{}
	for _, s := range statuses {
		if ns, ok := seen[s.Name]; ok && ns != s.Namespace {
			short = false
		}
		seen[s.Name] = s.Namespace
	}
	for i, s := range statuses {
		if short {
			out[i] = sanitize.Line(s.Name)
		} else {
			out[i] = sanitize.Line(s.Namespace + "/" + s.Name)
		}
	}
	return out
}
