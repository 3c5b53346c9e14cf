package agent

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/rebootwatch/rebootwatch/internal/coord/kinds"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/explain"
	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/model"
)

// Config is everything the agent is told on its command line (DESIGN §9).
type Config struct {
	Kubeconfig string // --kubeconfig; empty: KUBECONFIG, else in-cluster
	Context    string // --context (kubeconfig only)

	Interval       time.Duration // --interval: periodic re-judge
	RequestTimeout time.Duration // --request-timeout: bound on every API call

	DryRun          bool          // --dry-run: log the writes, make none
	ReapGhost       bool          // --reap-ghost (default on)
	ReapExpired     bool          // --reap-expired (default on)
	ReleaseOrphaned bool          // --release-orphaned (default off)
	OrphanGrace     time.Duration // --orphan-grace
	DrainBound      time.Duration // --drain-bound

	Kured              bool   // --kured: read and act on kured's lock (false: its source is disabled)
	KuredDaemonSet     string // --kured-daemonset ns/name, or several comma-separated (node pools; empty: the sources' default discovery)
	Fleetlock          bool   // --fleetlock: read and act on fleetlock's Leases (false: its source is disabled)
	FleetlockNamespace string // --fleetlock-namespace
	// Coordinators is --coordinators: which coordinator kinds the agent
	// reads (the zero value: every registered kind). The kinds read once
	// per iteration (system-upgrade-controller, the Flatcar update
	// operator; read only) are each reported not-installed when they are
	// not there; a lock kind (kured, fleetlock) left out is disabled as
	// with --kured=false.
	Coordinators kinds.Selection

	LeaderElect              bool          // --leader-elect
	LeaderElectionNamespace  string        // --leader-election-namespace (resolved by ResolveNamespace)
	LeaderElectionID         string        // --leader-election-id: the Lease's name
	LeaderElectLeaseDuration time.Duration // --leader-elect-lease-duration
	LeaderElectRenewDeadline time.Duration // --leader-elect-renew-deadline
	LeaderElectRetryPeriod   time.Duration // --leader-elect-retry-period

	HealthProbeBindAddress string // --health-probe-bind-address
	MetricsBindAddress     string // --metrics-bind-address (may equal the health address)

	LogLevel string // --log-level debug|info|warn|error

	// ReclaimStartupPages is --reclaim-startup-pages: once every source
	// has synced, have the kernel reclaim the pages of the binary that
	// start-up touched (Linux; docs/agent.md).
	ReclaimStartupPages bool

	PrometheusURL       string // --prometheus-url: kured_reboot_required and the blocking alerts (empty: kured's own, else off)
	PrometheusAlerts    string // --prometheus-alerts: regexp of firing alerts that block reboots (kured's --alert-filter-regexp)
	PrometheusTokenFile string // --prometheus-token-file: bearer token, re-read on every request

	NotifyURLs         []string      // --notify-url (repeatable): shoutrrr URLs
	NotifyBlockedAfter time.Duration // --notify-blocked-after: notify a fleet blocked this long (0: never)
}

// Defaults returns the configuration of DESIGN §9.
func Defaults() Config {
	return Config{
		Interval:                 60 * time.Second,
		RequestTimeout:           20 * time.Second,
		ReapGhost:                true,
		ReapExpired:              true,
		OrphanGrace:              10 * time.Minute,
		DrainBound:               explain.DefaultDrainBound,
		Kured:                    true,
		Fleetlock:                true,
		FleetlockNamespace:       "default",
		LeaderElect:              true,
		LeaderElectionID:         "rebootwatch-agent",
		LeaderElectLeaseDuration: 15 * time.Second,
		LeaderElectRenewDeadline: 10 * time.Second,
		LeaderElectRetryPeriod:   2 * time.Second,
		HealthProbeBindAddress:   ":8081",
		MetricsBindAddress:       ":8080",
		LogLevel:                 "info",
		ReclaimStartupPages:      true,
		NotifyBlockedAfter:       30 * time.Minute,
	}
}

// ErrHelp is returned by ParseFlags for -h/--help (usage already printed).
var ErrHelp = pflag.ErrHelp

// ErrVersion is returned by ParseFlags for --version (nothing printed: the
// caller prints the version).
var ErrVersion = errors.New("version requested")

