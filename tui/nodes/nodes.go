// Package nodes is the dashboard's nodes table: the rows derived from a
// model.Cluster (filtered and sorted when the cluster changes, not per
// frame), the cursor and scroll state, and a render function that draws only
// the visible rows so thousands of nodes stay cheap.
//
// It must not do I/O or mutate the cluster; Rebuild reads it, Render reads
// only the rows.
package nodes

import (
	"sort"
	"strings"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord/flatcar"
	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/model"
)

// Row is one node as the table shows it.
type Row struct {
	Name       string
	Role       string
	Phase      model.Phase
	Since      time.Time
	Ready      bool
	ReadyKnown bool
	Cordoned   bool
	// OSDistro is the distribution of the node's image ("Ubuntu",
	// "Flatcar Container Linux"), OSFrom its version, OSTo the version it
	// upgrades to ("" when upgraded; with its distribution when that
	// differs). Sanitised.
	OSDistro string
	OSFrom   string
	OSTo     string
	Upgraded bool
	// RebootReq is kured_reboot_required, when RebootKnown.
	RebootReq, RebootKnown bool
	Lock                   model.LockKind
	label                  string // Name as shown (sanitised)
	lower                  string // label, phase and role, lower case, for the filter
	// StillCordoned: done, but its coordinator left it cordoned.
	StillCordoned bool
	// Wait is what the node waits for first (its first blocker's short
	// form, sanitised), "" when nothing; WaitKind its kind; WaitStalls
	// false for plain queueing; WaitMore how many other blockers it has.
	Wait       string
	WaitKind   model.BlockerKind
	WaitStalls bool
	WaitMore   int
}

// SortMode orders the rows.
type SortMode int

// The sort modes, in the order `s` cycles through them.
const (
	SortCycle SortMode = iota // nodes in a cycle first, then by name
	SortName
	SortPhase
	SortTime // longest in the current phase first
	SortRole
	nSort
)

func (s SortMode) String() string {
	return [...]string{"cycle", "name", "phase", "time in phase", "role"}[s]
}

// Table is the state of the nodes table.
type Table struct {
	all      []Row
	rows     []Row // filtered and sorted
	Cursor   int
	Offset   int
	Sort     SortMode
	Filter   string
	terms    []string            // Filter's words, lower-cased once by SetFilter
	selected string              // name under the cursor, kept across rebuilds
	osSeen   map[osKey][3]string // osLabels by input (Table.osLabels)
	// widths is what the columns' contents need, measured by Rebuild
	// over every row (not the visible ones: scrolling keeps the layout).
	widths widths
	// pinned is true once the operator moved the cursor: it then stays on
	// its node when rows reorder; until then it stays on the first row, the
	// node that most needs eyes.
	pinned bool
}

// cycleRank puts nodes that need eyes first.
func cycleRank(p model.Phase) int {
	switch p {
	case model.PhaseDraining:
		return 0
	case model.PhaseRebooting:
		return 1
	case model.PhaseRecovering:
		return 2
	case model.PhaseDown:
		return 3
	case model.PhasePending:
		return 4
	case model.PhaseUnknown:
		return 5
	case model.PhaseDone:
		return 6
	}
	return 7
}

// Rebuild derives the rows from the cluster at now, given the fleet's
// target OS (the caller has it from Fleet; finding it walks every node).
// Call it when the cluster changed (events, ticks), never from a render.
func (t *Table) Rebuild(c *model.Cluster, target model.OS, now time.Time) {
	names := c.NodeNames()
	if cap(t.all) < len(names) {
		t.all = make([]Row, 0, len(names))
	}
	t.all = t.all[:0]
	holds := map[string]model.LockKind{}
	for _, s := range c.LockStatuses() {
		if n := s.HolderNode(); n != "" && s.Holder != "" {
			holds[n] = s.Kind
		}
	}
	for _, name := range names {
		n, _ := c.Node(name)
		// Names, roles and OS come from the cluster: they enter the
		// table sanitised (Name itself stays exact: it selects the node).
		r := Row{Name: name, label: sanitize.Line(name), Role: sanitize.Line(n.Role()), Phase: c.Phase(name), Cordoned: n.Unschedulable,
			Lock: holds[name], StillCordoned: c.StillCordoned(name)}
		r.RebootReq, r.RebootKnown = c.RebootRequired(name)
		if tr := c.Track(name); tr != nil && !tr.SinceUnknown {
			// A node first seen in its phase with no evidence of when it
			// entered it shows no time rather than a made-up "0s".
			r.Since = tr.Since
		}
		r.Ready, r.ReadyKnown, _ = n.Ready()
		r.Upgraded = c.Upgraded(n, target)
		r.OSDistro, r.OSFrom, r.OSTo = t.osLabels(n, c.TargetFor(n), r.Upgraded)
		if bs := c.NodeBlockers(name); len(bs) > 0 {
			r.Wait, r.WaitKind, r.WaitStalls, r.WaitMore = sanitize.Short(bs[0].Short, maxOS), bs[0].Kind, bs[0].Stalls, len(bs)-1
		}
		r.lower = strings.ToLower(r.label + " " + string(r.Phase) + " " + r.Role)
		t.all = append(t.all, r)
	}
	t.measure(now)
	t.apply(now)
}

