package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rebootwatch/rebootwatch/internal/fleet"
	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/sources/sim"
	"github.com/rebootwatch/rebootwatch/tui/fleetview"
)

// fleetFlags are the fleet command's own flags (shared by fleet watch).
type fleetFlags struct {
	snapshot     bool
	clusterLabel string
	contextFor   []string
	staleAfter   time.Duration
	username     string
	passwordFile string
	orgID        string
	interval     time.Duration
	untilDone    bool
	// at, when set, evaluates --snapshot's queries at that time instead of
	// now (hidden: the scale benchmark reads its fixture's moment).
	at string
}

const fleetLong = `Many clusters at once, read from one Prometheus-compatible query endpoint
(Prometheus, Thanos, Mimir, VictoriaMetrics) where every cluster's
rebootwatch-agent is scraped under a cluster label (--cluster-label). One row per
cluster, worst first: ghost, orphaned, expired, ambiguous, unknown, blocked,
stale, no-agent, in progress, done. A cluster without the agent falls back to
kured_reboot_required and kube-state-metrics (kube_node_spec_unschedulable,
kube_lease_owner); the row says what cannot be known without the agent. An
agent whose last judgement is older than --stale-after is stale, never fine.

Without --snapshot it is the fleet dashboard: / filters, d shows one
cluster's nodes and blockers from the metrics, enter opens that cluster's live
dashboard (rebootwatch --context CONTEXT, only a kubeconfig context named
for the row exactly: --context-for, or the label's own value), r reads again,
q quits.

--demo plays a fleet with no endpoint and no cluster: one simulated cluster
per demo scenario (fleetlock's ghost first, kured, suc, flatcar) and a done
one, whose agents' series go through the same judgement; flatcar's agent turns
stale a demo minute in (--speed, --demo-at move the demo clock). Enter on a row
opens that scenario's single-cluster demo (rebootwatch --demo=SCENARIO).
--demo and --prometheus-url together are a usage error.

The fleet view only reads (at most 6 instant queries per refresh) and never
contacts a cluster's API server; the actions stay in each cluster's own
dashboard (rebootwatch --context CONTEXT), behind its gates.

Exit codes of --snapshot and watch: 0 every cluster is fine, 1 the endpoint
could not be read or answered in part (a failed query, warnings), no cluster
was found, a cluster's locks cannot be read (no agent) or its figures cannot
be trusted (clock skew), 2 a cluster needs attention (a ghost, orphaned, expired, ambiguous or
unknown lock, a blocked fleet, a stale agent, a node down), 130 interrupted.`

const fleetExample = `  # Try it without Prometheus: simulated clusters, one per demo scenario
  rebootwatch fleet --demo

  # One row per cluster, from the central Prometheus
  rebootwatch fleet --snapshot --prometheus-url http://prometheus.monitoring:9090

  # Mimir, with a tenant and basic auth, as JSON
  rebootwatch fleet --snapshot -o json --prometheus-url https://mimir.example/prometheus \
    --prometheus-org-id ops --prometheus-username ops --prometheus-password-file ~/.mimir-pw

  # A log line per cluster whose state changes, until every cluster is done
  rebootwatch fleet watch --until-done --prometheus-url http://prometheus:9090`

