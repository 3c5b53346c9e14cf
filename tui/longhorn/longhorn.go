// Package longhorn renders the dashboard's Longhorn panel: volume counts by
// robustness, the volumes that are not healthy, and the release/reap gate
// that state implies (DESIGN §6 rule 3). It is a pure function of its Data.
package longhorn

import (
	"fmt"
	"strings"

	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/tui/pctx"
)

// Data is what the panel shows. Summary is nil when Longhorn is absent.
type Data struct {
	Summary *model.VolumeSummary
	Volumes map[string]*model.Volume // by namespace/name, for the not-healthy list
	// Unread says why Longhorn was not read (not yet, error, forbidden,
	// stale): then the panel claims nothing about volumes.
	Unread string
}

// Gate returns the gate line: whether volumes block a release or reap.
func Gate(p pctx.Painter, s *model.VolumeSummary) string {
	switch {
	case s == nil:
		return p.Paint(pctx.Muted, "gate: no Longhorn, no volume gate")
	case s.Faulted > 0:
		return p.Paint(pctx.Critical, fmt.Sprintf("gate ✗ %d faulted: unsafe to free a lock", s.Faulted))
	case s.Degraded > 0:
		return p.Paint(pctx.Warning, fmt.Sprintf("gate ✗ %d degraded: unsafe to free a lock", s.Degraded))
	case s.Unknown > 0:
		return p.Paint(pctx.Warning, fmt.Sprintf("gate ? %d volume(s) unknown", s.Unknown))
	}
	return p.Paint(pctx.OK, "gate ✓ all volumes healthy")
}

// Counts renders the robustness counts on one line.
func Counts(p pctx.Painter, s *model.VolumeSummary) string {
	if s == nil {
		return p.Paint(pctx.Muted, "Longhorn not installed")
	}
	return p.Paint(pctx.OK, fmt.Sprintf("✓ %d healthy", s.Healthy)) + "  " +
		p.Paint(pctx.Warning, fmt.Sprintf("! %d degraded", s.Degraded)) + "  " +
		p.Paint(pctx.Critical, fmt.Sprintf("✗ %d faulted", s.Faulted)) + "  " +
		p.Paint(pctx.Muted, fmt.Sprintf("? %d unknown", s.Unknown))
}

// Short renders counts and gate compactly, for the condensed layout;
// unread (see Data.Unread) replaces both.
func Short(p pctx.Painter, s *model.VolumeSummary, unread string) string {
	if unread != "" {
		return p.Paint(pctx.Warning, "? not read") + " " + p.Paint(pctx.Critical, "gate ✗ volumes unknown")
	}
	if s == nil {
		return p.Paint(pctx.Muted, "not installed · no volume gate")
	}
	c := p.Paint(pctx.OK, fmt.Sprintf("✓%d", s.Healthy)) + " " + p.Paint(pctx.Warning, fmt.Sprintf("!%d", s.Degraded)) + " " +
		p.Paint(pctx.Critical, fmt.Sprintf("✗%d", s.Faulted)) + " " + p.Paint(pctx.Muted, fmt.Sprintf("?%d", s.Unknown))
	switch {
	case s.Faulted > 0:
		return c + " " + p.Paint(pctx.Critical, "gate ✗ faulted volumes")
	case s.Degraded > 0:
		return c + " " + p.Paint(pctx.Warning, "gate ✗ degraded volumes")
	case s.Unknown > 0:
		return c + " " + p.Paint(pctx.Warning, "gate ? unknown volumes")
	}
	return c + " " + p.Paint(pctx.OK, "gate ✓")
}

// Render returns exactly h lines of w cells.
func Render(p pctx.Painter, d Data, w, h int) []string {
	if w <= 0 || h <= 0 {
		return nil
	}
	if d.Unread != "" {
		return pctx.Lines([]string{p.Paint(pctx.Warning, "? "+sanitize.Line(d.Unread)),
			p.Paint(pctx.Critical, "gate ✗ volumes unknown: not read")}, w, h)
	}
	counts := Counts(p, d.Summary)
	if d.Summary != nil && pctx.Width(counts) > w {
		// Narrow: the counts as the condensed line has them, whole.
		s := d.Summary
		counts = p.Paint(pctx.OK, fmt.Sprintf("✓%d", s.Healthy)) + " " + p.Paint(pctx.Warning, fmt.Sprintf("!%d", s.Degraded)) + " " +
			p.Paint(pctx.Critical, fmt.Sprintf("✗%d", s.Faulted)) + " " + p.Paint(pctx.Muted, fmt.Sprintf("?%d", s.Unknown))
	}
	lines := []string{counts, Gate(p, d.Summary)}
	if d.Summary != nil && d.Summary.Degraded > 0 && d.Summary.Faulted == 0 {
		lines = append(lines, p.Paint(pctx.Muted, "  the next drain could leave a volume with 1 replica"))
	}
	if d.Summary != nil {
		room := h - len(lines)
		for i, k := range d.Summary.NotHealthy {
			if i >= room {
				break
			}
			if i == room-1 && len(d.Summary.NotHealthy) > room {
				msg := fmt.Sprintf("… %d more not healthy", len(d.Summary.NotHealthy)-i)
				if i == 0 { // none listed: there is no "more"
					msg = fmt.Sprintf("%d volumes not healthy", len(d.Summary.NotHealthy))
				}
				lines = append(lines, p.Paint(pctx.Muted, msg))
				break
			}
			v := d.Volumes[k]
			if v == nil {
				lines = append(lines, p.Paint(pctx.Muted, sanitize.Short(k, w)))
				continue
			}
			role := pctx.Warning
			if v.Robustness == model.RobustnessFaulted {
				role = pctx.Critical
			}
			node := sanitize.Short(v.Node, 64)
			if node == "" {
				node = "detached"
			}
			lines = append(lines, p.Paint(role, pctx.Fit(string(v.Robustness), 9))+" "+
				p.Paint(pctx.Text, sanitize.Short(v.Name, max(w-12, 1)))+p.Paint(pctx.Muted, fmt.Sprintf(" ×%d on %s", v.Replicas, node)))
		}
	}
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return pctx.Lines(lines, w, h)
}
