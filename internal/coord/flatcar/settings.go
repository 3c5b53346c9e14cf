// Package flatcar is the Flatcar Linux Update Operator (FLUO) as a reboot
// coordinator: it has no lock object; its one slot (defaultMaxRebootingNodes
// = 1) is computed from every node's annotations and labels under the
// prefix flatcar-linux-update.v1.flatcar-linux.net/. It holds the keys FLUO
// writes, its settings as read from the operator Deployment's args and env
// (--before-reboot-annotations, --after-reboot-annotations,
// --reboot-window-start/-length), each node's place in FLUO's cycle, the
// blockers (an agent that did not run after its node's reboot, an unset
// before/after-reboot check naming the annotation, reboot-paused, the
// window, the slot held by a node whose kubelet is gone, the slot held by
// another node), the uncordon it allows (only the agent's own cordon,
// AgentCordon, while its update-agent pod does not run: DESIGN §6 rule 9),
// and its one-shot read (the nodes, the operator's Deployment, and the
// update-agent pod on the nodes whose judging needs it).
//
// Read from flatcar/flatcar-linux-update-operator at commit
// 8dd83d71a7d4e5461c5bd4d6e5dae52397afc7f0 (v0.10.0-rc2-10-g8dd83d71):
// pkg/constants/constants.go, pkg/operator/operator.go (process and its
// selectors), pkg/operator/periodic.go, pkg/agent/agent.go (process),
// cmd/update-operator/main.go and vendor/github.com/coreos/pkg/flagutil
// (docs/coordinators-suc-fluo.md).
//
// It must never start a reboot or write an annotation or label FLUO owns;
// take agent-made-unschedulable=true alone for the agent's cordon; read an
// update-agent pod it could not read as not running;
// judge from a node list that is not fresh and complete; read a setting it
// could not read as "none" (an unread operator Deployment makes the checks
// unknown, never "no check"); or do I/O outside source.go and demo.go
// (whose demo scenario writes to the embedded demo cluster only).
package flatcar

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Settings are the operator's settings as its Deployment gives them.
type Settings struct {
	// Deployment is the operator's namespace/name.
	Deployment string
	// Before and After are the annotations that must be "true" before and
	// after a reboot (an empty list: no check).
	Before, After []string
	// WindowStart and WindowLength are the reboot window as configured;
	// the window exists only when both are set (operator.New).
	WindowStart, WindowLength string
	// Window is the parsed window; nil when none is configured.
	Window *Periodic
	// Unknown says why the settings are not known (a value from a Secret
	// or ConfigMap, an unknown flag, a bad window the operator would not
	// start with); "" when they are.
	Unknown string
}

// operatorFlags are the flags update-operator's main registers (its own
// and klog's), with whether they are boolean, for Go's flag parsing.
var operatorFlags = map[string]bool{
	"kubeconfig": false, "reboot-window-start": false, "reboot-window-length": false, "version": true,
	"before-reboot-annotations": false, "after-reboot-annotations": false,
	// klog.InitFlags.
	"v": false, "vmodule": false, "logtostderr": true, "alsologtostderr": true, "log_dir": false,
	"log_file": false, "log_file_max_size": false, "skip_headers": true, "skip_log_headers": true,
	"add_dir_header": true, "one_output": true, "stderrthreshold": false, "log_backtrace_at": false,
	"legacy_stderr_threshold_behavior": true,
}

type sliceFlag struct{ v *[]string }

func (s sliceFlag) String() string { return "" }

// Set is flagutil.StringSliceFlag.Set: the last value wins, split on
// commas with nothing trimmed.
func (s sliceFlag) Set(v string) error { *s.v = strings.Split(v, ","); return nil }

type strFlag struct{ v *string }

func (s strFlag) String() string { return "" }
func (s strFlag) Set(v string) error {
	*s.v = v
	return nil
}

type boolFlag struct{}

func (boolFlag) String() string      { return "false" }
func (boolFlag) Set(string) error    { return nil }
func (boolFlag) IsBoolFlag() bool    { return true }
func (s strFlag) IsBoolFlag() bool   { return false }
func (s sliceFlag) IsBoolFlag() bool { return false }

