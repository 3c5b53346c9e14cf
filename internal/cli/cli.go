package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/rebootwatch/rebootwatch/internal/live"
	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/sources/sim"
)

// Exit codes (DESIGN §7).
const (
	ExitOK        = 0
	ExitError     = 1
	ExitAttention = 2
	// ExitInterrupted: Ctrl-C or SIGTERM ended the command first (128+SIGINT, like kubectl).
	ExitInterrupted = 130
)

// Env is the process environment a command runs in; tests replace it.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// StdoutTTY and StdinTTY say whether those are terminals.
	StdoutTTY bool
	StdinTTY  bool
	Getenv    func(string) string
	// Now is the wall clock (the demo has its own, in the session).
	Now func() time.Time
}

// OSEnv returns the real process environment.
func OSEnv() Env {
	return Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		StdoutTTY: isTerminal(os.Stdout), StdinTTY: isTerminal(os.Stdin),
		Getenv: os.Getenv, Now: time.Now,
	}
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Common holds the flags every mode shares (DESIGN §9).
type Common struct {
	Kubeconfig         string
	Context            string
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
	TargetOS           string
	SyncTimeout        time.Duration

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
	Verbose     bool
}

// DefaultCommon returns the shared flags' defaults.
func DefaultCommon() Common {
	return Common{
		RequestTimeout: 20 * time.Second, FleetlockNamespace: "default",
		PrometheusInterval: 30 * time.Second, OrphanGrace: 10 * time.Minute,
		SyncTimeout: 30 * time.Second, DemoSeed: 1, DemoSpeed: 10, Output: "text",
	}
}

// Register adds the shared flags to fs, with c's current values as defaults,
// so a subcommand's flag set keeps what was given before its name.
func (c *Common) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Kubeconfig, "kubeconfig", c.Kubeconfig, "path to the kubeconfig file (default $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&c.Context, "context", c.Context, "kubeconfig context to use; a comma list watches several clusters")
	fs.BoolVar(&c.AllContexts, "all-contexts", c.AllContexts, "watch every context of the kubeconfig")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", c.RequestTimeout, "timeout of every API request")
	fs.StringVar(&c.KuredDaemonSet, "kured-daemonset", c.KuredDaemonSet, "kured's DaemonSet as ns/name (default: discovered)")
	fs.StringVar(&c.FleetlockNamespace, "fleetlock-namespace", c.FleetlockNamespace, "namespace of fleetlock's Leases")
	fs.StringVar(&c.PrometheusURL, "prometheus-url", c.PrometheusURL, "Prometheus base URL for kured_reboot_required (default: disabled)")
	fs.StringVar(&c.PrometheusToken, "prometheus-token-file", c.PrometheusToken, "file holding a bearer token for Prometheus")
	fs.BoolVar(&c.PrometheusInsecure, "prometheus-insecure-skip-verify", c.PrometheusInsecure, "skip TLS verification of Prometheus (lab clusters)")
	fs.DurationVar(&c.PrometheusInterval, "prometheus-interval", c.PrometheusInterval, "how often to query Prometheus")
	fs.StringVar(&c.PrometheusAlerts, "prometheus-alerts", c.PrometheusAlerts, "regexp of firing alert names that block reboots (kured's --alert-filter-regexp)")
	fs.DurationVar(&c.OrphanGrace, "orphan-grace", c.OrphanGrace, "how long a rebooted, Ready, schedulable holder must be steady before its lock is orphaned")
	fs.StringVar(&c.TargetOS, "target-os", c.TargetOS, "OS image or kernel the fleet upgrades to (default: newest seen)")
	fs.DurationVar(&c.SyncTimeout, "sync-timeout", c.SyncTimeout, "how long to wait for the first sync of every source")
	fs.Var(&demoFlag{c}, "demo", "use the embedded simulated cluster instead of a real one: --demo (the fleetlock ghost-Lease incident) or --demo=kured")
	fs.Int64Var(&c.DemoSeed, "seed", c.DemoSeed, "random seed of the demo cluster")
	fs.Float64Var(&c.DemoSpeed, "speed", c.DemoSpeed, "how much faster than real time the demo runs")
	fs.DurationVar(&c.DemoAt, "demo-at", c.DemoAt, "start the demo this far into its scenario")
	fs.BoolVar(&c.ReadOnly, "read-only", c.ReadOnly, "hide every action")
	fs.BoolVar(&c.DryRun, "dry-run", c.DryRun, "show the writes actions would make without making them")
	fs.BoolVar(&c.AllowUnsafe, "allow-unsafe", c.AllowUnsafe, "allow overriding failed gates after typing the holder's name (TTY only)")
	fs.StringVar(&c.Theme, "theme", c.Theme, "theme name or theme file (default: $XDG_CONFIG_HOME/rebootwatch/theme.yaml, else by background)")
	fs.StringVar(&c.Output, "o", c.Output, "output format: text or json")
	fs.StringVar(&c.Output, "output", c.Output, "output format: text or json")
	fs.BoolVar(&c.Bell, "bell", c.Bell, "ring the terminal bell when something needs attention")
	fs.BoolVar(&c.Verbose, "v", c.Verbose, "log diagnostics to stderr")
}

