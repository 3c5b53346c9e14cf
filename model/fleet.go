package model

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
)

// Fleet is the cluster-wide progress of a reboot cycle.
type Fleet struct {
	Nodes    int
	Upgraded int
	// Target is the main target: that of the family with the most nodes.
	Target OS
	// Families is the progress per OS family, most nodes first; set only
	// when the fleet runs several (a Windows node among Linux nodes).
	Families []FamilyProgress
	Phases   map[Phase]int
	// ETA is the estimated time left, nil when it cannot be estimated.
	ETA *time.Duration
}

// FamilyProgress is the progress of the nodes of one OS family.
type FamilyProgress struct {
	Family   string `json:"family"`
	Nodes    int    `json:"nodes"`
	Upgraded int    `json:"upgraded"`
	Target   OS     `json:"target"`
}

// OSFamily names the distribution and variant of an OS image: its words
// without version numbers or parenthesised codenames ("Fedora CoreOS
// 41.20241027.3.0" and "Fedora CoreOS 40.2024…" are both "Fedora CoreOS";
// "Windows Server 2022 Datacenter" is "Windows Server Datacenter"). Versions
// are compared only within a family.
func OSFamily(image string) string {
	var words []string
	depth := 0
	for _, w := range strings.Fields(image) {
		open := strings.HasPrefix(w, "(")
		if open {
			depth++
		}
		if depth == 0 && strings.IndexFunc(w, unicode.IsDigit) < 0 {
			words = append(words, w)
		}
		if strings.HasSuffix(w, ")") && depth > 0 {
			depth--
		}
	}
	return strings.Join(words, " ")
}

// TargetOS returns the OS the fleet upgrades to: the operator's --target-os,
// else the newest image/kernel pair of the OS family with the most nodes.
func (c *Cluster) TargetOS() OS {
	if c.Options.TargetOS != "" {
		return OS{Image: c.Options.TargetOS}
	}
	c.deriveTargets()
	return c.target
}

// TargetFor is the OS a node upgrades to: --target-os, else the newest of
// its own family.
func (c *Cluster) TargetFor(n *Node) OS {
	if c.Options.TargetOS != "" {
		return OS{Image: c.Options.TargetOS}
	}
	c.deriveTargets()
	return c.targets[c.osFamily(n.OSImage)]
}

// osFamily is OSFamily(image), remembered per image until the nodes'
// images change (deriveTargets): a fleet has a handful of images, and
// OSFamily splits and joins the image's words on every call, several times
// per node on each Recompute.
func (c *Cluster) osFamily(image string) string {
	if f, ok := c.familyOf[image]; ok {
		return f
	}
	if c.familyOf == nil {
		c.familyOf = map[string]string{}
	}
	f := OSFamily(image)
	c.familyOf[image] = f
	return f
}

// deriveTargets finds the newest image/kernel pair per OS family and the
// families by size, once per change of the nodes.
func (c *Cluster) deriveTargets() {
	if c.targetOK {
		return
	}
	c.targets = map[string]OS{}
	c.familyOf = nil
	count := map[string]int{}
	for _, name := range c.NodeNames() {
		n := c.nodes[name]
		f := c.osFamily(n.OSImage)
		o := OS{Image: n.OSImage, Kernel: n.KernelVersion}
		if best, ok := c.targets[f]; !ok || o != best && compareOS(o, best) > 0 {
			c.targets[f] = o
		}
		count[f]++
	}
	c.families = c.families[:0]
	for f := range count {
		c.families = append(c.families, f)
	}
	sort.Slice(c.families, func(i, j int) bool {
		a, b := c.families[i], c.families[j]
		if count[a] != count[b] {
			return count[a] > count[b]
		}
		return a < b
	})
	c.target = OS{}
	if len(c.families) > 0 {
		c.target = c.targets[c.families[0]]
	}
	c.targetOK = true
}