// usageHead opens --help, before the flags.
const usageHead = `rebootwatch-agent: the in-cluster reboot-lock janitor (kured, fleetlock). It
judges every lock, reaps ghost and expired ones, optionally releases orphaned
ones, and exports rebootwatch_* metrics, /healthz and /readyz.

Usage:
  rebootwatch-agent [flags]

Flags:
`

// ParseFlags parses the agent's command line (without the program name)
// with the CLI's convention: pflag's double-dash long flags. --help prints
// the usage to out and returns ErrHelp; --version returns ErrVersion; both
// win over every other flag and skip validation. Errors are returned, never
// printed. The result is validated.
func ParseFlags(args []string, out io.Writer) (Config, error) {
	c := Defaults()
	fs := pflag.NewFlagSet("rebootwatch-agent", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var help, version bool
	fs.BoolVarP(&help, "help", "h", false, "print this help and exit")
	fs.BoolVar(&version, "version", false, "print the version and exit")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", c.Kubeconfig, "kubeconfig file (out of cluster); default $KUBECONFIG, else in-cluster credentials")
	fs.StringVar(&c.Context, "context", c.Context, "kubeconfig context (default: the current context)")
	fs.DurationVar(&c.Interval, "interval", c.Interval, "periodic re-judge interval (events also trigger a re-judge)")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", c.RequestTimeout, "timeout of every API call")
	fs.BoolVar(&c.DryRun, "dry-run", c.DryRun, "log the writes the agent would make, make none")
	fs.BoolVar(&c.ReapGhost, "reap-ghost", c.ReapGhost, "reap locks whose holder matches no node")
	fs.BoolVar(&c.ReapExpired, "reap-expired", c.ReapExpired, "reap kured locks whose TTL passed")
	fs.BoolVar(&c.ReleaseOrphaned, "release-orphaned", c.ReleaseOrphaned, "release locks held by a node that finished its reboot (see --orphan-grace)")
	fs.DurationVar(&c.OrphanGrace, "orphan-grace", c.OrphanGrace, "how long a rebooted node must be steady before its lock counts as orphaned")
	fs.DurationVar(&c.DrainBound, "drain-bound", c.DrainBound, "how long a drain may take before it is a stall, when kured's own --drain-timeout is not set")
	fs.BoolVar(&c.Kured, "kured", c.Kured, "watch kured's lock; false on a cluster without kured (its source then reports disabled)")
	fs.BoolVar(&c.Fleetlock, "fleetlock", c.Fleetlock, "watch fleetlock's Leases; false on a cluster without fleetlock (its source then reports disabled)")
	co := fs.VarPF(&coordinatorsFlag{&c}, "coordinators", "", "which coordinator kinds to read: all (each reported not-installed when it is not there), a comma list of "+strings.Join(kinds.Names(), ", ")+
		", or "+kinds.SelectLocks+" (or false: kured and fleetlock only); system-upgrade-controller and the Flatcar update operator are read each iteration, never written")
	co.NoOptDefVal = kinds.SelectAll
	fs.Var(kured.NewDaemonSetsFlag(&c.KuredDaemonSet), "kured-daemonset", "kured's DaemonSet as ns/name; several (one per node pool): repeat the flag or comma-separate them, ns/a,ns/b (default: discovered)")
	fs.StringVar(&c.FleetlockNamespace, "fleetlock-namespace", c.FleetlockNamespace, "namespace of the fleetlock Leases")
	fs.BoolVar(&c.LeaderElect, "leader-elect", c.LeaderElect, "elect a leader on a Lease; only the leader acts")
	fs.StringVar(&c.LeaderElectionNamespace, "leader-election-namespace", c.LeaderElectionNamespace, "namespace of the leader Lease (default: $POD_NAMESPACE, else the pod's namespace, else default)")
	fs.StringVar(&c.LeaderElectionID, "leader-election-id", c.LeaderElectionID, "name of the leader Lease")
	fs.DurationVar(&c.LeaderElectLeaseDuration, "leader-elect-lease-duration", c.LeaderElectLeaseDuration, "how long a non-leader waits before taking over an unrenewed leader Lease")
	fs.DurationVar(&c.LeaderElectRenewDeadline, "leader-elect-renew-deadline", c.LeaderElectRenewDeadline, "how long the leader retries renewing before giving up leadership")
	fs.DurationVar(&c.LeaderElectRetryPeriod, "leader-elect-retry-period", c.LeaderElectRetryPeriod, "interval between leader election attempts")
	fs.StringVar(&c.HealthProbeBindAddress, "health-probe-bind-address", c.HealthProbeBindAddress, "address of /healthz and /readyz")
	fs.StringVar(&c.MetricsBindAddress, "metrics-bind-address", c.MetricsBindAddress, "address of /metrics (may equal --health-probe-bind-address)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "log level: debug, info, warn or error")
	fs.BoolVar(&c.ReclaimStartupPages, "reclaim-startup-pages", c.ReclaimStartupPages, "once the sources have synced, have the kernel reclaim the pages of this binary that start-up touched (Linux 5.4+: madvise MADV_PAGEOUT; a page still used is read back)")
	fs.StringVar(&c.PrometheusURL, "prometheus-url", c.PrometheusURL, "Prometheus base URL for kured_reboot_required and the blocking-alert gate (default: kured's own, else off)")
	fs.StringVar(&c.PrometheusAlerts, "prometheus-alerts", c.PrometheusAlerts, "regexp of firing alert names that block reboots (kured's --alert-filter-regexp); needs --prometheus-url")
	fs.StringVar(&c.PrometheusTokenFile, "prometheus-token-file", c.PrometheusTokenFile, "file holding a bearer token for Prometheus (re-read on every request)")
	fs.Func("notify-url", "shoutrrr URL to notify (repeatable), e.g. slack://…, generic+https://…: lock turned ghost/orphaned/expired, action taken, fleet blocked", func(v string) error {
		if strings.TrimSpace(v) == "" {
			return errors.New("empty URL")
		}
		c.NotifyURLs = append(c.NotifyURLs, v)
		return nil
	})
	fs.DurationVar(&c.NotifyBlockedAfter, "notify-blocked-after", c.NotifyBlockedAfter, "notify when the fleet has been stuck behind its blocker (one that does not clear by itself) with no node progressing for this long (0: never)")
	if err := fs.Parse(args); err != nil {
		return c, singleDashHint(fs, args, err)
	}
	switch {
	case help:
		fmt.Fprint(out, usageHead+fs.FlagUsages())
		return c, ErrHelp
	case version:
		return c, ErrVersion
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q (rebootwatch-agent takes only flags)", fs.Arg(0))
	}
	return c, c.Validate()
}

// singleDashHint turns pflag's error for a long flag written with one dash
// (Go's flag package took -interval=5s; pflag reads it as -i -n -t…) into
// one that names the flag with two dashes.
func singleDashHint(fs *pflag.FlagSet, args []string, err error) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		if len(a) < 3 || a[0] != '-' || a[1] == '-' {
			continue
		}
		name, _, _ := strings.Cut(a[1:], "=")
		if fs.Lookup(name) != nil {
			return fmt.Errorf("%s: long flags take two dashes: -%s", a, a)
		}
	}
	return err
}