// demoFlag is --demo: a switch (--demo, the fleetlock scenario) that also
// takes a scenario (--demo=fleetlock, --demo=kured).
type demoFlag struct{ c *Common }

func (d *demoFlag) IsBoolFlag() bool { return true }

func (d *demoFlag) String() string {
	if d == nil || d.c == nil || !d.c.Demo {
		return "false"
	}
	return d.c.DemoScenario
}

func (d *demoFlag) Set(v string) error {
	switch v {
	case "true", sim.ScenarioFleetlock:
		d.c.Demo, d.c.DemoScenario = true, sim.ScenarioFleetlock
	case sim.ScenarioKured:
		d.c.Demo, d.c.DemoScenario = true, sim.ScenarioKured
	case "false":
		d.c.Demo = false
	default:
		return fmt.Errorf("want --demo, --demo=fleetlock or --demo=kured")
	}
	return nil
}

// LiveOptions maps the flags to a session's options.
func (c *Common) LiveOptions(env Env) live.Options {
	return live.Options{
		Kubeconfig: c.Kubeconfig, Context: c.Context, KubeconfigEnv: env.Getenv("KUBECONFIG"),
		Home:           env.Getenv("HOME"),
		RequestTimeout: c.RequestTimeout, KuredDaemonSet: c.KuredDaemonSet, FleetlockNamespace: c.FleetlockNamespace,
		PrometheusURL: c.PrometheusURL, PrometheusTokenFile: c.PrometheusToken, PrometheusInsecure: c.PrometheusInsecure,
		PrometheusInterval: c.PrometheusInterval, PrometheusAlerts: c.PrometheusAlerts,
		OrphanGrace: c.OrphanGrace, TargetOS: c.TargetOS, SyncTimeout: c.SyncTimeout,
		Demo: c.Demo, DemoScenario: c.DemoScenario, DemoSeed: c.DemoSeed, DemoSpeed: c.DemoSpeed, DemoAt: c.DemoAt,
		// Hostile text for hack/e2e-tmux.sh; unset, the demo is unchanged.
		DemoGhostHolder: env.Getenv("REBOOTWATCH_DEMO_GHOST_HOLDER"),
		DemoStart:       env.Now().Truncate(time.Second), WallNow: env.Now,
	}
}

// Allowed ranges of the shared flags (README's flag reference lists them).
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
	if c.OrphanGrace < 0 {
		return errors.New("--orphan-grace must not be negative")
	}
	if math.IsNaN(c.DemoSpeed) || c.DemoSpeed < 0 || c.DemoSpeed > MaxDemoSpeed {
		return fmt.Errorf("--speed must be a number from 0 to %d (0 freezes the demo; got %v)", MaxDemoSpeed, c.DemoSpeed)
	}
	if err := durationIn("demo-at", c.DemoAt, 0, MaxDemoAt, " (the demo's scenario is over within hours)"); err != nil {
		return err
	}
	if c.KuredDaemonSet != "" && strings.Count(c.KuredDaemonSet, "/") != 1 {
		return fmt.Errorf("--kured-daemonset %q: want namespace/name", c.KuredDaemonSet)
	}
	return nil
}