// Upgraded reports whether a node runs its target OS: --target-os (a whole
// image, kernel or version in the image), else the newest OS of the node's
// own family. target is the fleet's main target (TargetOS); a node of
// another family is compared with its family's newest, never across.
func (c *Cluster) Upgraded(n *Node, target OS) bool {
	if c.Options.TargetOS != "" {
		t := c.Options.TargetOS
		return n.OSImage == t || n.KernelVersion == t || containsWhole(n.OSImage, t)
	}
	if target == (OS{}) || target.Image != n.OSImage && c.osFamily(target.Image) != c.osFamily(n.OSImage) {
		target = c.TargetFor(n)
	}
	return target != (OS{}) && n.OSImage == target.Image && n.KernelVersion == target.Kernel
}

// containsWhole reports whether sub occurs in s as whole words: "22.04.5"
// is in "Ubuntu 22.04.5 LTS", "4" is not (it is part of a version).
func containsWhole(s, sub string) bool {
	if sub == "" {
		return false
	}
	part := func(r byte) bool {
		return r == '.' || r == '-' || r == '+' || r == '_' || r == ':' || r == '~' ||
			(r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
	}
	for i := 0; i+len(sub) <= len(s); {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(sub)
		if (j == 0 || !part(s[j-1])) && (end == len(s) || !part(s[end])) {
			return true
		}
		i = j + 1
	}
	return false
}

// Fleet derives fleet progress at now.
func (c *Cluster) Fleet(now time.Time) Fleet {
	f := Fleet{Nodes: len(c.nodes), Target: c.TargetOS(), Phases: map[Phase]int{}}
	for _, p := range AllPhases {
		f.Phases[p] = 0
	}
	byFamily := map[string]*FamilyProgress{}
	if c.Options.TargetOS == "" && len(c.families) > 1 {
		for _, fam := range c.families {
			fp := FamilyProgress{Family: fam, Target: c.targets[fam]}
			f.Families = append(f.Families, fp)
		}
		for i := range f.Families {
			byFamily[f.Families[i].Family] = &f.Families[i]
		}
	}
	var inCycle []*Track
	cycles, _ := c.declared()
	for _, name := range c.NodeNames() {
		n := c.nodes[name]
		up := c.Upgraded(n, f.Target)
		if d, ok := cycles[name]; ok {
			// Its coordinator says where it is: done (a SUC node at its
			// plan's latest hash) is upgraded whatever its OS image; a node
			// it has waiting or in its cycle is not, even on the new image.
			up = d.Phase == PhaseDone
		}
		if up {
			f.Upgraded++
		}
		if fp := byFamily[c.osFamily(n.OSImage)]; fp != nil {
			fp.Nodes++
			if up {
				fp.Upgraded++
			}
		}
		t := c.tracks[name]
		p := PhaseUnknown
		if t != nil && t.Phase != "" {
			p = t.Phase
		}
		f.Phases[p]++
		if t != nil && p.InCycle() {
			inCycle = append(inCycle, t)
		}
	}
	f.ETA = eta(c.cycles, f.Phases[PhasePending], inCycle, now)
	return f
}

// eta is the median finished cycle times the nodes still pending, plus what
// is left of the cycles under way. Nil without a finished cycle or work left.
func eta(cycles []time.Duration, pending int, inCycle []*Track, now time.Time) *time.Duration {
	if len(cycles) == 0 || (pending == 0 && len(inCycle) == 0) {
		return nil
	}
	m := Median(cycles)
	left := time.Duration(pending) * m
	for _, t := range inCycle {
		if rest := m - now.Sub(t.CycleStart); rest > 0 {
			left += rest
		}
	}
	return &left
}

// Median is the median of durations (the mean of the middle two for an
// even count); 0 for none.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// compareOS orders OS pairs by image, then kernel, comparing digit runs as numbers.
func compareOS(a, b OS) int {
	if c := naturalCompare(a.Image, b.Image); c != 0 {
		return c
	}
	return naturalCompare(a.Kernel, b.Kernel)
}

// naturalCompare compares strings so that "5.15.0-105" > "5.15.0-99".
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		if isDigit(a[0]) && isDigit(b[0]) {
			na, ra := digitRun(a)
			nb, rb := digitRun(b)
			na, nb = strings.TrimLeft(na, "0"), strings.TrimLeft(nb, "0")
			if len(na) != len(nb) {
				return sign(len(na) - len(nb))
			}
			if na != nb {
				return strings.Compare(na, nb)
			}
			a, b = ra, rb
			continue
		}
		if a[0] != b[0] {
			return sign(int(a[0]) - int(b[0]))
		}
		a, b = a[1:], b[1:]
	}
	return sign(len(a) - len(b))
}

