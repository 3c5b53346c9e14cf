package kured

import (
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/rebootwatch/rebootwatch/internal/timewindow"
)

// This file reads kured's settings exactly as kured reads them
// (kubereboot/kured cmd/kured/main.go at 51220cc, kured 1.23.0+32):
//
//  1. main defines its flags with pflag (flag.StringVar, IntVar,
//     DurationVar, BoolVar, StringSliceVar for --reboot-days and the node
//     labels, StringArrayVar for --blocking-pod-selector, a regexp Value for
//     --alert-filter-regexp) and calls flag.Parse on pflag's CommandLine,
//     which exits on any error (an unknown flag, a value its type rejects:
//     integers are strconv.ParseInt with base 0, so 03 and 0x3 are 3 and 09
//     is an error; slices are one CSV record per occurrence, appended after
//     the first; parsing stops at "--");
//  2. LoadFromEnv visits every flag (pflag's VisitAll, in name order) and,
//     for a KURED_<NAME> variable that is set, by the flag's type: int,
//     strconv.Atoi (base 10: +3 is 3, 0x3 is an error) then Set; bool,
//     strconv.ParseBool then Set; duration, time.ParseDuration then Set;
//     string, regexp and stringSlice, Set as is — a stringSlice already set
//     by an argument appends the variable's values (pflag's Set), so args
//     --reboot-days=th and KURED_REBOOT_DAYS=sa are Thursday and Saturday;
//     any other type (the stringArray --blocking-pod-selector) only prints
//     "Unsupported flag type". Every error exits;
//  3. main builds the window (timewindow.New) and the rebooter
//     (internal.NewRebooter) and exits on their errors.
//
// pflag itself is used here, with kured's flags, types and defaults, so
// that parsing is pflag's own; Config.StartError quotes the first error in
// that order, the one kured exits with.

// kuredRegexp is --alert-filter-regexp's value (kured's regexpValue: a
// pflag Value of type "regexp" that compiles what it is set to).
type kuredRegexp struct{ s string }

func (r *kuredRegexp) String() string { return r.s }
func (r *kuredRegexp) Type() string   { return "regexp" }
func (r *kuredRegexp) Set(v string) error {
	if _, err := regexp.Compile(v); err != nil {
		return err
	}
	r.s = v
	return nil
}

// kuredFlagSet is kured's command line: every flag kured's main defines,
// with its type and default (message templates aside, whose defaults
// rebootwatch does not show).
func kuredFlagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("kured", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	for _, n := range []string{"node-id", "metrics-host", "drain-pod-selector", "prometheus-url", "prefer-no-schedule-taint",
		"reboot-sentinel-command", "slack-hook-url", "slack-channel", "notify-url", "message-template-uncordon",
		"message-template-drain", "message-template-reboot"} {
		fs.String(n, "", "")
	}
	fs.String("reboot-method", "command", "")
	fs.String("ds-namespace", "kube-system", "")
	fs.String("ds-name", "kured", "")
	fs.String("lock-annotation", Annotation, "")
	fs.String("reboot-sentinel", "/var/run/reboot-required", "")
	fs.String("reboot-command", "/bin/systemctl reboot", "")
	fs.String("slack-username", "kured", "")
	fs.String("start-time", "0:00", "")
	fs.String("end-time", "23:59:59", "")
	fs.String("time-zone", "UTC", "")
	fs.String("log-format", "text", "")
	for _, n := range []string{"force-reboot", "alert-filter-match-only", "alert-firing-only", "annotate-nodes"} {
		fs.Bool(n, false, "")
	}
	fs.Int("metrics-port", 8080, "")
	fs.Int("drain-grace-period", -1, "")
	fs.Int("skip-wait-for-delete-timeout", 0, "")
	fs.Int("concurrency", 1, "")
	fs.Int("reboot-signal", 34+5, "")
	for _, n := range []string{"drain-delay", "drain-timeout", "reboot-delay", "lock-ttl", "lock-release-delay"} {
		fs.Duration(n, 0, "")
	}
	fs.Duration("period", time.Hour, "")
	fs.Var(&kuredRegexp{}, "alert-filter-regexp", "")
	fs.StringArray("blocking-pod-selector", nil, "")
	fs.StringSlice("reboot-days", []string{"su", "mo", "tu", "we", "th", "fr", "sa"}, "")
	fs.StringSlice("pre-reboot-node-labels", nil, "")
	fs.StringSlice("post-reboot-node-labels", nil, "")
	return fs
}

