package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rebootwatch/rebootwatch/internal/buildinfo"
)

// VersionInfo is what `rebootwatch version` prints (-o json: this
// document): the release version (internal/buildinfo), commit and Go version.
type VersionInfo = buildinfo.Info

// BuildVersion reads the version from the binary's build information
// (runtime/debug.ReadBuildInfo) and the release build's -ldflags.
func BuildVersion() VersionInfo {
	return buildinfo.Read()
}

// newVersion is `rebootwatch version` (also `rebootwatch --version`).
func (r *runner) newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version [-o text|json]",
		Short: "Print the version, the commit it was built from and the Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r.code = r.version()
			return nil
		},
	}
}

// version prints the version as text or JSON.
func (r *runner) version() int {
	v := BuildVersion()
	if r.c.Output == "json" {
		if err := writeJSON(r.env.Stdout, v); err != nil {
			return fail(r.env, err)
		}
		return ExitOK
	}
	fmt.Fprintln(r.env.Stdout, v.Text("rebootwatch"))
	return ExitOK
}