func isDigit(c byte) bool { return c < 128 && unicode.IsDigit(rune(c)) }

func digitRun(s string) (string, string) {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return s[:i], s[i:]
}

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

// Severity ranks attention items and watch lines. Its values are a public
// interface (the snapshot's attention, watch -o json).
type Severity string

// Severities. Attention items are critical or warning; info is for what
// needs no one (most watch lines).
const (
	SeverityCritical Severity = "critical"
	SeverityWarning  Severity = "warning"
	SeverityInfo     Severity = "info"
)

// Attention is one thing an operator should look at.
type Attention struct {
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	// Key names what the item is about ("lock kured:kube-system/kured#n1
	// ghost", "node n1 down", "source nodes error"): it stays the same while
	// the item lasts, where Message carries ages that change every second.
	// Not part of the snapshot JSON.
	Key string `json:"-"`
}

// VolumeSummary counts Longhorn volumes by robustness.
type VolumeSummary struct {
	Total      int      `json:"total"`
	Healthy    int      `json:"healthy"`
	Degraded   int      `json:"degraded"`
	Faulted    int      `json:"faulted"`
	Unknown    int      `json:"unknown"`
	NotHealthy []string `json:"notHealthy"`
}

// VolumeSummary summarises the Longhorn volumes; nil when Longhorn is absent.
func (c *Cluster) VolumeSummary() *VolumeSummary {
	if !c.LonghornPresent() {
		return nil
	}
	s := &VolumeSummary{NotHealthy: []string{}}
	for _, k := range c.volumeKeys() {
		v := c.volumes[k]
		s.Total++
		switch v.Robustness {
		case RobustnessHealthy:
			s.Healthy++
			continue
		case RobustnessDegraded:
			s.Degraded++
		case RobustnessFaulted:
			s.Faulted++
		default:
			s.Unknown++
		}
		s.NotHealthy = append(s.NotHealthy, k)
	}
	return s
}

