// Package fleet is the model of `rebootwatch fleet`: many clusters at once,
// read from one Prometheus-compatible query endpoint (Prometheus, Thanos,
// Mimir, VictoriaMetrics) where each cluster's rebootwatch-agent — or, without
// it, kured and kube-state-metrics — is scraped under a cluster label
// (docs/fleet.md). Query reads the endpoint with a fixed set of at most
// MaxQueries instant queries per refresh; Build turns their answers into one
// Row per cluster, sorted worst first; Render and JSON print them; ExitCode
// maps them to the exit code of --snapshot and watch (DESIGN §7). Demo is
// `fleet --demo`: simulated agents' series, answered as the queries would
// answer them and judged by the same Build.
//
// It must never write: it only sends instant queries (GET or POST to
// /api/v1/query) to the one configured URL, and never contacts a cluster's
// API server. What a row cannot know is said ("unknown", with why), never
// shown as "none": a cluster without the agent has no lock verdict, an
// agent that stopped reporting is stale, never fine, what a failed query
// feeds is unread, and a judgement from the future is clock skew. Only the
// leading agent replica's series count, and series without the cluster
// label are a row per scrape target, never merged. Every label value read
// from Prometheus is hostile and goes through internal/sanitize before it
// reaches a terminal.
package fleet

import (
	"sort"
	"time"
)

// Status is a cluster's state in the fleet view, worst first (Rank).
type Status string

// The statuses, worst first.
const (
	StatusGhost      Status = "ghost"       // a lock is held by a node that no longer exists
	StatusOrphaned   Status = "orphaned"    // a lock is held by a node that finished its reboot
	StatusExpired    Status = "expired"     // a kured lock is past its TTL
	StatusAmbiguous  Status = "ambiguous"   // a holder maps to several nodes
	StatusUnknown    Status = "unknown"     // a lock verdict is unknown, or the agent's data is incomplete
	StatusBlocked    Status = "blocked"     // the fleet is stuck behind a blocker that does not clear by itself
	StatusStale      Status = "stale"       // the agent's last judgement is older than the staleness bound
	StatusNoAgent    Status = "no-agent"    // only kured's / kube-state-metrics' series: locks cannot be judged
	StatusInProgress Status = "in-progress" // nodes pending or in a cycle, or a lock held normally
	StatusDone       Status = "done"        // no node pending or in a cycle, no lock held
)

// AllStatuses lists the statuses worst first.
var AllStatuses = []Status{StatusGhost, StatusOrphaned, StatusExpired, StatusAmbiguous, StatusUnknown,
	StatusBlocked, StatusStale, StatusNoAgent, StatusInProgress, StatusDone}

// Rank is the status's place in AllStatuses (lower is worse).
func (s Status) Rank() int {
	for i, x := range AllStatuses {
		if x == s {
			return i
		}
	}
	return len(AllStatuses)
}

// Sources a row's data comes from.
const (
	SourceAgent = "agent"
	SourceKured = "kured"
	SourceKSM   = "kube-state-metrics"
)

// Lock is one held lock entry of a cluster, as its agent exported it.
type Lock struct {
	Kind       string     `json:"kind"`
	Lock       string     `json:"lock"`
	Holder     string     `json:"holder"`
	HolderNode string     `json:"holderNode"`
	Verdict    string     `json:"verdict"`
	Since      *time.Time `json:"since"`
}

