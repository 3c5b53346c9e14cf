package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// The version comes from the build information: module version, VCS
// commit (and whether the tree was modified) and Go version; an -ldflags
// version wins over the module version.
func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.7", Main: debug.Module{Path: "github.com/rebootwatch/rebootwatch", Version: "v1.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.time", Value: "2026-11-30T09:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	v := From("dev", bi, true)
	if v.Version != "v1.4.0" || v.Commit != "0123456789abcdef" || !v.Modified || v.CommitTime != "2026-11-30T09:00:00Z" || v.GoVersion != "go1.26.7" {
		t.Fatalf("%+v", v)
	}
	if got := v.Text("rebootwatch-agent"); got != "rebootwatch-agent v1.4.0 (commit 0123456789abcdef, modified) go1.26.7 "+runtime.GOOS+"/"+runtime.GOARCH {
		t.Fatalf("text %q", got)
	}
	if got := From("v2.0.0", bi, true).Version; got != "v2.0.0" {
		t.Errorf("ldflags version: %q, want v2.0.0", got)
	}
	if got := From("dev", nil, false).Text("rebootwatch"); !strings.Contains(got, "commit unknown") || !strings.Contains(got, runtime.Version()) {
		t.Fatalf("no build info: %q", got)
	}
}