// Attention lists what needs an operator, critical first.
func (c *Cluster) Attention(now time.Time) []Attention {
	var unread, crit, warn []Attention // what could not be read comes first
	warned := map[LockRef]bool{}
	for _, s := range c.statuses {
		if s.Warning != "" && !warned[s.LockRef] {
			warned[s.LockRef] = true
			warn = append(warn, Attention{SeverityWarning, fmt.Sprintf("%s lock %s/%s: %s", s.Kind, s.Namespace, s.Name, s.Warning), "lock " + s.LockRef.String() + " warning"})
		}
		switch {
		case s.Verdict.NeedsAttention():
			crit = append(crit, Attention{SeverityCritical, fmt.Sprintf("%s lock %s/%s held by %s is %s: %s", s.Kind, s.Namespace, s.Name, holderLabel(s), s.Verdict, s.Reason), entryKey(s)})
		case s.Verdict == VerdictUnknown:
			warn = append(warn, Attention{SeverityWarning, fmt.Sprintf("%s lock %s/%s cannot be judged: %s", s.Kind, s.Namespace, s.Name, s.Reason), entryKey(s)})
		}
	}
	for _, g := range c.Slots() {
		if g.Over() && g.Warning == "" { // a Warning already says it (kured's over maxOwners)
			var hs []string
			for _, h := range g.Holders {
				hs = append(hs, holderName(h))
			}
			crit = append(crit, Attention{SeverityCritical, fmt.Sprintf("%s: %d nodes hold its slots, more than its capacity of %d (%s): the coordinator's own limit is broken", g.Name(), len(g.Holders), g.Capacity, strings.Join(hs, ", ")), "slots " + g.Name() + " over capacity"})
		}
	}
	for _, name := range c.NodeNames() {
		if t := c.tracks[name]; t != nil && t.Phase == PhaseDown {
			crit = append(crit, Attention{SeverityCritical, fmt.Sprintf("node %s is NotReady outside a reboot cycle (down for %s)", name, HumanDuration(now.Sub(t.Since))), "node " + name + " down"})
		}
		if c.StillCordoned(name) {
			by := "its coordinator"
			if t := c.tracks[name]; t.LockKind != "" {
				by = string(t.LockKind)
			}
			warn = append(warn, Attention{SeverityWarning, fmt.Sprintf("node %s is done · still cordoned: it rebooted and holds no lock, but %s did not uncordon it — uncordon it", name, by), "node " + name + " still cordoned"})
		}
	}
	for _, b := range c.blockers.all() {
		if b.Attention != "" {
			a := Attention{b.Attention, b.Reason, "blocker " + string(b.Kind) + " " + b.Node}
			if b.Attention == SeverityCritical {
				crit = append(crit, a)
			} else {
				warn = append(warn, a)
			}
		}
	}
	if vs := c.VolumeSummary(); vs != nil {
		if vs.Faulted > 0 {
			crit = append(crit, Attention{SeverityCritical, fmt.Sprintf("%d Longhorn volume(s) faulted", vs.Faulted), "volumes faulted"})
		}
		if vs.Degraded > 0 {
			warn = append(warn, Attention{SeverityWarning, fmt.Sprintf("%d Longhorn volume(s) degraded: releasing a lock now lets the next node drain", vs.Degraded), "volumes degraded"})
		}
	}
	for _, h := range c.Sources() {
		switch h.Status {
		case StatusError, StatusForbidden, StatusStale:
			msg := fmt.Sprintf("source %s is %s", h.Name, h.Status)
			key := "source " + string(h.Name) + " " + string(h.Status)
			if h.Message != "" {
				msg += ": " + h.Message
			}
			if h.Status != StatusStale && c.isVerdictSource(h.Name) {
				// Without it a lock (or a node) may be there unseen: not a
				// warning beside a clean bill, the cluster was not read.
				unread = append(unread, Attention{SeverityCritical, "could not read: " + msg, key})
				continue
			}
			warn = append(warn, Attention{SeverityWarning, msg, key})
		}
	}
	if c.AwaitSync && !c.synced {
		warn = append(warn, Attention{SeverityWarning, "connecting: not every source has delivered its first picture yet", "connecting"})
	}
	return append(append(unread, crit...), warn...)
}

// entryKey is the attention key of a lock entry in its verdict: the entry
// turning from orphaned to ghost is a new item.
func entryKey(s LockStatus) string {
	return "lock " + s.LockRef.String() + "#" + s.Holder + " " + string(s.Verdict)
}

// isVerdictSource says whether the lock verdicts need the source: the node
// list and the lock kinds' sources (LockSources).
func (c *Cluster) isVerdictSource(n SourceName) bool {
	return n == SourceNodes || slices.Contains(c.LockSources, n)
}

// Unread lists what the verdicts need and was not read: the node list
// (never delivered), or a lock source that failed or is forbidden. Non-empty
// means "could not read the cluster" (exit 1): a lock there may exist unseen.
func (c *Cluster) Unread() []string {
	var out []string
	if !c.Readable() {
		out = append(out, c.nodesWhy())
	}
	for _, n := range c.LockSources {
		if h, ok := c.sources[n]; ok && (h.Status == StatusError || h.Status == StatusForbidden) {
			out = append(out, fmt.Sprintf("%s %s: %s", n, h.Status, h.Message))
		}
	}
	if why, unread := c.CoordinatorsUnread(); unread {
		out = append(out, why)
	}
	return out
}

