// Package kubeconfig is the one place where rebootwatch turns kubectl's
// cluster flags and the environment into a client configuration: the CLI
// (`rebootwatch`, the `kubectl rebootwatch` plugin) and the agent all load
// through Loader. The CLI's flags are client-go's clientcmd override flags
// (subpackage kubectlflags binds them and maps them to clientcmd
// overrides), so they are spelled and mean what kubectl's do (--kubeconfig,
// --context, --cluster, --user, --as, --as-group, --token, --server, …);
// the loading follows
// kubectl's rules: --kubeconfig, else $KUBECONFIG (a path list), else
// ~/.kube/config. This package imports only client-go (never
// k8s.io/cli-runtime, whose kustomize and printers would nearly triple the
// binaries).
//
// Two deliberate differences from kubectl: there is no silent fallback to a
// default server (http://localhost:8080 or $KUBERNETES_MASTER) — without a
// kubeconfig, and without --server, loading is an error that says what to
// do; and the environment (KUBECONFIG, HOME) is read through an injected
// function so tests never depend on the process's.
//
// It must not open connections, start informers or decide anything about
// clusters: it only answers "which server, which credentials, which
// contexts".
package kubeconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ErrNoClusterConfig is returned when there is no kubeconfig to load and
// nothing else names a server. Nothing ever falls back to a default server.
var ErrNoClusterConfig = errors.New("no cluster configuration")

// noConfig is an ErrNoClusterConfig with its own words.
type noConfig struct{ msg string }

func (e noConfig) Error() string { return e.msg }
func (e noConfig) Unwrap() error { return ErrNoClusterConfig }

func noConfigf(format string, args ...any) error { return noConfig{fmt.Sprintf(format, args...)} }

// Loader loads client configurations the way kubectl does.
type Loader struct {
	// Kubeconfig is --kubeconfig ("" when not given).
	Kubeconfig string
	// Overrides carries kubectl's other cluster flags (--cluster, --user,
	// --as, --token, --server, …; see kubectlflags), applied to every
	// context; nil when there are none. Its CurrentContext is not read:
	// callers pass the context explicitly.
	Overrides *clientcmd.ConfigOverrides
	// Getenv reads KUBECONFIG and HOME (os.Getenv when nil).
	Getenv func(string) string
}

func (l Loader) getenv(k string) string {
	if l.Getenv == nil {
		return os.Getenv(k)
	}
	return l.Getenv(k)
}

// Explicit says whether a kubeconfig was named: --kubeconfig or $KUBECONFIG.
func (l Loader) Explicit() bool {
	return l.Kubeconfig != "" || l.getenv(clientcmd.RecommendedConfigPathEnvVar) != ""
}

// Origin describes where the configuration is read from (never a credential).
func (l Loader) Origin() string {
	switch {
	case l.Kubeconfig != "":
		return "kubeconfig " + l.Kubeconfig
	case l.getenv(clientcmd.RecommendedConfigPathEnvVar) != "":
		return "KUBECONFIG " + l.getenv(clientcmd.RecommendedConfigPathEnvVar)
	default:
		return "kubeconfig " + filepath.Join(l.getenv("HOME"), clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)
	}
}

// server is --server, when given.
func (l Loader) server() string {
	if l.Overrides == nil {
		return ""
	}
	return l.Overrides.ClusterInfo.Server
}

