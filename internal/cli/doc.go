// Package cli is the command line of `rebootwatch` (and of the kubectl
// plugin `kubectl rebootwatch`): a cobra command tree, one file per command
// — root.go (the dashboard, and --snapshot), watch.go, release.go, reap.go,
// uncordon.go, version.go, completion.go — whose persistent flags are
// kubectl's cluster flags (client-go's clientcmd flags, through
// internal/kubeconfig/kubectlflags) and rebootwatch's shared ones (flags.go). A command
// opens a cluster session (internal/live, internal/multi) and runs one mode,
// mapping the outcome to an exit code (DESIGN §7, §9). Main(args, Env) is
// the seam tests drive.
//
// It must not hold domain logic: phases and verdicts live in model and
// internal/lock, rendering in tui and internal/report. Errors are one clear
// line on stderr and an exit code (a usage error: kubectl's two lines),
// never a panic or a stack trace.
package cli