// Row is one cluster.
type Row struct {
	// Cluster is the cluster label's value; "" for series without it,
	// whose rows are told apart by the scrape target they come from (Job,
	// Instance) and marked Unlabelled: two such clusters are never merged.
	Cluster    string `json:"cluster"`
	Job        string `json:"job,omitempty"`
	Instance   string `json:"instance,omitempty"`
	Unlabelled bool   `json:"unlabelled,omitempty"`
	// Context is the kubeconfig context Enter opens (the cluster label's
	// value unless --context-for maps it).
	Context string `json:"context"`
	Status  Status `json:"status"`
	// Sources are where the row's figures come from (agent, kured,
	// kube-state-metrics).
	Sources []string `json:"sources"`
	// Locks are the held entries, worst verdict first; Verdicts counts
	// every lock's verdict (free ones included).
	Locks    []Lock         `json:"locks"`
	Verdicts map[string]int `json:"verdicts"`
	// Phases are the node counts by phase (nil: not known).
	Phases   map[string]int `json:"phases"`
	Nodes    *int           `json:"nodes"`
	Upgraded *int           `json:"upgraded"`
	// Blocker is the kind of blocker that stops the cluster's fleet now
	// ("" none, as far as the agent can tell); BlockedSeconds how long it
	// has been stuck (0: it is not, or it clears by itself).
	Blocker        string  `json:"blocker"`
	BlockedSeconds float64 `json:"blockedSeconds"`
	// RebootRequired is the sum of kured_reboot_required (nil: not
	// exported in this cluster).
	RebootRequired *int `json:"rebootRequired"`
	// Cordoned is kube-state-metrics' count of unschedulable nodes (nil:
	// not exported).
	Cordoned *int `json:"cordoned"`
	// LastJudgement is the agent's last successful judgement; DataAge is
	// how long before the read that was (nil without an agent).
	LastJudgement  *time.Time `json:"lastJudgement"`
	DataAgeSeconds *float64   `json:"dataAgeSeconds"`
	// Unknown says what this row cannot know, and why.
	Unknown []string `json:"unknown"`
	// Unread lists the figures of this row a failed query (or a clock
	// that cannot be trusted) should have given: they are unknown, never
	// "none", and the exit code is 1.
	Unread []string `json:"unread,omitempty"`
}

// Key is the row's identity (its cluster, or its scrape target without
// the cluster label).
func (r Row) Key() Key { return Key{Cluster: r.Cluster, Job: r.Job, Instance: r.Instance} }

// ID is the key as one string (a map key for watch and the dashboard).
func (k Key) ID() string {
	if k.Cluster != "" {
		return k.Cluster
	}
	return "\x00" + k.Job + "\x00" + k.Instance
}

// InCycle is how many nodes are draining, rebooting or recovering.
func (r Row) InCycle() int {
	return r.Phases["draining"] + r.Phases["rebooting"] + r.Phases["recovering"]
}

// Fleet is one read of the endpoint.
type Fleet struct {
	At           time.Time
	ClusterLabel string
	StaleAfter   time.Duration
	Rows         []Row
	// Queries is how many queries the read sent.
	Queries int
	// Err is set when the endpoint could not be read (some or all
	// queries failed): the rows are then incomplete or absent.
	Err error
	// Warnings are what the endpoint said about its answers (a partial
	// response: a store or querier did not answer); the answer may miss
	// series, so the exit code is 1.
	Warnings []string
}

// Sort orders rows worst first, then by cluster name.
func Sort(rows []Row) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if ra, rb := a.Status.Rank(), b.Status.Rank(); ra != rb {
			return ra < rb
		}
		if a.Cluster != b.Cluster {
			return a.Cluster < b.Cluster
		}
		if a.Job != b.Job {
			return a.Job < b.Job
		}
		return a.Instance < b.Instance
	})
}

// Exit codes (DESIGN §7), as internal/cli's.
const (
	ExitOK        = 0
	ExitError     = 1
	ExitAttention = 2
)

// ExitCode is the exit code of `fleet --snapshot` and `fleet watch`: 1 when
// the endpoint could not be read or answered in part (warnings), no cluster
// was found, or a cluster's locks cannot be judged (no agent, a figure
// unread, its data incomplete); else 2 when a cluster needs attention (a
// ghost, orphaned, expired, ambiguous or unknown lock, a blocked fleet, a
// stale agent, a node down); else 0.
func ExitCode(f Fleet) int {
	if f.Err != nil || len(f.Warnings) > 0 || len(f.Rows) == 0 {
		return ExitError
	}
	code := ExitOK
	for _, r := range f.Rows {
		if len(r.Unread) > 0 {
			return ExitError
		}
		switch r.Status {
		case StatusNoAgent:
			return ExitError
		case StatusUnknown:
			if r.Phases == nil {
				return ExitError // the agent's picture is incomplete: unread
			}
			code = ExitAttention
		case StatusGhost, StatusOrphaned, StatusExpired, StatusAmbiguous, StatusBlocked, StatusStale:
			code = ExitAttention
		}
		if r.Phases["down"] > 0 {
			code = ExitAttention
		}
	}
	return code
}