const usage = `rebootwatch — watch and fix Kubernetes node reboot cycles (kured, fleetlock, Longhorn)

Usage:
  rebootwatch [flags]                 the live dashboard
  rebootwatch --snapshot [-o json]    a one-shot report (exit 0 ok, 1 unreadable, 2 needs attention)
  rebootwatch watch [flags]           a streaming log for a maintenance window
  rebootwatch release [flags]         release a lock left by a node that finished
  rebootwatch reap [flags]            reap a lock held by a node that no longer exists
  rebootwatch uncordon --node NODE    uncordon a node its coordinator left cordoned after its reboot
  rebootwatch version

A command's own flags: rebootwatch COMMAND --help

Try it with no cluster:  rebootwatch --demo

Flags:
`

// Main runs rebootwatch with args (without the program name) and returns the exit code.
func Main(args []string, env Env) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, args, env)
}

// quietClientGo routes client-go's own logging (klog) and API warnings
// away from the terminal: they would tear the dashboard and clutter
// reports. With -v they go to stderr as structured lines.
//
// klog's global logger is set once per process, to a handler that forwards
// to the current run's destination: setting klog's logger again on every
// run raced with informers of an earlier run that were still logging (tests
// run many commands in one process).
func quietClientGo(env Env, verbose bool) {
	if verbose {
		// klog drops client-go's V(n) lines before any handler sees them
		// unless its verbosity allows them: -v is klog's -v=6 (requests,
		// responses, reflector diagnostics), all levels let through.
		var h slog.Handler = slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.Level(-16)})
		klogDest.Store(&h)
		setKlogVerbosity("6")
	} else {
		klogDest.Store(nil)
		setKlogVerbosity("0")
	}
	klogOnce.Do(func() { klog.SetSlogLogger(slog.New(forwardHandler{})) })
	if !verbose {
		rest.SetDefaultWarningHandler(rest.NoWarnings{})
	}
}

// setKlogVerbosity sets klog's global -v (an atomic level inside klog).
func setKlogVerbosity(v string) {
	klogFlagsOnce.Do(func() {
		klogFlags = flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(klogFlags)
	})
	_ = klogFlags.Set("v", v)
}

var (
	klogFlagsOnce sync.Once
	klogFlags     *flag.FlagSet
)

var (
	klogOnce sync.Once
	// klogDest is where client-go's lines go now; nil discards them.
	klogDest atomic.Pointer[slog.Handler]
)

// forwardHandler passes records to the handler in klogDest at the time
// they are logged, with the attributes and groups added on the way.
type forwardHandler struct {
	with []func(slog.Handler) slog.Handler
}

func (f forwardHandler) dest() slog.Handler {
	p := klogDest.Load()
	if p == nil {
		return nil
	}
	h := *p
	for _, w := range f.with {
		h = w(h)
	}
	return h
}

func (f forwardHandler) Enabled(ctx context.Context, l slog.Level) bool {
	p := klogDest.Load()
	return p != nil && (*p).Enabled(ctx, l)
}

func (f forwardHandler) Handle(ctx context.Context, r slog.Record) error {
	if h := f.dest(); h != nil {
		return h.Handle(ctx, r)
	}
	return nil
}

func (f forwardHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return forwardHandler{with: append(f.with[:len(f.with):len(f.with)], func(h slog.Handler) slog.Handler { return h.WithAttrs(as) })}
}

func (f forwardHandler) WithGroup(name string) slog.Handler {
	return forwardHandler{with: append(f.with[:len(f.with):len(f.with)], func(h slog.Handler) slog.Handler { return h.WithGroup(name) })}
}

