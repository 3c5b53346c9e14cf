package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Version is set at build time with -ldflags "-X .../internal/cli.Version=…";
// left at "dev", the module version from the build info is shown instead.
var Version = "dev"

// VersionInfo is what `rebootwatch version` prints (-o json: this document).
type VersionInfo struct {
	// Version is the module version (v1.2.3 from `go install …@v1.2.3`,
	// a pseudo-version from a git checkout, "(devel)" without VCS
	// information) or the -ldflags Version.
	Version string `json:"version"`
	// Commit is the VCS revision the binary was built from ("" when the
	// build had no VCS information, e.g. -buildvcs=false).
	Commit string `json:"commit"`
	// CommitTime is the revision's time (RFC 3339), when known.
	CommitTime string `json:"commitTime,omitempty"`
	// Modified says the working tree had uncommitted changes.
	Modified  bool   `json:"modified"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// BuildVersion reads the version from the binary's build information
// (runtime/debug.ReadBuildInfo).
func BuildVersion() VersionInfo {
	return versionFrom(debug.ReadBuildInfo())
}

func versionFrom(bi *debug.BuildInfo, ok bool) VersionInfo {
	v := VersionInfo{Version: Version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if !ok || bi == nil {
		return v
	}
	if bi.GoVersion != "" {
		v.GoVersion = bi.GoVersion
	}
	if Version == "dev" && bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// Text is the one-line form: rebootwatch v1.2.3 (commit 0123abc, modified) go1.26.7 linux/amd64.
func (v VersionInfo) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rebootwatch %s", v.Version)
	switch {
	case v.Commit == "":
		b.WriteString(" (commit unknown)")
	case v.Modified:
		fmt.Fprintf(&b, " (commit %s, modified)", v.Commit)
	default:
		fmt.Fprintf(&b, " (commit %s)", v.Commit)
	}
	fmt.Fprintf(&b, " %s %s", v.GoVersion, v.Platform)
	return b.String()
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
	fmt.Fprintln(r.env.Stdout, v.Text())
	return ExitOK
}