// Validate reports the first thing wrong with c.
func (c Config) Validate() error {
	var errs []error
	pos := func(name string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("--%s must be positive, got %s", name, d))
		}
	}
	pos("interval", c.Interval)
	pos("request-timeout", c.RequestTimeout)
	pos("drain-bound", c.DrainBound)
	if c.OrphanGrace <= 0 {
		// Not taken at its word: a holder would be orphaned the instant it
		// is schedulable again after its reboot, racing its coordinator's
		// own release (and the engine reads 0 as its 10m default).
		errs = append(errs, fmt.Errorf("--orphan-grace must be positive (0 would race the coordinator's own release), got %s", c.OrphanGrace))
	}
	if _, err := kured.ParseDaemonSets(c.KuredDaemonSet); err != nil {
		errs = append(errs, fmt.Errorf("--kured-daemonset: %w", err))
	}
	if !c.LockKindsOn() && !c.Coordinators.Observed() {
		errs = append(errs, fmt.Errorf("--kured=false, --fleetlock=false and --coordinators=%s leave no coordinator to watch", c.Coordinators))
	}
	if msgs := validation.IsDNS1123Label(c.FleetlockNamespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--fleetlock-namespace %q is not a namespace name: %s", c.FleetlockNamespace, strings.Join(msgs, "; ")))
	}
	if c.LeaderElect {
		pos("leader-elect-lease-duration", c.LeaderElectLeaseDuration)
		pos("leader-elect-renew-deadline", c.LeaderElectRenewDeadline)
		pos("leader-elect-retry-period", c.LeaderElectRetryPeriod)
		if c.LeaderElectLeaseDuration <= c.LeaderElectRenewDeadline {
			errs = append(errs, fmt.Errorf("--leader-elect-lease-duration (%s) must be greater than --leader-elect-renew-deadline (%s)", c.LeaderElectLeaseDuration, c.LeaderElectRenewDeadline))
		}
		// client-go's leader elector wants RenewDeadline > 1.2 × RetryPeriod.
		if float64(c.LeaderElectRenewDeadline) <= 1.2*float64(c.LeaderElectRetryPeriod) {
			errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline (%s) must be greater than 1.2 × --leader-elect-retry-period (%s)", c.LeaderElectRenewDeadline, c.LeaderElectRetryPeriod))
		}
		if c.LeaderElectionID == "" {
			errs = append(errs, errors.New("--leader-election-id must not be empty"))
		}
	}
	for _, a := range []struct{ flag, addr string }{{"health-probe-bind-address", c.HealthProbeBindAddress}, {"metrics-bind-address", c.MetricsBindAddress}} {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			errs = append(errs, fmt.Errorf("--%s must be host:port (e.g. :8081), got %q", a.flag, a.addr))
		}
	}
	if c.PrometheusAlerts != "" {
		if _, err := regexp.Compile(c.PrometheusAlerts); err != nil {
			errs = append(errs, fmt.Errorf("--prometheus-alerts: %w", err))
		}
		if c.PrometheusURL == "" {
			errs = append(errs, errors.New("--prometheus-alerts needs --prometheus-url"))
		}
	}
	if c.PrometheusURL != "" {
		if u, err := url.Parse(c.PrometheusURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("--prometheus-url must be http(s)://host[:port][/path], got %q", sanitize.MaskURL(c.PrometheusURL)))
		}
	}
	if c.NotifyBlockedAfter < 0 {
		errs = append(errs, fmt.Errorf("--notify-blocked-after must not be negative, got %s", c.NotifyBlockedAfter))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("--log-level must be debug, info, warn or error, got %q", c.LogLevel))
	}
	return errors.Join(errs...)
}

