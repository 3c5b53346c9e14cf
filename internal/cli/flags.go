package cli

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	coordkinds "github.com/rebootwatch/rebootwatch/internal/coord/kinds"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/explain"
	"github.com/rebootwatch/rebootwatch/internal/kubeconfig"
	"github.com/rebootwatch/rebootwatch/internal/kubeconfig/kubectlflags"
	"github.com/rebootwatch/rebootwatch/internal/live"
	"github.com/rebootwatch/rebootwatch/sources/sim"
)

// Common holds the flags every mode shares (DESIGN §9): persistent flags
// of the root command, so they may come before or after a subcommand's name.
type Common struct {
	Kubeconfig string
	// Context is --context: one kubeconfig context, or a comma list that
	// opens several clusters (our extension over kubectl's single context).
	Context string
	// Kube holds kubectl's other cluster flags (client-go's clientcmd
	// override flags: --cluster, --user, --as, --as-group, --token,
	// --server, …).
	Kube               *kubectlflags.Flags
	AllContexts        bool
	RequestTimeout     time.Duration
	KuredDaemonSet     string
	FleetlockNamespace string
	PrometheusURL      string
	PrometheusToken    string
	PrometheusInsecure bool
	PrometheusInterval time.Duration
	PrometheusAlerts   string
	OrphanGrace        time.Duration
	DrainBound         time.Duration
	TargetOS           string
	SyncTimeout        time.Duration
	// Coordinators is --coordinators: which coordinator kinds are read
	// (the zero value: every registered kind, each reported not-installed
	// when it is not there).
	Coordinators coordkinds.Selection

	Demo bool
	// DemoScenario is --demo's value: fleetlock (the default) or kured.
	DemoScenario string
	DemoSeed     int64
	DemoSpeed    float64
	DemoAt       time.Duration

	ReadOnly    bool
	DryRun      bool
	AllowUnsafe bool
	Theme       string
	Output      string
	Bell        bool
	// Verbose is -v: client-go's diagnostics on stderr, at klog level
	// Verbosity (-v alone is 6, -v=N sets it, kubectl's spelling).
	Verbose   bool
	Verbosity int
}

// DefaultCommon returns the shared flags' defaults.
func DefaultCommon() Common {
	return Common{
		Kube:           kubectlflags.New(),
		RequestTimeout: 20 * time.Second, FleetlockNamespace: "default",
		PrometheusInterval: 30 * time.Second, OrphanGrace: 10 * time.Minute, DrainBound: explain.DefaultDrainBound,
		SyncTimeout: 30 * time.Second, DemoSeed: 1, DemoSpeed: 10, Output: "text",
	}
}

