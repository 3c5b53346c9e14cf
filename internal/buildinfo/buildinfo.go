// Package buildinfo says which release a binary is, for every binary's
// --version (rebootwatch, kubectl-rebootwatch, rebootwatch-agent): the
// version the release build injects with -ldflags (.goreleaser.yaml,
// deploy/Dockerfile), else the module version Go records in the binary
// (v1.2.3 after `go install …@v1.2.3`), with the VCS commit and the Go
// version. It must stay a leaf: it imports nothing of ours and reads nothing
// but the binary's own build information.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is the release version, set by the release build with
// -ldflags "-X github.com/rebootwatch/rebootwatch/internal/buildinfo.Version=v1.2.3".
// Left at "dev", the module version from the build information is shown.
var Version = "dev"

// LdflagsVar is the -X name of Version, for the builds that set it.
const LdflagsVar = "github.com/rebootwatch/rebootwatch/internal/buildinfo.Version"

// Info is what `rebootwatch version` and every binary's --version print
// (-o json: this document).
type Info struct {
	// Version is the -ldflags Version, else the module version (v1.2.3 from
	// `go install …@v1.2.3`, a pseudo-version from a git checkout,
	// "(devel)" without VCS information).
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

// Read returns this binary's Info (runtime/debug.ReadBuildInfo).
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	return From(Version, bi, ok)
}

// From builds the Info of a binary whose -ldflags version is ldflags ("dev"
// when none was set) and whose build information is bi (ok false: none).
func From(ldflags string, bi *debug.BuildInfo, ok bool) Info {
	v := Info{Version: ldflags, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if !ok || bi == nil {
		return v
	}
	if bi.GoVersion != "" {
		v.GoVersion = bi.GoVersion
	}
	if (ldflags == "dev" || ldflags == "") && bi.Main.Version != "" {
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

// Text is the one-line form, program first:
// rebootwatch v1.2.3 (commit 0123abc, modified) go1.26.7 linux/amd64.
func (v Info) Text(program string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", program, v.Version)
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