// serviceAccountNamespaceFile is where a pod finds its own namespace.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// ResolveNamespace returns the leader Lease's namespace: the flag, else
// $POD_NAMESPACE, else the pod's service-account namespace file, else
// "default". getenv and readFile are os.Getenv and os.ReadFile outside tests.
func ResolveNamespace(flagValue string, getenv func(string) string, readFile func(string) ([]byte, error)) string {
	if flagValue != "" {
		return flagValue
	}
	if ns := strings.TrimSpace(getenv("POD_NAMESPACE")); ns != "" {
		return ns
	}
	if b, err := readFile(serviceAccountNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return "default"
}

// Identity returns this process's leader-election identity: $POD_NAME (else
// the host name) plus a random suffix, so two agents on one host differ.
func Identity(getenv func(string) string, suffix string) string {
	base := getenv("POD_NAME")
	if base == "" {
		base, _ = os.Hostname()
	}
	if base == "" {
		base = "rebootwatch-agent"
	}
	return base + "_" + suffix
}

// DisabledKinds returns the coordinators turned off (--kured=false,
// --fleetlock=false), each with the message its disabled source shows.
func (c Config) DisabledKinds() map[model.LockKind]string {
	off := c.Coordinators.Disabled()
	if !c.Kured {
		off[model.LockKured] = "turned off (--kured=false)"
	}
	if !c.Fleetlock {
		off[model.LockFleetlock] = "turned off (--fleetlock=false)"
	}
	return off
}

// LockKindsOn reports whether a lock kind (kured, fleetlock) is watched:
// turned on by its own flag and selected by --coordinators.
func (c Config) LockKindsOn() bool {
	return c.Kured && c.Coordinators.Has(model.LockKured) || c.Fleetlock && c.Coordinators.Has(model.LockFleetlock)
}

// coordinatorsFlag is --coordinators: a filter of the registered kinds
// (--coordinators=kured,suc). Its old boolean form still parses: the bare
// flag and "true" select every kind (the default now), "false" the lock
// kinds (what was read without the flag before).
type coordinatorsFlag struct{ c *Config }

func (f *coordinatorsFlag) Type() string { return "kinds" }

func (f *coordinatorsFlag) String() string {
	if f == nil || f.c == nil {
		return kinds.SelectAll
	}
	return f.c.Coordinators.String()
}

func (f *coordinatorsFlag) Set(v string) error {
	sel, err := kinds.Select(v)
	if err != nil {
		return err
	}
	f.c.Coordinators = sel
	return nil
}