// maxOS bounds an OS label: no column is wider.
const maxOS = 120

// osKey is what a node's OS labels depend on.
type osKey struct {
	image, kernel, target, targetKernel, newVersion, rebootNeeded string
	upgraded                                                      bool
}

// osLabels is the package's osLabels, sanitised, remembered per distinct
// input: a fleet runs a handful of images, and a tick rebuilds every row.
func (t *Table) osLabels(n *model.Node, target model.OS, upgraded bool) (distro, from, to string) {
	k := osKey{n.OSImage, n.KernelVersion, target.Image, target.Kernel, n.Annotations[flatcar.AnnNewVersion], n.Annotations[flatcar.AnnRebootNeeded], upgraded}
	if v, ok := t.osSeen[k]; ok {
		return v[0], v[1], v[2]
	}
	if t.osSeen == nil || len(t.osSeen) > 4096 {
		t.osSeen = map[osKey][3]string{}
	}
	distro, from, to = osLabels(n, target, upgraded)
	distro, from, to = sanitize.Short(distro, maxOS), sanitize.Short(from, maxOS), sanitize.Short(to, maxOS)
	t.osSeen[k] = [3]string{distro, from, to}
	return distro, from, to
}

// osLabels returns what the OS column shows: the distribution of the
// node's image, its version and, when it is not upgraded yet, the version
// it upgrades to. Images are compared first; when they are equal the
// kernels tell the difference. The Flatcar update agent's new-version
// annotation (update_engine's NEW_VERSION, written with reboot-needed
// when an update is downloaded) names the target of a node no other node
// runs yet.
func osLabels(n *model.Node, target model.OS, upgraded bool) (distro, from, to string) {
	distro, from = SplitOS(n.OSImage)
	if from == "" {
		from = n.KernelVersion
	}
	if nv := n.Annotations[flatcar.AnnNewVersion]; nv != "" && n.Annotations[flatcar.AnnRebootNeeded] == flatcar.True && nv != from && nv != "0.0.0" {
		return distro, from, nv
	}
	if upgraded {
		return distro, from, ""
	}
	if n.OSImage == target.Image {
		if n.KernelVersion == target.Kernel {
			return distro, from, ""
		}
		return distro, n.KernelVersion, target.Kernel
	}
	td, tv := SplitOS(target.Image)
	switch {
	case tv == "":
		tv = target.Image
	case td != distro:
		tv = target.Image
	}
	return distro, from, tv
}

// SplitOS splits an OS image into its distribution and its version: the
// version is the first word that starts with a digit (or v and a digit;
// parentheses dropped), the distribution the words before it up to a "by"
// ("Flatcar Container Linux by Kinvolk 4152.2.0 (Oklo)" is "Flatcar
// Container Linux" and "4152.2.0"; "Ubuntu 24.04.3 LTS" is "Ubuntu" and
// "24.04.3"; "Talos (v1.7.0)" is "Talos" and "v1.7.0"). An image with no
// version is all distribution.
func SplitOS(image string) (distro, version string) {
	words := strings.Fields(image)
	for i, w := range words {
		v := strings.Trim(w, "()[],")
		d := strings.TrimPrefix(strings.TrimPrefix(v, "v"), "V")
		if d == "" || d[0] < '0' || d[0] > '9' {
			continue
		}
		head := words[:i]
		for j, x := range head {
			if j > 0 && x == "by" {
				head = head[:j]
				break
			}
		}
		return strings.Join(head, " "), v
	}
	return image, ""
}

// SetFilter changes the filter and re-derives the visible rows.
func (t *Table) SetFilter(f string, now time.Time) {
	t.Filter = f
	t.terms = strings.Fields(strings.ToLower(f))
	t.apply(now)
}