// kuredEnvVars maps each of kured's flags to the variable its LoadFromEnv
// reads for it: KURED_ and the flag's name upper-cased, its dashes
// underscores (--lock-ttl, KURED_LOCK_TTL). Computed once: building them
// on every read was 127 of its 444 allocations (BenchmarkParseConfig) and
// a third of TestKuredDaysAgreeWithKuredsParser's CPU.
var kuredEnvVars = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	kuredFlagSet().VisitAll(func(f *pflag.Flag) {
		m[f.Name] = "KURED_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
	})
	return m
})

// ParseConfig reads kured's configuration from its container's command
// line (command and args together: a first word that is not a flag is the
// program) and environment. env maps a variable's name to its literal
// value; names in envFrom are variables whose value comes from elsewhere
// (valueFrom) and cannot be read here.
func ParseConfig(argv []string, env map[string]string, envFrom []string) Config {
	prog := ""
	if len(argv) > 0 && !strings.HasPrefix(argv[0], "-") {
		prog, argv = argv[0], argv[1:]
	}
	return parseConfig(prog, argv, env, envFrom)
}

// parseConfig is ParseConfig with the program ("" when the image's
// entrypoint, kured's, runs) apart from its arguments.
func parseConfig(prog string, args []string, env map[string]string, envFrom []string) Config {
	c := DefaultConfig()
	c.envFrom = envFrom
	for _, v := range envFrom {
		if name, ok := flagOfEnv(v); ok && slices.Contains(kuredFlags, name) {
			c.Problems = append(c.Problems, v+" comes from a Secret, ConfigMap or field reference: its value is not read")
			c.unread[name] = true
		}
	}
	if prog != "" && path.Base(prog) != "kured" {
		// A shell or wrapper runs kured: its arguments are not kured's.
		c.Problems = append(c.Problems, fmt.Sprintf("kured's container runs %q, not kured itself: kured's command line is not read", prog))
		for _, f := range kuredFlags {
			c.unread[f] = true
		}
		return c
	}
	fs := kuredFlagSet()
	fail := func(msg string, flags ...string) {
		if c.StartError == "" {
			c.StartError = msg
		}
		for _, f := range flags {
			c.unread[f] = true
		}
	}
	if err := fs.Parse(args); err != nil {
		var iv *pflag.InvalidValueError
		var vr *pflag.ValueRequiredError
		switch {
		case errors.As(err, &iv):
			fail(err.Error(), iv.GetFlag().Name)
		case errors.As(err, &vr):
			fail(err.Error(), vr.GetFlag().Name)
		default:
			fail(err.Error())
		}
	}
	fs.Visit(func(f *pflag.Flag) { c.From[f.Name] = "arg" })
	// LoadFromEnv: each flag in name order, by the variable named after it
	// (kuredEnvVars); with no variable at all it sets nothing.
	fromEnv := func(f *pflag.Flag) {
		v := kuredEnvVars()[f.Name]
		val, ok := env[v]
		if !ok {
			return
		}
		var err error
		switch f.Value.Type() {
		case "int":
			n, aerr := strconv.Atoi(val)
			if aerr != nil {
				fail("Invalid value for env var named "+v, f.Name)
				return
			}
			if err = fs.Set(f.Name, strconv.Itoa(n)); err != nil {
				fail(fmt.Sprintf("cannot set flag %s from env var named %s", f.Name, v), f.Name)
				return
			}
		case "bool":
			b, perr := strconv.ParseBool(val)
			if perr != nil {
				fail(fmt.Sprintf("Invalid value for %s: %s", v, val), f.Name)
				return
			}
			err = fs.Set(f.Name, strconv.FormatBool(b))
		case "duration":
			if _, perr := time.ParseDuration(val); perr != nil {
				fail(fmt.Sprintf("Invalid duration for %s: %s", v, val), f.Name)
				return
			}
			err = fs.Set(f.Name, val)
		case "string", "regexp", "stringSlice":
			err = fs.Set(f.Name, val)
		default:
			// LoadFromEnv has no case for it: kured prints "Unsupported
			// flag type" and goes on without it.
			c.Problems = append(c.Problems, v+" is ignored by kured (LoadFromEnv cannot set a "+f.Value.Type()+" flag such as --"+f.Name+")")
			return
		}
		if err != nil {
			fail(fmt.Sprintf("cannot set flag %s from env{%s}: %s", f.Name, v, val), f.Name)
			return
		}
		if c.From[f.Name] == "arg" && f.Value.Type() == "stringSlice" {
			c.From[f.Name] = "arg + env " + v
		} else {
			c.From[f.Name] = "env " + v
		}
	}
	if len(env) > 0 {
		fs.VisitAll(fromEnv)
	}
	c.fromFlags(fs)
	c.startChecks(fs)
	if c.StartError != "" {
		c.Problems = append(c.Problems, "kured cannot start with these settings: "+QuoteStartError(c.StartError))
	}
	return c
}