// Register adds the shared flags to fs (the root command's persistent
// flags), with c's current values as defaults. c must not be copied
// afterwards: the flags write into it.
func (c *Common) Register(fs *pflag.FlagSet) {
	if c.Kube == nil {
		c.Kube = kubectlflags.New()
	}
	kubectlflags.Bind(c.Kube, &c.Kubeconfig, &c.Context)
	c.Kube.AddFlags(fs)
	fs.Lookup("kubeconfig").Usage = "Path to the kubeconfig file (default $KUBECONFIG, else ~/.kube/config)"
	fs.Lookup("context").Usage = "The name of the kubeconfig context to use; a comma list (a,b,c) opens several clusters"
	fs.BoolVar(&c.AllContexts, "all-contexts", c.AllContexts, "Open every context of the kubeconfig (excludes --context)")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", c.RequestTimeout, "Timeout of every API request (1s to 10m)")
	fs.Var(kured.NewDaemonSetsFlag(&c.KuredDaemonSet), "kured-daemonset", "kured's DaemonSet as ns/name; several (one per node pool): repeat the flag or comma-separate them, ns/a,ns/b (default: discovered)")
	fs.StringVar(&c.FleetlockNamespace, "fleetlock-namespace", c.FleetlockNamespace, "Namespace of fleetlock's Leases")
	fs.StringVar(&c.PrometheusURL, "prometheus-url", c.PrometheusURL, "Prometheus base URL for kured_reboot_required and the alert gate (default: kured's own, else disabled)")
	fs.StringVar(&c.PrometheusToken, "prometheus-token-file", c.PrometheusToken, "File holding a bearer token for Prometheus")
	fs.BoolVar(&c.PrometheusInsecure, "prometheus-insecure-skip-verify", c.PrometheusInsecure, "Skip TLS verification of Prometheus (lab clusters)")
	fs.DurationVar(&c.PrometheusInterval, "prometheus-interval", c.PrometheusInterval, "How often to query Prometheus (5s to 1h)")
	fs.StringVar(&c.PrometheusAlerts, "prometheus-alerts", c.PrometheusAlerts, "Regexp of firing alert names that block reboots (kured's --alert-filter-regexp)")
	fs.DurationVar(&c.OrphanGrace, "orphan-grace", c.OrphanGrace, "How long a rebooted, Ready, schedulable holder must be steady before its lock is orphaned")
	fs.DurationVar(&c.DrainBound, "drain-bound", c.DrainBound, "How long a drain may take before it is a stall, when kured's own --drain-timeout is not set (a drain held by a PodDisruptionBudget is shown at once, muted)")
	fs.StringVar(&c.TargetOS, "target-os", c.TargetOS, "OS image, kernel or version the fleet upgrades to (default: the newest of each OS family)")
	fs.DurationVar(&c.SyncTimeout, "sync-timeout", c.SyncTimeout, "How long to wait for every source's first picture (1s to 1h)")
	co := fs.VarPF(&coordinatorsFlag{c}, "coordinators", "", "Which coordinator kinds to read: all (each reported not-installed when it is not there), a comma list of "+strings.Join(coordkinds.Names(), ", ")+
		", or "+coordkinds.SelectLocks+" (or false: kured and fleetlock only). A kind left out is not read, its wedges not named; the dashboard reads system-upgrade-controller and the Flatcar update operator again every 10s")
	co.NoOptDefVal = coordkinds.SelectAll
	demo := fs.VarPF(&demoFlag{c}, "demo", "", "Use the embedded simulated cluster: --demo (fleetlock's ghost-Lease incident) or --demo=SCENARIO, one of "+strings.Join(sim.ScenarioNames(), ", "))
	demo.NoOptDefVal = sim.ScenarioFleetlock
	fs.Int64Var(&c.DemoSeed, "seed", c.DemoSeed, "Random seed of the demo cluster")
	fs.Float64Var(&c.DemoSpeed, "speed", c.DemoSpeed, "How much faster than real time the demo runs (0 to 10000; 0 freezes it)")
	fs.DurationVar(&c.DemoAt, "demo-at", c.DemoAt, "Start the demo this far into its scenario (0 to 24h)")
	fs.BoolVar(&c.ReadOnly, "read-only", c.ReadOnly, "Hide every action (dashboard)")
	fs.BoolVar(&c.DryRun, "dry-run", c.DryRun, "Show the writes actions would make without making them")
	fs.BoolVar(&c.AllowUnsafe, "allow-unsafe", c.AllowUnsafe, "Allow overriding failed gates after typing the holder's name (terminal only)")
	fs.StringVar(&c.Theme, "theme", c.Theme, "Theme name or theme file (default: $XDG_CONFIG_HOME/rebootwatch/theme.yaml, else by background)")
	fs.StringVarP(&c.Output, "output", "o", c.Output, "Output format: text or json (--snapshot, watch, release, reap, uncordon, version)")
	fs.BoolVar(&c.Bell, "bell", c.Bell, "Ring the terminal bell when something needs attention")
	v := fs.VarPF(&verbosityFlag{c}, "v", "v", "Log client-go's diagnostics to stderr: -v is klog's level 6 (requests, responses, reflectors), -v=N another level")
	v.NoOptDefVal = "6"
}

// demoFlag is --demo: a switch (--demo, the fleetlock scenario) that also
// takes a scenario (--demo=kured, --demo=suc: sim.Scenarios).
type demoFlag struct{ c *Common }

func (d *demoFlag) Type() string { return "scenario" }

func (d *demoFlag) String() string {
	if d == nil || d.c == nil || !d.c.Demo {
		return ""
	}
	return d.c.DemoScenario
}

func (d *demoFlag) Set(v string) error {
	switch v {
	case "true":
		d.c.Demo, d.c.DemoScenario = true, sim.ScenarioFleetlock
		return nil
	case "false":
		d.c.Demo = false
		return nil
	}
	names := sim.ScenarioNames()
	if !slices.Contains(names, v) {
		return fmt.Errorf("want --demo or --demo=SCENARIO, one of %s", strings.Join(names, ", "))
	}
	d.c.Demo, d.c.DemoScenario = true, v
	return nil
}

// Values lists the scenarios --demo accepts (for the "did you mean" of a
// scenario given after a space).
func (d *demoFlag) Values() []string { return sim.ScenarioNames() }

// coordinatorsFlag is --coordinators: a filter of the registered kinds
// (--coordinators=kured,suc). Its old boolean form still parses: the bare
// flag and "true" select every kind (the default now), "false" the lock
// kinds (what was read without the flag before).
type coordinatorsFlag struct{ c *Common }

func (f *coordinatorsFlag) Type() string { return "kinds" }

func (f *coordinatorsFlag) String() string {
	if f == nil || f.c == nil {
		return coordkinds.SelectAll
	}
	return f.c.Coordinators.String()
}

func (f *coordinatorsFlag) Set(v string) error {
	sel, err := coordkinds.Select(v)
	if err != nil {
		return err
	}
	f.c.Coordinators = sel
	return nil
}

// verbosityFlag is -v / --v: -v alone is klog's level 6; -v=N any level
// from 0 (quiet) to 10.
type verbosityFlag struct{ c *Common }

func (v *verbosityFlag) Type() string { return "level" }

func (v *verbosityFlag) String() string {
	if v == nil || v.c == nil {
		return "0"
	}
	return strconv.Itoa(v.c.Verbosity)
}

func (v *verbosityFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if s == "true" {
		n, err = 6, nil
	}
	if err != nil || n < 0 || n > 10 {
		return fmt.Errorf("want a klog level from 0 to 10")
	}
	v.c.Verbosity, v.c.Verbose = n, n > 0
	return nil
}

