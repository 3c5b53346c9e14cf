// Package timeline renders the dashboard's timeline: every phase transition,
// lock change, source change and action, newest first, with times. It is a
// pure function of the cluster's timeline entries; an entry more than a day
// away from now carries its date.
package timeline

import (
	"time"

	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/tui/pctx"
)

func role(k model.TimelineKind) pctx.Role {
	switch k {
	case model.KindAction:
		return pctx.Accent
	case model.KindLock:
		return pctx.Warning
	case model.KindSource:
		return pctx.Info
	case model.KindVolume:
		return pctx.Warning
	case model.KindNode:
		return pctx.Text
	}
	return pctx.Text
}

// Render returns exactly h lines of w cells, newest entry first.
func Render(p pctx.Painter, entries []model.TimelineEntry, now time.Time, w, h int) []string {
	if w <= 0 || h <= 0 {
		return nil
	}
	out := make([]string, 0, h)
	if len(entries) == 0 {
		out = append(out, p.Paint(pctx.Muted, "nothing has happened yet"))
	}
	for i := len(entries) - 1; i >= 0 && len(out) < h; i-- {
		e := entries[i]
		ts := e.Time.Format("15:04:05")
		if d := now.Sub(e.Time); d > 24*time.Hour || d < -24*time.Hour {
			ts = e.Time.Format("2006-01-02 15:04:05") // more than a day away: its date too
		}
		msg := sanitize.Short(e.Message, max(w-len(ts)-3, 1))
		out = append(out, p.Paint(pctx.Muted, ts)+" "+p.Paint(role(e.Kind), "▪")+" "+p.Paint(pctx.Text, msg))
	}
	return pctx.Lines(out, w, h)
}