func run(ctx context.Context, args []string, env Env) int {
	c := DefaultCommon()
	var snapshot, version bool
	fs := newFlagSet("rebootwatch", env, usage)
	c.Register(fs)
	fs.BoolVar(&snapshot, "snapshot", false, "print a one-shot report and exit")
	fs.BoolVar(&version, "version", false, "print the version and exit")
	if code, ok := parse(fs, args, env, usage); !ok {
		return code
	}
	rest := fs.Args()
	sub := ""
	if len(rest) > 0 {
		sub, rest = rest[0], rest[1:]
	}
	// --snapshot is a mode of its own: with a subcommand one of them would
	// be silently ignored.
	if snapshot && sub != "" && sub != "help" {
		return fail(env, fmt.Errorf("--snapshot and %s are different modes: give one (rebootwatch --snapshot, or rebootwatch %s)", sub, sub))
	}
	if err := c.validate(); err != nil {
		return fail(env, err)
	}
	quietClientGo(env, c.Verbose)
	switch sub {
	case "":
	case "version":
		version = true
	case "watch":
		return runWatch(ctx, env, &c, rest)
	case "release":
		return runAction(ctx, env, &c, "release", rest)
	case "reap":
		return runAction(ctx, env, &c, "reap", rest)
	case "uncordon":
		return runAction(ctx, env, &c, "uncordon", rest)
	case "help":
		printUsage(fs, env, usage)
		return ExitOK
	default:
		return fail(env, fmt.Errorf("unknown command %q (see rebootwatch --help)", sub))
	}
	if version {
		fmt.Fprintln(env.Stdout, "rebootwatch", Version)
		return ExitOK
	}
	if snapshot {
		return runSnapshot(ctx, env, &c)
	}
	// The dashboard has no output format: -o there was meant for a report.
	oSet := false
	fs.Visit(func(f *flag.Flag) { oSet = oSet || f.Name == "o" })
	if oSet {
		return fail(env, fmt.Errorf("-o %s: the dashboard has no output format; -o is for --snapshot, watch, release, reap and uncordon (rebootwatch --snapshot -o %s)", c.Output, c.Output))
	}
	return runDashboard(ctx, env, &c)
}

// Version is set at build time with -ldflags "-X .../internal/cli.Version=…".
var Version = "dev"

// newFlagSet returns a flag set that reports errors itself: the flag
// package calls Usage on -help and on every error, so Usage does nothing and
// parse prints the usage once (-help) or one line (an error).
func newFlagSet(name string, env Env, head string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// printUsage writes head and every flag to stdout.
func printUsage(fs *flag.FlagSet, env Env, head string) {
	fmt.Fprint(env.Stdout, head)
	fs.SetOutput(env.Stdout)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// parse parses args; ok is false when the caller must return code.
func parse(fs *flag.FlagSet, args []string, env Env, head string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		printUsage(fs, env, head)
		return ExitOK, false
	default:
		return fail(env, fmt.Errorf("%v (%ssee %s --help)", err, suggest(fs, err), fs.Name())), false
	}
}

// suggest returns "did you mean --x? " when an unknown flag is one or two
// edits away from a known one, else "".
func suggest(fs *flag.FlagSet, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return ""
	}
	var best []string
	bestD := 3
	fs.VisitAll(func(f *flag.Flag) {
		d := editDistance(name, f.Name)
		switch {
		case len(f.Name) < 2 || d > bestD:
		case d < bestD:
			best, bestD = []string{"--" + f.Name}, d
		default:
			best = append(best, "--"+f.Name)
		}
	})
	if len(best) == 0 {
		return ""
	}
	return "did you mean " + strings.Join(best, " or ") + "? "
}

// editDistance is the Levenshtein distance of two short strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// fail prints one clear line and returns ExitError. Errors may quote
// cluster values (lock names, holders, API messages): sanitised here.
func fail(env Env, err error) int {
	fmt.Fprintf(env.Stderr, "rebootwatch: %s\n", sanitize.Short(err.Error(), 2000))
	return ExitError
}

// ParseSub parses a subcommand's own flags after the shared ones: shared
// flags may come before or after the subcommand's name.
func ParseSub(name, head string, env Env, c *Common, args []string, extra func(fs *flag.FlagSet)) (code int, ok bool) {
	fs := newFlagSet("rebootwatch "+name, env, head)
	c.Register(fs)
	if extra != nil {
		extra(fs)
	}
	if code, ok := parse(fs, args, env, head); !ok {
		return code, false
	}
	if fs.NArg() > 0 {
		return fail(env, fmt.Errorf("unexpected argument %q", fs.Arg(0))), false
	}
	if err := c.validate(); err != nil {
		return fail(env, err), false
	}
	return 0, true
}