// SettingsFrom reads the operator's settings from its container: command
// after the binary, then args (as Kubernetes runs them), parsed as Go's
// flag package parses them, then the UPDATE_OPERATOR_* env for flags the
// command line left unset (flagutil.SetFlagsFromEnv).
func SettingsFrom(namespace, name string, c *corev1.Container) Settings {
	s := Settings{Deployment: namespace + "/" + name}
	fs := flag.NewFlagSet("update-operator", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var dummy string
	for f, isBool := range operatorFlags {
		switch {
		case f == "before-reboot-annotations":
			fs.Var(sliceFlag{&s.Before}, f, "")
		case f == "after-reboot-annotations":
			fs.Var(sliceFlag{&s.After}, f, "")
		case f == "reboot-window-start":
			fs.Var(strFlag{&s.WindowStart}, f, "")
		case f == "reboot-window-length":
			fs.Var(strFlag{&s.WindowLength}, f, "")
		case isBool:
			fs.Var(boolFlag{}, f, "")
		default:
			fs.Var(strFlag{&dummy}, f, "")
		}
	}
	var argv []string
	if len(c.Command) > 1 {
		argv = append(argv, c.Command[1:]...)
	}
	argv = append(argv, c.Args...)
	if err := fs.Parse(argv); err != nil {
		s.Unknown = fmt.Sprintf("the operator's arguments do not parse as its flags do (%v): it would not start", err)
		return s
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, f := range []string{"before-reboot-annotations", "after-reboot-annotations", "reboot-window-start", "reboot-window-length"} {
		if set[f] {
			continue
		}
		key := "UPDATE_OPERATOR_" + strings.ToUpper(strings.ReplaceAll(f, "-", "_"))
		for _, e := range c.Env {
			if e.Name != key {
				continue
			}
			if e.ValueFrom != nil {
				s.Unknown = key + " comes from " + valueFrom(e.ValueFrom) + ", which is not read"
				return s
			}
			if e.Value != "" {
				_ = fs.Set(f, e.Value)
			}
		}
	}
	if s.WindowStart != "" && s.WindowLength != "" {
		w, err := ParsePeriodic(s.WindowStart, s.WindowLength)
		if err != nil {
			s.Unknown = fmt.Sprintf("reboot window %q for %q: %v (the operator does not start with it)", s.WindowStart, s.WindowLength, err)
			return s
		}
		s.Window = w
	}
	return s
}

func valueFrom(v *corev1.EnvVarSource) string {
	switch {
	case v.ConfigMapKeyRef != nil:
		return "ConfigMap " + v.ConfigMapKeyRef.Name
	case v.SecretKeyRef != nil:
		return "Secret " + v.SecretKeyRef.Name
	}
	return "a field reference"
}

// Periodic is FLUO's reboot window (pkg/operator/periodic.go): a start
// ("Mon 14:00" weekly, or "11:00" daily) and a length, in the operator's
// local time (its container's zone, UTC in FLUO's image).
type Periodic struct {
	weekday      int // -1: daily
	hour, minute int
	length       time.Duration
	spec         string
}

var weekdays = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

// ParsePeriodic reads a window as ParsePeriodic upstream does: one or two
// fields (an optional three-letter weekday, any case, then H:M), a Go
// duration not negative and shorter than the period.
func ParsePeriodic(start, length string) (*Periodic, error) {
	p := &Periodic{weekday: -1, spec: start + " for " + length}
	f := strings.Fields(start)
	if len(f) == 0 {
		return nil, fmt.Errorf("wrong number of fields")
	}
	clock := f[0]
	if len(f) == 2 {
		d, ok := weekdays[strings.ToLower(f[0])]
		if !ok {
			return nil, fmt.Errorf("invalid day of week %q", f[0])
		}
		p.weekday, clock = d, f[1]
	}
	if n, err := fmt.Sscanf(clock, "%d:%d", &p.hour, &p.minute); n != 2 || err != nil {
		return nil, fmt.Errorf("invalid time of day %q", clock)
	}
	if p.hour < 0 || p.hour > 23 || p.minute < 0 || p.minute > 59 {
		return nil, fmt.Errorf("invalid time of day %q", clock)
	}
	d, err := time.ParseDuration(length)
	if err != nil {
		return nil, err
	}
	if d < 0 {
		return nil, fmt.Errorf("duration cannot be negative")
	}
	if (p.weekday == -1 && d >= 24*time.Hour) || d >= 7*24*time.Hour {
		return nil, fmt.Errorf("duration cannot exceed period")
	}
	p.length = d
	return p, nil
}

// String is the window as configured.
func (p *Periodic) String() string { return p.spec }

func (p *Periodic) startOn(ref time.Time, days int) time.Time {
	return time.Date(ref.Year(), ref.Month(), ref.Day()+days, p.hour, p.minute, 0, 0, ref.Location())
}

// previousStart is the start of the period at or before ref (Previous).
func (p *Periodic) previousStart(ref time.Time) time.Time {
	if p.weekday >= 0 {
		thisWeek := p.startOn(ref, p.weekday-int(ref.Weekday()))
		if !ref.Before(thisWeek) {
			return thisWeek
		}
		return thisWeek.AddDate(0, 0, -7)
	}
	today := p.startOn(ref, 0)
	if !ref.Before(today) {
		return today
	}
	return today.AddDate(0, 0, -1)
}

// Inside reports whether the operator at t is inside the window
// (insideRebootWindow: t before the end of the most recent period).
func (p *Periodic) Inside(t time.Time) bool {
	return t.Before(p.previousStart(t).Add(p.length))
}

// NextStart is the next period's start after t.
func (p *Periodic) NextStart(t time.Time) time.Time {
	if p.weekday >= 0 {
		return p.previousStart(t).AddDate(0, 0, 7)
	}
	return p.previousStart(t).AddDate(0, 0, 1)
}