// CycleSort moves to the next sort mode.
func (t *Table) CycleSort(now time.Time) {
	t.Sort = (t.Sort + 1) % nSort
	t.apply(now)
}

// Match reports whether a row matches a filter: every space-separated term
// must occur in the node's name, phase or role (case-insensitive).
func Match(r *Row, filter string) bool { return matchTerms(r, strings.Fields(strings.ToLower(filter))) }

// matchTerms is Match with the filter already split and lower-cased: the
// table does that once per filter change, not once per row.
func matchTerms(r *Row, terms []string) bool {
	for _, term := range terms {
		if !strings.Contains(r.lower, term) {
			return false
		}
	}
	return true
}

func (t *Table) apply(now time.Time) {
	if t.pinned && t.selected == "" && t.Cursor < len(t.rows) {
		t.selected = t.rows[t.Cursor].Name
	}
	t.rows = t.rows[:0]
	for i := range t.all {
		if len(t.terms) == 0 || matchTerms(&t.all[i], t.terms) {
			t.rows = append(t.rows, t.all[i])
		}
	}
	rows := t.rows
	var less func(i, j int) bool
	switch t.Sort {
	case SortName:
		less = func(i, j int) bool { return rows[i].Name < rows[j].Name }
	case SortPhase:
		less = func(i, j int) bool {
			a, b := phaseIndex(rows[i].Phase), phaseIndex(rows[j].Phase)
			if a != b {
				return a < b
			}
			return rows[i].Name < rows[j].Name
		}
	case SortTime:
		less = func(i, j int) bool {
			a, b := rows[i].Since, rows[j].Since
			if !a.Equal(b) {
				if a.IsZero() || b.IsZero() {
					return b.IsZero()
				}
				return a.Before(b)
			}
			return rows[i].Name < rows[j].Name
		}
	case SortRole:
		less = func(i, j int) bool {
			if rows[i].Role != rows[j].Role {
				return rows[i].Role < rows[j].Role
			}
			return rows[i].Name < rows[j].Name
		}
	default:
		less = func(i, j int) bool {
			a, b := cycleRank(rows[i].Phase), cycleRank(rows[j].Phase)
			if a != b {
				return a < b
			}
			return rows[i].Name < rows[j].Name
		}
	}
	sort.SliceStable(rows, less)
	// Keep the cursor on the same node when it is still shown.
	t.Cursor = min(t.Cursor, max(len(rows)-1, 0))
	if t.selected != "" {
		for i := range rows {
			if rows[i].Name == t.selected {
				t.Cursor = i
				break
			}
		}
	}
	t.selected = ""
}

func phaseIndex(p model.Phase) int {
	for i, x := range model.AllPhases {
		if x == p {
			return i
		}
	}
	return len(model.AllPhases)
}

// Rows returns the filtered, sorted rows.
func (t *Table) Rows() []Row { return t.rows }

// Total returns the number of nodes before filtering.
func (t *Table) Total() int { return len(t.all) }

// Selected returns the row under the cursor.
func (t *Table) Selected() (Row, bool) {
	if t.Cursor < 0 || t.Cursor >= len(t.rows) {
		return Row{}, false
	}
	return t.rows[t.Cursor], true
}

// Move moves the cursor by d rows (clamped); the cursor then follows its
// node when rows reorder. Back on the first row it follows the top again.
func (t *Table) Move(d int) {
	t.Cursor = max(0, min(t.Cursor+d, len(t.rows)-1))
	t.pinned = t.Cursor > 0
}

// Top jumps to the first row (and follows the top); Bottom to the last.
func (t *Table) Top() { t.Cursor, t.pinned = 0, false }

// Bottom jumps to the last row.
func (t *Table) Bottom() {
	t.Cursor = max(len(t.rows)-1, 0)
	t.pinned = true
}

// Scroll keeps the cursor within the h visible rows; the root calls it
// from Update whenever the cursor or the layout changes.
func (t *Table) Scroll(h int) {
	if h <= 0 {
		return
	}
	if t.Cursor < t.Offset {
		t.Offset = t.Cursor
	}
	if t.Cursor >= t.Offset+h {
		t.Offset = t.Cursor - h + 1
	}
	if t.Offset > len(t.rows)-h {
		t.Offset = max(len(t.rows)-h, 0)
	}
	if t.Offset < 0 {
		t.Offset = 0
	}
}
