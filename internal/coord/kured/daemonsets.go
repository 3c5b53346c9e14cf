package kured

import (
	"fmt"
	"strings"
)

// DaemonSetRef is a kured DaemonSet the user named (--kured-daemonset):
// trusted as kured's, whatever it runs; one per node pool where kured runs
// as several DaemonSets.
type DaemonSetRef struct{ Namespace, Name string }

func (r DaemonSetRef) String() string { return r.Namespace + "/" + r.Name }

// ParseDaemonSets parses --kured-daemonset's value: one or more
// namespace/name, comma-separated (a repeated flag joins its values with
// commas). Blanks around an entry are dropped and a repeat is kept once;
// an empty entry or one that is not namespace/name is an error. "" names
// none (discovery).
func ParseDaemonSets(s string) ([]DaemonSetRef, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []DaemonSetRef
	seen := map[DaemonSetRef]bool{}
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			return nil, fmt.Errorf("kured DaemonSets %q: an empty entry (want namespace/name[,namespace/name…])", s)
		}
		ns, name, ok := strings.Cut(e, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("kured DaemonSet %q: want namespace/name", e)
		}
		r := DaemonSetRef{ns, name}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out, nil
}

// JoinDaemonSets is ParseDaemonSets' inverse: namespace/name, comma-separated.
func JoinDaemonSets(refs []DaemonSetRef) string {
	parts := make([]string, len(refs))
	for i, r := range refs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// DaemonSetsFlag is the --kured-daemonset flag of the CLI and the agent (a
// pflag.Value): kured's DaemonSets as namespace/name, one per node pool,
// the flag repeated or its value comma-separated, or both, all kept in the
// string it points to (as "a/x,b/y"; checked by ParseDaemonSets when the
// flags are validated). Given, it replaces the default.
type DaemonSetsFlag struct {
	p   *string
	set bool
}

// NewDaemonSetsFlag is the flag kept in *p (its default the value there).
func NewDaemonSetsFlag(p *string) *DaemonSetsFlag { return &DaemonSetsFlag{p: p} }

// Type names the flag's value in --help.
func (f *DaemonSetsFlag) Type() string { return "ns/name,..." }

func (f *DaemonSetsFlag) String() string {
	if f == nil || f.p == nil {
		return ""
	}
	return *f.p
}

// Set adds v to what an earlier --kured-daemonset gave (the default is
// replaced).
func (f *DaemonSetsFlag) Set(v string) error {
	if f.set && *f.p != "" {
		v = *f.p + "," + v
	}
	*f.p, f.set = v, true
	return nil
}
