// Package detail renders the node detail view: conditions, boot ids seen,
// the current cycle's phase durations, the lock it holds with the engine's
// evidence, kured's node annotations and the Longhorn volumes attached to
// it. It is a pure function of the cluster.
package detail

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/tui/locks"
	"github.com/rebootwatch/rebootwatch/tui/pctx"
)

// x sanitises a value from the cluster for the detail view (one line,
// controls escaped, at most maxValue cells).
func x(s string) string { return sanitize.Short(s, maxValue) }

// maxValue bounds one value: the view scrolls, but a 200,000-character
// holder must not become thousands of lines.
const maxValue = 1000

// Stamp renders a time of day, with its date when it is more than a day
// away from now ("04:53:52", "2026-10-24 04:53:52").
func Stamp(t, now time.Time) string {
	if d := now.Sub(t); d > 24*time.Hour || d < -24*time.Hour {
		return t.Format("2006-01-02 15:04:05")
	}
	return t.Format("15:04:05")
}

// Lines returns the detail of one node as lines (not fitted; the caller
// boxes, scrolls and fits them; long blocker reasons wrap at width).
func Lines(ctx *pctx.Context, c *model.Cluster, name string, width int) []string {
	p := ctx.P
	now := ctx.Now
	n, ok := c.Node(name)
	if !ok {
		return []string{p.Paint(pctx.Warning, "node "+x(name)+" is gone (deleted since it was selected)")}
	}
	var out []string
	kv := func(k, v string) { out = append(out, p.Paint(pctx.Muted, pctx.Fit(k, 17)+" ")+v) }
	section := func(s string) { out = append(out, "", p.Paint(pctx.Title, s)) }

	ph := c.Phase(name)
	t := c.Track(name)
	phase := p.Phase(ph, string(ph))
	if t != nil && !t.Since.IsZero() && !t.SinceUnknown {
		phase += p.Paint(pctx.Muted, " for "+model.HumanDuration(now.Sub(t.Since)))
	}
	kv("phase", phase)
	kv("role", x(n.Role()))
	ready, known, since := n.Ready()
	rs := p.Paint(pctx.Muted, "unknown")
	if known && ready {
		rs = p.Paint(pctx.OK, "Ready")
	} else if known {
		rs = p.Paint(pctx.Critical, "NotReady")
	}
	if !since.IsZero() {
		rs += p.Paint(pctx.Muted, " since "+Stamp(since, now)+" ("+model.HumanDuration(now.Sub(since))+" ago)")
	}
	kv("ready", rs)
	if n.Unschedulable {
		kv("schedulable", p.Paint(pctx.Warning, "no (cordoned)"))
	} else {
		kv("schedulable", "yes")
	}
	target := c.TargetOS()
	up := p.Paint(pctx.Warning, "not upgraded yet")
	if c.Upgraded(n, target) {
		up = p.Paint(pctx.OK, "upgraded")
	}
	kv("os", x(n.OSImage)+p.Paint(pctx.Muted, " · kernel ")+x(n.KernelVersion))
	kv("target", x(c.TargetFor(n).String())+" · "+up)
	if rr, known := c.RebootRequired(name); known {
		kv("reboot needed", fmt.Sprint(rr))
	} else {
		kv("reboot needed", p.Paint(pctx.Muted, "unknown (no kured_reboot_required)"))
	}
	kv("machine id", x(n.MachineID))

	if bs := c.NodeBlockers(name); len(bs) > 0 {
		section("Waiting for")
		out = append(out, blockerLines(ctx, bs, width)...)
	}

	section("Cycle")
	if t == nil || len(t.Spans) == 0 {
		out = append(out, p.Paint(pctx.Muted, "no reboot cycle seen"))
	} else {
		if !t.CycleStart.IsZero() {
			kv("started", Stamp(t.CycleStart, now)+p.Paint(pctx.Muted, " ("+model.HumanDuration(now.Sub(t.CycleStart))+" ago)"))
		}
		if t.LockKind != "" {
			kv("lock kind", string(t.LockKind))
		}
		durs := t.PhaseDurations(now)
		var steps []string
		for _, s := range model.CycleSteps {
			if d, ok := durs[s]; ok {
				steps = append(steps, p.Phase(s, string(s))+" "+model.HumanDuration(d))
			} else {
				steps = append(steps, p.Paint(pctx.Muted, string(s)+" –"))
			}
		}
		out = append(out, strings.Join(steps, p.Paint(pctx.Muted, " → ")))
	}

	section("Lock")
	held := false
	for _, s := range c.LockStatuses() {
		if s.Holder == "" || !holds(s, name) {
			continue
		}
		held = true
		kv(string(s.Kind), x(s.Namespace+"/"+s.Name)+" · holder "+locks.Holder(s)+" · held "+locks.Held(s, now))
		kv("verdict", p.Verdict(s.Verdict, string(s.Verdict))+p.Paint(pctx.Muted, " — ")+x(s.Reason))
		for _, e := range s.Evidence {
			kv("  "+x(e.Key), x(e.Value))
		}
	}
	if !held {
		out = append(out, p.Paint(pctx.Muted, "holds no reboot lock"))
	}

	section("Conditions")
	if len(n.Conditions) == 0 {
		out = append(out, p.Paint(pctx.Muted, "none reported"))
	}
	for _, cd := range n.Conditions {
		role := pctx.Text
		bad := (cd.Type == "Ready" && cd.Status != "True") || (cd.Type != "Ready" && cd.Status == "True")
		if bad {
			role = pctx.Warning
		}
		ago := ""
		if !cd.LastTransition.IsZero() {
			ago = model.HumanDuration(now.Sub(cd.LastTransition)) + " ago"
		}
		out = append(out, p.Paint(role, pctx.Fit(x(cd.Type), 21)+" "+pctx.Fit(x(cd.Status), 7)+" ")+p.Paint(pctx.Muted, pctx.Fit(ago, 10)+" "+x(cd.Reason+" "+cd.Message)))
	}

	section("Boot ids seen")
	if t == nil || len(t.Boots) == 0 {
		out = append(out, p.Paint(pctx.Muted, "none"))
	} else {
		for i := len(t.Boots) - 1; i >= 0; i-- {
			b := t.Boots[i]
			mark := "  "
			if b.BootID == n.BootID {
				mark = p.Paint(pctx.Accent, "▸ ")
			}
			out = append(out, mark+x(b.BootID)+p.Paint(pctx.Muted, " first seen "+Stamp(b.FirstSeen, now)))
		}
	}

	section("kured annotations")
	if len(n.Annotations) == 0 {
		out = append(out, p.Paint(pctx.Muted, "none (kured runs without --annotate-nodes, or not here)"))
	}
	keys := make([]string, 0, len(n.Annotations))
	for k := range n.Annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, p.Paint(pctx.Muted, x(k)+" = ")+x(n.Annotations[k]))
	}

	section("Longhorn volumes on this node")
	count := 0
	for _, v := range c.Volumes() {
		if v.Node != name {
			continue
		}
		count++
		role := pctx.OK
		switch v.Robustness {
		case model.RobustnessDegraded, model.RobustnessUnknown:
			role = pctx.Warning
		case model.RobustnessFaulted:
			role = pctx.Critical
		}
		out = append(out, p.Paint(role, pctx.Fit(x(string(v.Robustness)), 10))+x(v.Key())+p.Paint(pctx.Muted, fmt.Sprintf(" ×%d %s", v.Replicas, x(v.State))))
	}
	if count == 0 {
		out = append(out, p.Paint(pctx.Muted, "none attached"))
	}
	return out
}