// flagOfEnv is the kured flag a KURED_* variable sets.
func flagOfEnv(v string) (string, bool) {
	rest, ok := strings.CutPrefix(v, "KURED_")
	return strings.ToLower(strings.ReplaceAll(rest, "_", "-")), ok
}

// fromFlags takes the values rebootwatch reads from kured's parsed flags.
func (c *Config) fromFlags(fs *pflag.FlagSet) {
	str := func(n string) string { return fs.Lookup(n).Value.String() }
	dur := func(n string) time.Duration { d, _ := fs.GetDuration(n); return d }
	boo := func(n string) bool { b, _ := fs.GetBool(n); return b }
	c.DSName, c.DSNamespace, c.LockAnnotation = str("ds-name"), str("ds-namespace"), str("lock-annotation")
	c.LockTTL, c.LockReleaseDelay, c.Period = dur("lock-ttl"), dur("lock-release-delay"), dur("period")
	c.DrainTimeout, c.DrainDelay = dur("drain-timeout"), dur("drain-delay")
	c.Concurrency, _ = fs.GetInt("concurrency")
	c.RebootDays, _ = fs.GetStringSlice("reboot-days")
	c.StartTime, c.EndTime, c.TimeZone = str("start-time"), str("end-time"), str("time-zone")
	if sel, _ := fs.GetStringArray("blocking-pod-selector"); len(sel) > 0 {
		c.BlockingPodSelectors = sel
	}
	c.PrometheusURL, c.AlertFilterRegexp = str("prometheus-url"), str("alert-filter-regexp")
	c.AlertFiringOnly, c.AlertFilterMatchOnly, c.AnnotateNodes = boo("alert-firing-only"), boo("alert-filter-match-only"), boo("annotate-nodes")
}

// startChecks are kured's main's checks after its flags and environment,
// in its order: the window (timewindow.New: "Failed to build time window")
// and the rebooter (internal.NewRebooter: "Failed to build rebooter"). A
// check whose input is not read here is skipped.
func (c *Config) startChecks(fs *pflag.FlagSet) {
	if c.StartError != "" {
		return
	}
	if !c.unread["reboot-days"] && !c.unread["start-time"] && !c.unread["end-time"] && !c.unread["time-zone"] {
		if _, err := timewindow.Parse(c.RebootDays, c.StartTime, c.EndTime, c.TimeZone); err != nil {
			c.StartError = "Failed to build time window: " + err.Error()
			return
		}
	}
	if c.unreadEnv("KURED_REBOOT_METHOD") {
		return
	}
	var err error
	switch m := fs.Lookup("reboot-method").Value.String(); m {
	case "command":
		if fs.Lookup("reboot-command").Value.String() == "" && !c.unreadEnv("KURED_REBOOT_COMMAND") {
			err = errors.New("no reboot command specified")
		}
	case "signal":
		if sig, _ := fs.GetInt("reboot-signal"); sig < 1 && !c.unreadEnv("KURED_REBOOT_SIGNAL") {
			err = fmt.Errorf("invalid signal: %v", sig)
		}
	default:
		err = fmt.Errorf("invalid reboot-method configured %s, expected signal or command", m)
	}
	if err != nil {
		c.StartError = "Failed to build rebooter: " + err.Error()
	}
}

// unreadEnv reports whether variable v comes from a reference whose value
// is not read here.
func (c *Config) unreadEnv(v string) bool { return slices.Contains(c.envFrom, v) }

// PrometheusOf picks, of the settings of several kured DaemonSets (one per
// node pool), the one whose Prometheus settings (--prometheus-url and the
// alert blocker's) every DaemonSet that sets a --prometheus-url shares, so
// that one Prometheus read answers for all of them; nil when none sets one.
// When they differ, conflict says how, and no settings are picked: which
// pool's Prometheus to follow is not guessed.
func PrometheusOf(cfgs []*Config, names []string) (cfg *Config, conflict string) {
	type key struct {
		url, filter           string
		matchOnly, firingOnly bool
	}
	var first key
	var firstName string
	for i, c := range cfgs {
		if c == nil || c.PrometheusURL == "" {
			continue
		}
		k := key{c.PrometheusURL, c.AlertFilterRegexp, c.AlertFilterMatchOnly, c.AlertFiringOnly}
		if cfg == nil {
			cfg, first, firstName = c, k, names[i]
			continue
		}
		if k != first {
			return nil, fmt.Sprintf("kured's DaemonSets %s and %s name different Prometheus settings (--prometheus-url, --alert-filter-regexp, --alert-filter-match-only, --alert-firing-only): which pool's to read is not guessed — pass --prometheus-url (and --prometheus-alerts)", firstName, names[i])
		}
	}
	return cfg, ""
}