// Loader is the one kubeconfig loader, with these flags and env.
func (c *Common) Loader(env Env) kubeconfig.Loader {
	return kubeconfig.Loader{Kubeconfig: c.Kubeconfig, Overrides: kubectlflags.Overrides(c.Kube), Getenv: env.Getenv}
}

// LiveOptions maps the flags to a session's options.
func (c *Common) LiveOptions(env Env) live.Options {
	return live.Options{
		Kube: c.Loader(env), Context: c.Context,
		RequestTimeout: c.RequestTimeout, KuredDaemonSet: c.KuredDaemonSet, FleetlockNamespace: c.FleetlockNamespace,
		PrometheusURL: c.PrometheusURL, PrometheusTokenFile: c.PrometheusToken, PrometheusInsecure: c.PrometheusInsecure,
		PrometheusInterval: c.PrometheusInterval, PrometheusAlerts: c.PrometheusAlerts,
		OrphanGrace: c.OrphanGrace, DrainBound: c.DrainBound, TargetOS: c.TargetOS, SyncTimeout: c.SyncTimeout, Kinds: c.Coordinators,
		Demo: c.Demo, DemoScenario: c.DemoScenario, DemoSeed: c.DemoSeed, DemoSpeed: c.DemoSpeed, DemoAt: c.DemoAt,
		// Hostile text for hack/e2e-tmux.sh; unset, the demo is unchanged.
		DemoGhostHolder: env.Getenv("REBOOTWATCH_DEMO_GHOST_HOLDER"),
		DemoStart:       env.Now().Truncate(time.Second), WallNow: env.Now,
	}
}

// orphanGraceError refuses an --orphan-grace of 0 (or less), as the agent
// does. 0 is refused, not taken at its word: a holder would be
// orphaned the instant it is Ready and schedulable after its reboot, which
// is the instant its coordinator is about to release the lock itself (kured
// uncordons, then releases on the same tick), so a release would race the
// coordinator's own; and 0 is what the lock engine's options read as "the
// default", which is how it silently became 10m.
const orphanGraceError = "--orphan-grace must be positive (the time a rebooted holder must be steady before its lock counts as orphaned; 0 would race its coordinator's own release; default 10m)"

// Allowed ranges of the shared flags (docs/cli.md's flag reference lists them).
const (
	MaxDemoSpeed          = 10000
	MaxDemoAt             = 24 * time.Hour
	MinSyncTimeout        = time.Second
	MaxSyncTimeout        = time.Hour
	MinPrometheusInterval = 5 * time.Second
	MaxPrometheusInterval = time.Hour
	MinRequestTimeout     = time.Second
	MaxRequestTimeout     = 10 * time.Minute
)

// durationIn checks that a duration flag lies in [lo, hi].
func durationIn(name string, d, lo, hi time.Duration, why string) error {
	if d < lo || d > hi {
		return fmt.Errorf("--%s must be from %s to %s%s (got %s)", name, human(lo), human(hi), why, d)
	}
	return nil
}

// human prints a round duration as people write it: 0, 1s, 10m, 24h.
func human(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	if s == "0s" {
		return "0"
	}
	return s
}

func (c *Common) validate() error {
	switch c.Output {
	case "text", "json":
	default:
		return fmt.Errorf("unknown output format %q: use -o text or -o json", c.Output)
	}
	if c.AllContexts && c.Context != "" {
		return errors.New("--all-contexts and --context exclude each other: give one")
	}
	if err := durationIn("request-timeout", c.RequestTimeout, MinRequestTimeout, MaxRequestTimeout, ""); err != nil {
		return err
	}
	if err := durationIn("sync-timeout", c.SyncTimeout, MinSyncTimeout, MaxSyncTimeout, ""); err != nil {
		return err
	}
	if err := durationIn("prometheus-interval", c.PrometheusInterval, MinPrometheusInterval, MaxPrometheusInterval, ""); err != nil {
		return err
	}
	if c.OrphanGrace <= 0 {
		return errors.New(orphanGraceError)
	}
	if c.DrainBound <= 0 {
		return fmt.Errorf("--drain-bound must be positive, got %s", c.DrainBound)
	}
	if errs := validation.IsDNS1123Label(c.FleetlockNamespace); len(errs) > 0 {
		return fmt.Errorf("--fleetlock-namespace %q is not a namespace name: %s", c.FleetlockNamespace, strings.Join(errs, "; "))
	}
	if math.IsNaN(c.DemoSpeed) || c.DemoSpeed < 0 || c.DemoSpeed > MaxDemoSpeed {
		return fmt.Errorf("--speed must be a number from 0 to %d (0 freezes the demo; got %v)", MaxDemoSpeed, c.DemoSpeed)
	}
	if err := durationIn("demo-at", c.DemoAt, 0, MaxDemoAt, " (the demo's scenario is over within hours)"); err != nil {
		return err
	}
	if _, err := kured.ParseDaemonSets(c.KuredDaemonSet); err != nil {
		return fmt.Errorf("--kured-daemonset: %w", err)
	}
	return nil
}