// blockerLines lists every blocker of a node, first first: its kind, the
// reason, what clears it and the evidence, wrapped at width.
func blockerLines(ctx *pctx.Context, bs []model.Blocker, width int) []string {
	p := ctx.P
	var out []string
	ww := max(width-19, 20)
	kv := func(k, v string) {
		for i, l := range wrap(v, ww) {
			if i > 0 {
				k = ""
			}
			out = append(out, p.Paint(pctx.Muted, pctx.Fit(k, 17)+" ")+l)
		}
	}
	for i, b := range bs {
		if i > 0 {
			out = append(out, "")
		}
		role := pctx.Warning
		if !b.Stalls {
			role = pctx.Muted
		}
		mark := fmt.Sprintf("%d. ", i+1)
		out = append(out, p.Paint(role, mark+string(b.Kind)))
		kv("  why", x(b.Reason))
		if b.Clears != "" {
			kv("  clears", x(b.Clears))
		}
		if !b.Until.IsZero() {
			kv("  until", Stamp(b.Until, ctx.Now)+" (in "+model.HumanDuration(b.Until.Sub(ctx.Now))+")")
		}
		for _, e := range b.Evidence {
			k := "  " + x(e.Key)
			if pctx.Width(k) > 17 {
				// A long key (a PodDisruptionBudget's name) gets its own
				// line rather than being cut.
				for _, l := range wrap(k, max(width-2, 20)) {
					out = append(out, p.Paint(pctx.Muted, l))
				}
				k = ""
			}
			kv(k, x(e.Value))
		}
	}
	return out
}

