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
