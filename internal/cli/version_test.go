package cli

import (
	"context"
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// The version comes from the build information: module version, VCS
// commit (and whether the tree was modified) and Go version.
func TestVersionFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.7", Main: debug.Module{Path: "github.com/rebootwatch/rebootwatch", Version: "v1.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.time", Value: "2026-11-30T09:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	v := versionFrom(bi, true)
	if v.Version != "v1.4.0" || v.Commit != "0123456789abcdef" || !v.Modified || v.CommitTime != "2026-11-30T09:00:00Z" || v.GoVersion != "go1.26.7" {
		t.Fatalf("%+v", v)
	}
	if got := v.Text(); got != "rebootwatch v1.4.0 (commit 0123456789abcdef, modified) go1.26.7 "+runtime.GOOS+"/"+runtime.GOARCH {
		t.Fatalf("text %q", got)
	}
	if got := versionFrom(nil, false).Text(); !strings.Contains(got, "commit unknown") || !strings.Contains(got, runtime.Version()) {
		t.Fatalf("no build info: %q", got)
	}
}

func TestVersionJSON(t *testing.T) {
	for _, args := range [][]string{{"version", "-o", "json"}, {"-o", "json", "--version"}} {
		env, out, errb := testEnv(demoStart)
		if code := run(context.Background(), args, env); code != ExitOK {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errb)
		}
		var v map[string]any
		if err := json.Unmarshal(out.Bytes(), &v); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		for _, k := range []string{"version", "commit", "modified", "goVersion", "platform"} {
			if _, ok := v[k]; !ok {
				t.Errorf("%v: no %q in %s", args, k, out)
			}
		}
		if v["goVersion"] != runtime.Version() {
			t.Errorf("goVersion %v, want %s", v["goVersion"], runtime.Version())
		}
	}
}