// rules returns the loading rules: --kubeconfig (which must exist), else
// $KUBECONFIG, else ~/.kube/config (which must exist unless --server names
// the server).
func (l Loader) rules() (*clientcmd.ClientConfigLoadingRules, error) {
	rules := &clientcmd.ClientConfigLoadingRules{}
	switch {
	case l.Kubeconfig != "":
		if _, err := os.Stat(l.Kubeconfig); err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, fmt.Errorf("kubeconfig %s: %w", l.Kubeconfig, err)
		}
		rules.ExplicitPath = l.Kubeconfig
	case l.getenv(clientcmd.RecommendedConfigPathEnvVar) != "":
		rules.Precedence = filepath.SplitList(l.getenv(clientcmd.RecommendedConfigPathEnvVar))
		// kubectl skips the files of the list that do not exist; when none
		// does, there is nothing to load, and saying "no context" would
		// hide the cause: the path is wrong.
		if missing := missingFiles(rules.Precedence); len(missing) == len(nonEmpty(rules.Precedence)) {
			if l.server() != "" {
				return rules, nil
			}
			what := "does not exist"
			if len(missing) > 1 {
				what = "do not exist"
			}
			return nil, noConfigf("KUBECONFIG names %s, which %s (use --kubeconfig, fix KUBECONFIG, or --demo to try rebootwatch without a cluster)", strings.Join(missing, ", "), what)
		}
	default:
		def := filepath.Join(l.getenv("HOME"), clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)
		if _, err := os.Stat(def); err != nil {
			if l.server() != "" {
				return rules, nil // --server (and its credentials) stand alone, as with kubectl
			}
			return nil, noConfigf("no kubeconfig: %s does not exist and KUBECONFIG is not set (use --kubeconfig, or --demo to try rebootwatch without a cluster)", def)
		}
		rules.ExplicitPath = def
	}
	return rules, nil
}

// Raw loads the merged kubeconfig.
func (l Loader) Raw() (*clientcmdapi.Config, error) {
	rules, err := l.rules()
	if err != nil {
		return nil, err
	}
	raw, err := rules.Load()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return raw, nil
}

// overrides returns the overrides for one context.
func (l Loader) overrides(context string) *clientcmd.ConfigOverrides {
	o := &clientcmd.ConfigOverrides{}
	if l.Overrides != nil {
		*o = *l.Overrides
	}
	o.CurrentContext = context
	return o
}

// RESTConfig returns the configuration of one context ("" is the
// kubeconfig's current context) with kubectl's flags applied, and the
// context's name. With --server and no context at all, the name is the
// server's address.
func (l Loader) RESTConfig(context string) (*rest.Config, string, error) {
	raw, err := l.Raw()
	if err != nil {
		return nil, "", err
	}
	name := context
	if name == "" {
		name = raw.CurrentContext
	}
	switch _, ok := raw.Contexts[name]; {
	case name == "" && l.server() != "":
		name = l.server()
	case name == "" && len(raw.Contexts) == 0:
		return nil, "", noConfigf("%s holds no usable cluster (no context)", l.Origin())
	case name == "":
		return nil, "", errors.New("kubeconfig has no current context: pass --context")
	case !ok:
		return nil, "", fmt.Errorf("kubeconfig has no context %q%s", name, knownContexts(raw))
	}
	// No in-cluster and no default-server fallback here: an empty or
	// server-less kubeconfig is an error.
	cc := clientcmd.NewNonInteractiveClientConfig(*raw, context, l.overrides(context), nil)
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, "", noConfigf("%s holds no usable cluster", l.Origin())
		}
		return nil, "", fmt.Errorf("kubeconfig context %q: %w", name, err)
	}
	if strings.TrimSpace(cfg.Host) == "" {
		return nil, "", noConfigf("kubeconfig context %q names no API server", name)
	}
	return cfg, name, nil
}