// newFleet is `rebootwatch fleet` (DESIGN §9; docs/fleet.md).
func (r *runner) newFleet() *cobra.Command {
	ff := fleetFlags{clusterLabel: fleet.DefaultClusterLabel, staleAfter: fleet.DefaultStaleAfter, interval: 30 * time.Second}
	cmd := &cobra.Command{
		Use:     "fleet (--prometheus-url URL | --demo) [--snapshot [-o text|json] | watch] [--cluster-label cluster] [--context-for LABEL=CONTEXT]",
		Short:   "Many clusters at once, from their agents' metrics in Prometheus, Thanos, Mimir or VictoriaMetrics (read-only)",
		Long:    fleetLong,
		Example: fleetExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !ff.snapshot && (!r.env.StdoutTTY || !r.env.StdinTTY) {
				return failed(r.env, errors.New("the fleet dashboard needs a terminal: use fleet --snapshot or fleet watch for scripts and pipes"))
			}
			if !ff.snapshot && cmd.Flags().Changed("output") {
				return failed(r.env, fmt.Errorf("-o %s: the fleet dashboard has no output format; -o is for fleet --snapshot and fleet watch", r.c.Output))
			}
			rd, env, demo, err := r.fleetSource(cmd, ff)
			if err != nil {
				return err
			}
			if ff.snapshot {
				if ff.at != "" {
					at, err := time.Parse(time.RFC3339, ff.at)
					if err != nil {
						return failed(r.env, fmt.Errorf("--at %q: want RFC 3339 (2026-12-01T03:00:00Z)", sanitize.Short(ff.at, 80)))
					}
					env.Now = func() time.Time { return at }
				}
				r.code = runFleetSnapshot(cmd.Context(), env, r.c, rd)
			} else {
				r.code = runFleetDashboard(cmd.Context(), env, r.c, rd, ff, demo)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&ff.at, "at", "", "Evaluate --snapshot at this RFC 3339 time instead of now")
	_ = cmd.Flags().MarkHidden("at")
	pf := cmd.PersistentFlags()
	cmd.Flags().BoolVar(&ff.snapshot, "snapshot", false, "Print one report of every cluster and exit (exit 0 ok, 1 unreadable, 2 needs attention)")
	pf.StringVar(&ff.clusterLabel, "cluster-label", ff.clusterLabel, "The label that names each cluster in the endpoint's series (the per-cluster Prometheus's external label)")
	pf.StringArrayVar(&ff.contextFor, "context-for", nil, "Map a cluster label value to a kubeconfig context: LABEL=CONTEXT (repeatable; default: the context of the same name)")
	pf.DurationVar(&ff.interval, "interval", ff.interval, "How often the dashboard and watch read the endpoint")
	pf.DurationVar(&ff.staleAfter, "stale-after", ff.staleAfter, "An agent whose last judgement is older than this is stale")
	pf.StringVar(&ff.username, "prometheus-username", "", "HTTP basic auth user for the endpoint (with --prometheus-password-file)")
	pf.StringVar(&ff.passwordFile, "prometheus-password-file", "", "File holding the HTTP basic auth password")
	pf.StringVar(&ff.orgID, "prometheus-org-id", "", "Tenant sent as X-Scope-OrgID (Mimir, Cortex)")
	w := &cobra.Command{
		Use:   "watch [-o text|json] [--interval 30s] [--until-done]",
		Short: "One line per cluster whose state changes, read from the endpoint every --interval",
		Long: `Reads the endpoint every --interval and prints one line per cluster whose
status changes (the first read prints every cluster). -o json prints one JSON
object per line. Exit codes: 0 every cluster done (--until-done), 1 the endpoint
could not be read at the first read, 130 interrupted (Ctrl-C, SIGTERM).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ff.interval < time.Second {
				return failed(r.env, errors.New("--interval must be at least 1s"))
			}
			rd, env, _, err := r.fleetSource(cmd, ff)
			if err != nil {
				return err
			}
			r.code = runFleetWatch(cmd.Context(), env, r.c, rd, ff)
			return nil
		},
	}
	w.Flags().BoolVar(&ff.untilDone, "until-done", false, "Exit 0 once every cluster is done")
	cmd.AddCommand(w)
	return cmd
}

// fleetSource is what the fleet's modes read: the endpoint (fleet.Reader)
// or the demo's simulated agents (fleet.Demo).
type fleetSource interface {
	Read(ctx context.Context, now time.Time) fleet.Fleet
	Detail(ctx context.Context, k fleet.Key, now time.Time) ([]fleet.DetailNode, error)
	Options() fleet.Options
}

// fleetSource checks the flags and makes what the fleet reads: with
// --demo, the demo fleet on the demo's clock (--speed, --demo-at), else the
// endpoint's reader on the wall clock. A usage error is returned as is
// (cobra's usage line); others are reported.
func (r *runner) fleetSource(cmd *cobra.Command, ff fleetFlags) (fleetSource, Env, *fleet.Demo, error) {
	env := r.env
	if !r.c.Demo {
		rd, err := r.fleetReader(ff)
		if err != nil {
			return nil, env, nil, failed(r.env, err)
		}
		return rd, env, nil, nil
	}
	if r.c.PrometheusURL != "" {
		return nil, env, nil, errors.New("--demo and --prometheus-url: the fleet demo reads simulated agents, not an endpoint; give one of them")
	}
	if r.c.DemoScenario != sim.ScenarioFleetlock {
		return nil, env, nil, fmt.Errorf("--demo=%s: the fleet demo plays every scenario at once (fleet --demo); --demo=%s is the single-cluster dashboard's (rebootwatch --demo=%s)",
			r.c.DemoScenario, r.c.DemoScenario, r.c.DemoScenario)
	}
	if len(ff.contextFor) > 0 {
		return nil, env, nil, errors.New("--demo and --context-for: each demo cluster opens its own demo scenario, not a kubeconfig context")
	}
	if ff.staleAfter <= 0 {
		return nil, env, nil, failed(r.env, errors.New("--stale-after must be positive"))
	}
	start := env.Now().Truncate(time.Second)
	clock := sim.Clock{Start: start, Offset: r.c.DemoAt, Speed: r.c.DemoSpeed, Wall: env.Now(), WallNow: env.Now}
	env.Now = clock.Now
	d := fleet.NewDemo(start, sim.ScenarioNames(), ff.staleAfter)
	return d, env, d, nil
}

// fleetReader checks the flags and makes the endpoint's reader.
func (r *runner) fleetReader(ff fleetFlags) (*fleet.Reader, error) {
	if ff.staleAfter <= 0 {
		return nil, errors.New("--stale-after must be positive")
	}
	m := map[string]string{}
	for _, kv := range ff.contextFor {
		label, ctx, ok := strings.Cut(kv, "=")
		if !ok || label == "" || ctx == "" {
			return nil, fmt.Errorf("--context-for %q: want LABEL=CONTEXT", sanitize.Short(kv, 200))
		}
		m[label] = ctx
	}
	return fleet.NewReader(fleet.Options{
		URL: r.c.PrometheusURL, BearerTokenFile: r.c.PrometheusToken, InsecureSkipVerify: r.c.PrometheusInsecure,
		Username: ff.username, PasswordFile: ff.passwordFile, OrgID: ff.orgID,
		ClusterLabel: ff.clusterLabel, ContextFor: m, StaleAfter: ff.staleAfter, Timeout: r.c.RequestTimeout,
	})
}

// runFleetDashboard runs the fleet dashboard (tui/fleetview); enter opens
// a cluster's live dashboard by running this same binary with --context.
// With the demo (demo non-nil), enter opens the row's single-cluster demo
// (rebootwatch --demo=SCENARIO), never a kubeconfig context.
func runFleetDashboard(ctx context.Context, env Env, c *Common, rd fleetSource, ff fleetFlags, demo *fleet.Demo) int {
	if ff.interval < time.Second {
		return fail(env, errors.New("--interval must be at least 1s"))
	}
	self, err := os.Executable()
	if err != nil {
		return fail(env, fmt.Errorf("cannot find this program to open a cluster's dashboard: %w", err))
	}
	open := func(kubeContext string) *exec.Cmd {
		args := []string{"--context", kubeContext}
		if c.Kubeconfig != "" {
			args = append(args, "--kubeconfig", c.Kubeconfig)
		}
		if c.ReadOnly {
			args = append(args, "--read-only")
		}
		return exec.Command(self, args...)
	}
	noContext := ""
	var contexts []string
	if demo != nil {
		// A demo row opens its own scenario's demo cluster: the
		// "contexts" are the scenarios, and no kubeconfig is read.
		open = func(scenario string) *exec.Cmd {
			return exec.Command(self, "--demo="+demo.Scenario(scenario), "--speed", strconv.FormatFloat(c.DemoSpeed, 'g', -1, 64))
		}
		contexts = sim.ScenarioNames()
		noContext = "this demo cluster plays no single-cluster scenario (its reboots are done)"
	} else {
		// A row opens only a context of exactly its name: the names are
		// read once, here, outside the view's Update.
		contexts, err = kubeContextNames(c.Kubeconfig)
		if err != nil {
			return fail(env, fmt.Errorf("reading the kubeconfig's contexts (enter opens a cluster's dashboard through them): %w", err))
		}
	}
	m := fleetview.New(fleetview.Options{Context: ctx, Interval: ff.interval, Endpoint: rd.Options().URL, Open: open, Contexts: contexts, NoContext: noContext,
		Read: func(ctx context.Context) fleet.Fleet { return rd.Read(ctx, env.Now()) },
		Detail: func(ctx context.Context, row fleet.Key) ([]fleet.DetailNode, error) {
			return rd.Detail(ctx, row, env.Now())
		}})
	p := tea.NewProgram(m, programOptions(ctx, env)...)
	if _, err := p.Run(); err != nil && !errors.Is(err, tea.ErrProgramKilled) && !errors.Is(err, context.Canceled) {
		return fail(env, err)
	}
	return ExitOK
}

// kubeContextNames are the context names of the kubeconfig (--kubeconfig,
// else $KUBECONFIG or ~/.kube/config, as the dashboard loads it). No
// kubeconfig is no context: every row then says it has none to open.
func kubeContextNames(explicit string) ([]string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = explicit
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).RawConfig()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(cfg.Contexts))
	for n := range cfg.Contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// runFleetSnapshot reads the endpoint once and prints the report.
func runFleetSnapshot(ctx context.Context, env Env, c *Common, rd fleetSource) int {
	f := rd.Read(ctx, env.Now())
	if ctx.Err() != nil {
		return interruptedNoReport(env)
	}
	code := fleet.ExitCode(f)
	if c.Output == "json" {
		b, err := fleet.JSON(f, rd.Options().URL)
		if err != nil {
			return fail(env, err)
		}
		var v json.RawMessage = b
		if err := writeJSON(env.Stdout, v); err != nil {
			return fail(env, fmt.Errorf("writing the report: %w", err))
		}
	} else {
		var b strings.Builder
		fleet.Render(&b, f, rd.Options().URL)
		if _, err := fmt.Fprint(env.Stdout, b.String()); err != nil {
			return fail(env, fmt.Errorf("writing the report: %w", err))
		}
	}
	if f.Err != nil {
		say(env.Stderr, "rebootwatch: %s\n", fleet.ErrorText(f.Err))
	}
	if len(f.Warnings) > 0 {
		say(env.Stderr, "rebootwatch: partial answer: %s\n", sanitize.Short(strings.Join(f.Warnings, "; "), 300))
	}
	return code
}

// fleetLine is one line of fleet watch -o json.
type fleetLine struct {
	Time    time.Time `json:"time"`
	Cluster string    `json:"cluster,omitempty"`
	// Job and Instance name a row without the cluster label.
	Job      string       `json:"job,omitempty"`
	Instance string       `json:"instance,omitempty"`
	Status   fleet.Status `json:"status,omitempty"`
	Was      fleet.Status `json:"was,omitempty"`
	Lock     string       `json:"lock,omitempty"`
	Nodes    string       `json:"nodes,omitempty"`
	Blocker  string       `json:"blocker,omitempty"`
	Error    string       `json:"error,omitempty"`
}

// runFleetWatch reads the endpoint every interval and prints the clusters
// whose status changed.
func runFleetWatch(ctx context.Context, env Env, c *Common, rd fleetSource, ff fleetFlags) int {
	last := map[string]fleet.Status{}
	first := true
	printLine := func(l fleetLine) error {
		if c.Output == "json" {
			return writeJSONLine(env, l)
		}
		ts := l.Time.Local().Format("15:04:05")
		var s string
		if l.Error != "" {
			s = fmt.Sprintf("%s error: %s\n", ts, l.Error)
		} else {
			was := ""
			if l.Was != "" {
				was = fmt.Sprintf(" (was %s)", l.Was)
			}
			s = fmt.Sprintf("%s %s %s%s · lock %s · %s · blocker %s\n", ts, l.Cluster, l.Status, was, l.Lock, l.Nodes, l.Blocker)
		}
		_, err := fmt.Fprint(env.Stdout, s)
		return err
	}
	t := time.NewTicker(ff.interval)
	defer t.Stop()
	for {
		now := env.Now()
		f := rd.Read(ctx, now)
		if ctx.Err() != nil {
			return ExitInterrupted
		}
		if f.Err != nil {
			if first && len(f.Rows) == 0 {
				say(env.Stderr, "rebootwatch: %s\n", fleet.ErrorText(f.Err))
				return ExitError
			}
			if err := printLine(fleetLine{Time: now, Error: fleet.ErrorText(f.Err)}); err != nil {
				return fail(env, fmt.Errorf("writing the output: %w", err))
			}
		}
		if len(f.Warnings) > 0 {
			if err := printLine(fleetLine{Time: now, Error: "partial answer: " + sanitize.Short(strings.Join(f.Warnings, "; "), 300)}); err != nil {
				return fail(env, fmt.Errorf("writing the output: %w", err))
			}
		}
		done := len(f.Rows) > 0 && f.Err == nil && len(f.Warnings) == 0
		for _, row := range f.Rows {
			if row.Status != fleet.StatusDone {
				done = false
			}
			was, seen := last[row.Key().ID()]
			if seen && was == row.Status {
				continue
			}
			last[row.Key().ID()] = row.Status
			l := fleetLine{Time: now, Cluster: fleet.ClusterCell(row), Status: row.Status, Lock: fleet.LockCell(row, now),
				Nodes: fleet.NodesCell(row), Blocker: fleet.BlockerCell(row)}
			if seen {
				l.Was = was
			}
			if c.Output == "json" {
				l.Cluster, l.Job, l.Instance = row.Cluster, row.Job, row.Instance
			}
			if err := printLine(l); err != nil {
				return fail(env, fmt.Errorf("writing the output: %w", err))
			}
		}
		first = false
		if ff.untilDone && done {
			return ExitOK
		}
		select {
		case <-ctx.Done():
			return ExitInterrupted
		case <-t.C:
		}
	}
}

// writeJSONLine writes v as one compact JSON line (terminal-obeyed runes
// escaped).
func writeJSONLine(env Env, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = sanitize.JSON(b)
	_, err = env.Stdout.Write(append(b, '\n'))
	return err
}
