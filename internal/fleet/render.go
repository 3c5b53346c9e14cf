package fleet

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/sanitize"
)

// Schema names the JSON document of `fleet --snapshot -o json`.
const Schema = "rebootwatch.fleet/v1"

// Cell widths of hostile values in the text table.
const (
	clusterWidth = 28
	nodeWidth    = 24
)

// LockCell is the lock column: the worst held entry, its verdict and age;
// "free" only when the agent judged every lock free; "unknown (why)"
// when it cannot be told.
func LockCell(r Row, now time.Time) string {
	switch {
	case r.Status == StatusNoAgent:
		return "unknown (no agent)"
	case failed(r.Unread, QLocks) || failed(r.Unread, QStopped):
		return "unknown (query failed)"
	case r.Status == StatusStale:
		// The last lock state the agent exported, marked stale.
		if r.Verdicts == nil {
			return "unknown (stale)"
		}
		return lockCell(r, now) + " (stale)"
	case r.Phases == nil:
		return "unknown"
	}
	return lockCell(r, now)
}

func lockCell(r Row, now time.Time) string {
	if len(r.Locks) == 0 {
		if len(r.Verdicts) == 0 {
			return "no lock object"
		}
		if r.Verdicts["unknown"] > 0 {
			return "unknown"
		}
		return "free"
	}
	l := r.Locks[0]
	who := sanitize.ID(l.Holder)
	if l.HolderNode != "" && l.HolderNode != l.Holder {
		who = sanitize.Short(l.HolderNode, nodeWidth) + " (" + sanitize.ID(l.Holder) + ")"
	} else if l.HolderNode != "" {
		who = sanitize.Short(l.HolderNode, nodeWidth)
	}
	s := who + " " + l.Verdict
	if l.Since != nil {
		s += " " + humanSeconds(now.Sub(*l.Since).Seconds())
	}
	if n := len(r.Locks) - 1; n > 0 {
		s += fmt.Sprintf(" +%d", n)
	}
	return s
}

// NodesCell is the progress column: upgraded/total, in cycle, pending,
// down; kube-state-metrics' node and cordoned counts without the agent.
func NodesCell(r Row) string {
	if r.Status == StatusStale {
		return "–"
	}
	if r.Phases == nil {
		var parts []string
		if r.Nodes != nil {
			parts = append(parts, fmt.Sprintf("%d nodes", *r.Nodes))
		}
		if r.Cordoned != nil {
			parts = append(parts, fmt.Sprintf("%d cordoned", *r.Cordoned))
		}
		if len(parts) == 0 {
			return "unknown"
		}
		return strings.Join(parts, " · ")
	}
	total := *r.NodeCount()
	s := fmt.Sprintf("%d nodes", total)
	if r.Upgraded != nil {
		s = fmt.Sprintf("%d/%d upgraded", *r.Upgraded, total)
	}
	if n := r.InCycle(); n > 0 {
		s += fmt.Sprintf(" · %d in cycle", n)
	}
	if n := r.Phases["pending"]; n > 0 {
		s += fmt.Sprintf(" · %d pending", n)
	}
	if n := r.Phases["down"]; n > 0 {
		s += fmt.Sprintf(" · %d down", n)
	}
	return s
}

// BlockerCell is the worst blocker: its kind and, when stuck, for how long.
func BlockerCell(r Row) string {
	switch {
	case r.Status == StatusNoAgent || r.Status == StatusStale || r.Phases == nil:
		return "unknown"
	case r.Blocker == "":
		return "–"
	case r.BlockedSeconds > 0:
		return sanitize.Short(r.Blocker, 30) + " " + humanSeconds(r.BlockedSeconds)
	}
	return sanitize.Short(r.Blocker, 30)
}

func intCell(p *int) string {
	if p == nil {
		return "unknown"
	}
	return fmt.Sprint(*p)
}

// AgeCell is the data's age: how long ago the agent last judged ("skew"
// when that is in the future beyond SkewTolerance).
func AgeCell(r Row) string {
	if r.DataAgeSeconds == nil {
		return "–"
	}
	if -*r.DataAgeSeconds > SkewTolerance.Seconds() {
		return "skew"
	}
	return humanSeconds(max(*r.DataAgeSeconds, 0))
}