// Contexts resolves the contexts to open for --context a,b,c or
// --all-contexts: with all, every context of the kubeconfig, sorted;
// otherwise the comma list (see Split), each checked to exist.
func (l Loader) Contexts(list string, all bool) ([]string, error) {
	raw, err := l.Raw()
	if err != nil {
		return nil, err
	}
	if all {
		out := make([]string, 0, len(raw.Contexts))
		for name := range raw.Contexts {
			out = append(out, name)
		}
		sort.Strings(out)
		if len(out) == 0 {
			return nil, errors.New("--all-contexts: the kubeconfig has no context")
		}
		return out, nil
	}
	out := Split(list)
	if len(out) == 0 {
		return nil, fmt.Errorf("--context %q names no context", list)
	}
	var missing []string
	for _, c := range out {
		if _, ok := raw.Contexts[c]; !ok {
			missing = append(missing, fmt.Sprintf("%q", c))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("kubeconfig has no context %s%s", strings.Join(missing, ", "), knownContexts(raw))
	}
	return out, nil
}

// knownContexts says which contexts the kubeconfig has, for an error about
// one it lacks: " (its contexts: a, b)", or " (it has none)". At most 20
// are named; the rest are counted.
func knownContexts(raw *clientcmdapi.Config) string {
	names := make([]string, 0, len(raw.Contexts))
	for n := range raw.Contexts {
		names = append(names, fmt.Sprintf("%q", n))
	}
	if len(names) == 0 {
		return " (it has none)"
	}
	sort.Strings(names)
	const most = 20
	more := ""
	if len(names) > most {
		more = fmt.Sprintf(" and %d more", len(names)-most)
		names = names[:most]
	}
	return " (its contexts: " + strings.Join(names, ", ") + more + ")"
}

// missingFiles returns the paths of list (empty entries skipped) that do
// not exist.
func missingFiles(list []string) []string {
	var out []string
	for _, p := range nonEmpty(list) {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			out = append(out, p)
		}
	}
	return out
}

// nonEmpty drops the empty entries of a path list ("a::b").
func nonEmpty(list []string) []string {
	var out []string
	for _, p := range list {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// ContextNames lists the kubeconfig's contexts, sorted (shell completion);
// nil when it cannot be read.
func (l Loader) ContextNames() []string {
	names, err := l.Contexts("", true)
	if err != nil {
		return nil
	}
	return names
}

// Split parses a --context comma list: trimmed, empty items dropped,
// duplicates removed, order kept.
func Split(list string) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range strings.Split(list, ",") {
		c = strings.TrimSpace(c)
		if c == "" || seen[c] {
			continue
		}
		seen[c] = true
		out = append(out, c)
	}
	return out
}

// InCluster returns the configuration of a process that may run in a pod
// (the agent): a kubeconfig when one is named (--kubeconfig or
// $KUBECONFIG), else the in-cluster service account (whose token file
// client-go re-reads, so rotated tokens are picked up). ~/.kube/config is
// not looked at: a pod has none, and an agent must not pick up a
// developer's. inCluster is rest.InClusterConfig outside tests. The origin
// says where the configuration came from, never a credential.
func (l Loader) InCluster(context string, inCluster func() (*rest.Config, error)) (*rest.Config, string, error) {
	if l.Explicit() {
		cfg, name, err := l.RESTConfig(context)
		if err != nil {
			if errors.Is(err, ErrNoClusterConfig) {
				return nil, "", noConfigf("no cluster configuration: %v", err)
			}
			return nil, "", fmt.Errorf("%s: %w", l.Origin(), err)
		}
		origin := l.Origin()
		if context != "" {
			origin += " context " + name
		}
		return cfg, origin, nil
	}
	if context != "" {
		return nil, "", fmt.Errorf("--context %q needs --kubeconfig or KUBECONFIG", context)
	}
	cfg, err := inCluster()
	if err != nil {
		if errors.Is(err, rest.ErrNotInCluster) {
			return nil, "", noConfigf("no cluster configuration: pass --kubeconfig or set KUBECONFIG outside a cluster; " +
				"in a pod the service-account token and KUBERNETES_SERVICE_HOST/PORT must be present")
		}
		return nil, "", fmt.Errorf("in-cluster config: %w", err)
	}
	if cfg == nil || strings.TrimSpace(cfg.Host) == "" {
		return nil, "", noConfigf("no cluster configuration: the in-cluster config names no API server")
	}
	return cfg, "in-cluster service account", nil
}