func holds(s model.LockStatus, name string) bool {
	for _, h := range s.HolderNodes {
		if h == name {
			return true
		}
	}
	return s.Holder == name
}

// LockLines returns the detail of one judged lock: holder, verdict with
// the whole reason, the evidence it rests on and the allowed actions.
func LockLines(ctx *pctx.Context, s model.LockStatus, width int) []string {
	p := ctx.P
	var out []string
	kv := func(k, v string) { out = append(out, p.Paint(pctx.Muted, pctx.Fit(k, 17)+" ")+v) }
	kv("kind", string(s.Kind))
	kv("object", x(s.Namespace+"/"+s.Name)+p.Paint(pctx.Muted, " (uid "+x(s.UID)+", resourceVersion "+x(s.ResourceVersion)+")"))
	kv("holder", locks.HolderFull(s))
	kv("held for", locks.Held(s, ctx.Now))
	if !s.Created.IsZero() {
		kv("taken", s.Created.Format("2006-01-02 15:04:05"))
	}
	if s.TTL > 0 {
		kv("ttl", s.TTL.String())
	}
	kv("verdict", p.Verdict(s.Verdict, string(s.Verdict)))
	// The view indents each line by one cell and the label takes 18: a
	// value wraps in what is left, so the box never cuts a word of it.
	kvWrapped := func(k, v string) {
		for i, l := range wrap(v, max(width-19, 20)) {
			if i > 0 {
				k = ""
			}
			kv(k, l)
		}
	}
	kvWrapped("reason", x(s.Reason))
	out = append(out, "", p.Paint(pctx.Title, "Evidence"))
	if len(s.Evidence) == 0 {
		out = append(out, p.Paint(pctx.Muted, "none recorded"))
	}
	for _, e := range s.Evidence {
		kvWrapped(x(e.Key), x(e.Value))
	}
	if len(s.Settings) > 0 {
		out = append(out, "", p.Paint(pctx.Title, string(s.Kind)+" settings")+p.Paint(pctx.Muted, " (from its own objects)"))
		for _, e := range s.Settings {
			out = append(out, p.Paint(pctx.Muted, pctx.Fit(x(e.Key), 30)+" ")+x(e.Value))
		}
	}
	if !ctx.ReadOnly {
		out = append(out, "", p.Paint(pctx.Title, "Actions"))
		if len(s.Actions) == 0 {
			out = append(out, p.Paint(pctx.Muted, "none allowed now (r/x still show which gate refuses)"))
		}
		for _, a := range s.Actions {
			key := "r"
			if a == model.ActionReap {
				key = "x"
			}
			out = append(out, p.Paint(pctx.Accent, key)+" "+string(a))
		}
	}
	return out
}

func wrap(s string, w int) []string {
	var out []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case pctx.Width(line)+1+pctx.Width(word) <= w:
			line += " " + word
		default:
			out = append(out, line)
			line = word
		}
	}
	if line != "" || len(out) == 0 {
		out = append(out, line)
	}
	return out
}