// CoordinatorsUnread says which coordinator kinds read beside the locks
// failed or are forbidden, if any: their wedges are unknown, not absent.
func (c *Cluster) CoordinatorsUnread() (string, bool) {
	var why []string
	for _, n := range c.CoordinatorSources {
		if h, ok := c.sources[n]; ok && (h.Status == StatusError || h.Status == StatusForbidden) {
			why = append(why, fmt.Sprintf("%s %s%s", n, h.Status, Aside(h.Message)))
		}
	}
	return strings.Join(why, ", "), len(why) > 0
}

// nodesWhy says why the node list is not there.
func (c *Cluster) nodesWhy() string {
	if h, ok := c.sources[SourceNodes]; ok && h.Message != "" {
		return fmt.Sprintf("nodes %s: %s", h.Status, h.Message)
	}
	return "no node list was received"
}

// sourceUnread says why a source's objects cannot be taken as all there
// is: it has not reported yet, or it failed, is forbidden or is stale.
// Not installed and disabled are answers, not gaps.
func (c *Cluster) sourceUnread(n SourceName) (string, bool) {
	h, ok := c.sources[n]
	switch {
	case !ok:
		return string(n) + " not read yet", true
	case h.Status == StatusError, h.Status == StatusForbidden, h.Status == StatusStale:
		why := string(n) + " " + string(h.Status)
		if h.Message != "" {
			why += " (" + h.Message + ")"
		}
		return why, true
	}
	return "", false
}

// LocksUnread says why the lock list may be incomplete, if so: a lock
// source (kured's DaemonSets, fleetlock's Leases) has not reported yet,
// failed, is forbidden or is stale ("kured forbidden (cannot list
// daemonsets.apps (RBAC)), fleetlock …"). Then "no lock" and "every lock
// is free" are unknown, not true.
func (c *Cluster) LocksUnread() (string, bool) {
	var why []string
	for _, n := range c.LockSources {
		if w, unread := c.sourceUnread(n); unread {
			why = append(why, w)
		}
	}
	return strings.Join(why, ", "), len(why) > 0
}

// LockSourceUnread is LocksUnread for one lock kind's source: why a lock
// of that kind may be there unseen.
func (c *Cluster) LockSourceUnread(kind LockKind) (string, bool) {
	return c.sourceUnread(SourceName(kind))
}

// RebootRequiredUnknown lists the nodes, outside a reboot cycle, whose
// need for a reboot cannot be told while it matters: kured runs here (a
// kured lock object was read) or whether it does is unknown (its source
// not read), and the node has no kured_reboot_required value. Without
// kured it is nil: fleetlock's Zincati decides on the node and publishes
// no such signal.
func (c *Cluster) RebootRequiredUnknown() []string {
	kured := false
	for ref := range c.locks {
		if ref.Kind == LockKured {
			kured = true
			break
		}
	}
	if h, ok := c.sources[SourceKured]; !ok || h.Status == StatusError || h.Status == StatusForbidden {
		kured = true
	}
	if !kured {
		return nil
	}
	var out []string
	for _, name := range c.NodeNames() {
		if _, known := c.reboot[name]; known {
			continue
		}
		if p := c.Phase(name); !p.InCycle() && p != PhasePending {
			out = append(out, name)
		}
	}
	return out
}

