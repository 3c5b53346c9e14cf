package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

const rootLong = `rebootwatch — watch and fix Kubernetes node reboot cycles (kured, fleetlock, Longhorn).

With no command it opens the live dashboard of one cluster (--context a,b or
--all-contexts: a list of clusters). --snapshot prints a one-shot report
instead; watch streams one line per change; release, reap and uncordon are
the scriptable actions.

Exit codes of --snapshot and watch: 0 nothing needs attention, 1 the cluster
could not be read (or a usage error), 2 something needs attention, 130
interrupted.

The cluster flags are kubectl's own (--kubeconfig, --context, --cluster,
--user, --as, --token, --server, …; KUBECONFIG is honoured), plus --context
a,b,c and --all-contexts to open several clusters at once.`

const rootExample = `  # Try it with no cluster: the embedded demo
  rebootwatch --demo

  # A one-shot report, as JSON (exit 2 when something needs attention)
  rebootwatch --snapshot -o json

  # Every cluster of the kubeconfig
  rebootwatch --snapshot --all-contexts

  # Follow a maintenance window until every node is done
  rebootwatch watch --until-done --stall-after 30m

  # Release a lock left behind by a node that finished
  rebootwatch release --kind kured --dry-run`

// newRoot returns the command tree: the root is the dashboard (and
// --snapshot), with watch, release, reap, uncordon, version and completion.
func (r *runner) newRoot(displayName string) *cobra.Command {
	var snapshot, version bool
	root := &cobra.Command{
		Use:           "rebootwatch",
		Short:         "Watch and fix Kubernetes node reboot cycles (kured, fleetlock, Longhorn)",
		Long:          rootLong,
		Example:       rootExample,
		Args:          cobra.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		// Each mode validates what it uses; the shared flags are checked
		// once, before any command runs.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := r.c.validate(); err != nil {
				return failed(r.env, err)
			}
			quietClientGoLevel(r.env, r.c.Verbosity)
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case version:
				r.code = r.version()
			case snapshot:
				r.code = runSnapshot(cmd.Context(), r.env, r.c)
			case cmd.Flags().Changed("output"):
				// The dashboard has no output format: -o there was meant for a report.
				return failed(r.env, fmt.Errorf("-o %s: the dashboard has no output format; -o is for --snapshot, watch, release, reap, uncordon and version (rebootwatch --snapshot -o %s)", r.c.Output, r.c.Output))
			default:
				r.code = runDashboard(cmd.Context(), r.env, r.c)
			}
			return nil
		},
	}
	if displayName != "" {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: displayName}
	}
	defer func() {
		if displayName == "" {
			return
		}
		// The examples name the command as the plugin's user types it.
		for _, c := range append([]*cobra.Command{root}, root.Commands()...) {
			c.Example = strings.ReplaceAll(c.Example, "  rebootwatch ", "  "+displayName+" ")
		}
	}()
	root.CompletionOptions.DisableDefaultCmd = true
	root.SuggestionsMinimumDistance = 2
	root.SetFlagErrorFunc(flagError)
	r.c.Register(root.PersistentFlags())
	root.Flags().BoolVar(&snapshot, "snapshot", false, "Print a one-shot report and exit (exit 0 ok, 1 unreadable, 2 needs attention)")
	root.Flags().BoolVar(&version, "version", false, "Print the version and exit (as the version command)")
	r.completions(root)
	root.AddCommand(r.newWatch(), r.newRelease(), r.newReap(), r.newUncordon(), r.newVersion(), r.newCompletion(root))
	root.AddCommand(r.newFleet())
	return root
}