// ClusterCell is the cluster's name for a terminal; a row without the
// cluster label is marked and named by its scrape target.
func ClusterCell(r Row) string {
	if r.Unlabelled || r.Cluster == "" {
		return sanitize.Short("(no label) "+r.Instance+" "+r.Job, clusterWidth)
	}
	return sanitize.Short(r.Cluster, clusterWidth)
}

// Render writes the text report: a summary line, one row per cluster
// worst first, then what each row cannot know.
func Render(w io.Writer, f Fleet, endpoint string) {
	counts := map[Status]int{}
	for _, r := range f.Rows {
		counts[r.Status]++
	}
	var summary []string
	for _, s := range AllStatuses {
		if counts[s] > 0 {
			summary = append(summary, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	fmt.Fprintf(w, "fleet: %d clusters by label %q from %s at %s", len(f.Rows), f.ClusterLabel, sanitize.MaskURL(endpoint),
		f.At.UTC().Format("2006-01-02 15:04:05 MST"))
	if len(summary) > 0 {
		fmt.Fprintf(w, " · %s", strings.Join(summary, ", "))
	}
	fmt.Fprintln(w)
	if f.Err != nil {
		fmt.Fprintf(w, "error: %s\n", ErrorText(f.Err))
	}
	if len(f.Warnings) > 0 {
		fmt.Fprintln(w, "partial answer: the endpoint warned that its answer may miss series (exit 1):")
		for _, x := range f.Warnings {
			fmt.Fprintf(w, "  warning: %s\n", sanitize.Short(x, 300))
		}
	}
	if len(f.Rows) == 0 {
		if f.Err == nil && len(f.Warnings) == 0 {
			fmt.Fprintf(w, "no cluster found: no series of rebootwatch-agent, kured or kube-state-metrics carry the label %q\n", f.ClusterLabel)
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tSTATUS\tLOCK\tNODES\tBLOCKER\tREBOOT-REQ\tDATA AGE\tSOURCE")
	for _, r := range f.Rows {
		src := strings.Join(r.Sources, "+")
		if src == "" {
			src = "–"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", ClusterCell(r), r.Status, LockCell(r, f.At), NodesCell(r),
			BlockerCell(r), intCell(r.RebootRequired), AgeCell(r), src)
	}
	tw.Flush()
	var notes []string
	for _, r := range f.Rows {
		for _, u := range r.Unknown {
			notes = append(notes, fmt.Sprintf("  %s: %s", ClusterCell(r), sanitize.Line(u)))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "cannot be known:")
		fmt.Fprintln(w, strings.Join(notes, "\n"))
	}
}

// Document is the JSON of `fleet --snapshot -o json`.
type Document struct {
	Schema       string         `json:"schema"`
	GeneratedAt  time.Time      `json:"generatedAt"`
	Endpoint     string         `json:"endpoint"`
	ClusterLabel string         `json:"clusterLabel"`
	StaleAfter   string         `json:"staleAfter"`
	Queries      int            `json:"queries"`
	Error        *string        `json:"error"`
	Warnings     []string       `json:"warnings"`
	Clusters     []Row          `json:"clusters"`
	Counts       map[Status]int `json:"counts"`
	ExitCode     int            `json:"exitCode"`
}

// JSON is the document of one read (JSON escapes hostile bytes itself;
// values are exact).
func JSON(f Fleet, endpoint string) ([]byte, error) {
	d := Document{Schema: Schema, GeneratedAt: f.At.UTC(), Endpoint: sanitize.MaskURL(endpoint), ClusterLabel: f.ClusterLabel,
		StaleAfter: f.StaleAfter.String(), Queries: f.Queries, Clusters: f.Rows, Counts: map[Status]int{}, ExitCode: ExitCode(f)}
	if d.Clusters == nil {
		d.Clusters = []Row{}
	}
	d.Warnings = append([]string{}, f.Warnings...)
	for _, r := range f.Rows {
		d.Counts[r.Status]++
	}
	if f.Err != nil {
		s := f.Err.Error()
		d.Error = &s
	}
	return json.MarshalIndent(d, "", "  ")
}