// UnreadPart is a part of the snapshot that was not read, so what it
// shows (an empty list above all) is no claim: Field is the part's name
// in the snapshot JSON ("nodes", "locks", "volumes", "fleet.blockers"),
// Reason why it was not read.
type UnreadPart struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// UnreadParts lists the parts of the picture that were not read: the
// node list, the locks (LocksUnread), the volumes (LonghornUnread), and
// the fleet's blockers, which need the nodes and the locks (a lock
// unseen is a blocker unseen). Empty when everything was read.
func (c *Cluster) UnreadParts() []UnreadPart {
	out := []UnreadPart{}
	var blockers []string
	if !c.Readable() {
		why := c.nodesWhy()
		out = append(out, UnreadPart{"nodes", why})
		blockers = append(blockers, why)
	}
	if why, unread := c.LocksUnread(); unread {
		out = append(out, UnreadPart{"locks", "locks unknown: " + why})
		blockers = append(blockers, "locks unknown: "+why)
	}
	if why, unread := c.LonghornUnread(); unread {
		out = append(out, UnreadPart{"volumes", "volumes unknown: " + why})
	}
	if why, unread := c.CoordinatorsUnread(); unread {
		out = append(out, UnreadPart{"coordinators", "coordinators unknown: " + why})
		blockers = append(blockers, "coordinators unknown: "+why)
	}
	if len(blockers) > 0 {
		out = append(out, UnreadPart{"fleet.blockers", "cannot tell what blocks the fleet: " + strings.Join(blockers, "; ")})
	}
	return out
}

// UnreadReason returns the reason of the unread part named field, if it is.
func UnreadReason(parts []UnreadPart, field string) (string, bool) {
	for _, p := range parts {
		if p.Field == field {
			return p.Reason, true
		}
	}
	return "", false
}

// Readable reports whether the cluster could be read at all: the node
// source has delivered a complete list at least once.
func (c *Cluster) Readable() bool {
	h, ok := c.sources[SourceNodes]
	if !ok {
		return len(c.nodes) > 0
	}
	return h.Status == StatusOK || h.Status == StatusStale || !h.LastSync.IsZero()
}

// ExitCode is the exit code of --snapshot and watch (DESIGN §7): 1 when
// what the verdicts need could not be read (the node list, or a lock source
// that failed or is forbidden: see Unread), 2 when anything is listed under
// attention (critical or warning), 0 only when nothing is.
func (c *Cluster) ExitCode(now time.Time) int {
	return c.exitCode(c.Attention(now))
}

func (c *Cluster) exitCode(att []Attention) int {
	if len(c.Unread()) > 0 {
		return 1
	}
	if len(att) > 0 {
		return 2
	}
	return 0
}

// Ago says how long before now t was, "3h4m ago"; "on 0001-01-01
// 01:00:01 UTC" when that is longer than a Duration holds (now.Sub
// saturates at 106751d23h, a figure that would be false).
func Ago(now, t time.Time) string {
	if d := now.Sub(t); d != math.MaxInt64 {
		return HumanDuration(d) + " ago"
	}
	return "on " + t.UTC().Format("2006-01-02 15:04:05 MST")
}

// HumanDuration renders a duration the way an operator reads it: 45s, 12m, 3h4m, 2d3h.
func HumanDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		m := int(d / time.Minute)
		s := int((d % time.Minute) / time.Second)
		if s == 0 || m >= 10 {
			return fmt.Sprintf("%dm", m)
		}
		return fmt.Sprintf("%dm%ds", m, s)
	case d < 48*time.Hour:
		h := int(d / time.Hour)
		m := int((d % time.Hour) / time.Minute)
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%dm", h, m)
	}
	days := int(d / (24 * time.Hour))
	h := int((d % (24 * time.Hour)) / time.Hour)
	if h == 0 {
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dd%dh", days, h)
}

// FirstFew joins up to most items with ", ", then says how many more there
// are: "a, b, c and 4 more". Every line that names a list of nodes, pods or
// holders is bounded by it.
func FirstFew(xs []string, most int) string {
	if len(xs) <= most {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:most], ", ") + fmt.Sprintf(" and %d more", len(xs)-most)
}

// Aside is m in parentheses after a space, or nothing when m is empty: the
// detail a message may add to a status ("Error (connection refused)").
func Aside(m string) string {
	if m == "" {
		return ""
	}
	return " (" + m + ")"
}
