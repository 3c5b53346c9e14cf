package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/lock"
)

// --kind's values come from the registry: its completion offers every
// registered lock kind, and the usage and help of release and reap name
// them all.
func TestKindFlagFromRegistry(t *testing.T) {
	var kinds []string
	for _, k := range lock.Kinds() {
		kinds = append(kinds, string(k))
	}
	env, out, _ := testEnv(demoStart)
	if code := run(context.Background(), []string{"__complete", "release", "--kind", ""}, env); code != 0 {
		t.Fatalf("__complete: exit %d", code)
	}
	var got []string
	for _, l := range strings.Split(out.String(), "\n") {
		if l != "" && !strings.HasPrefix(l, ":") && !strings.HasPrefix(l, "Completion") {
			got = append(got, l)
		}
	}
	if strings.Join(got, ",") != strings.Join(kinds, ",") {
		t.Errorf("--kind completes %v, the registry has %v", got, kinds)
	}
	for _, cmd := range []string{"release", "reap"} {
		env, out, _ := testEnv(demoStart)
		if code := run(context.Background(), []string{cmd, "--help"}, env); code != 0 {
			t.Fatalf("%s --help: exit %d", cmd, code)
		}
		if !strings.Contains(out.String(), "[--kind "+strings.Join(kinds, "|")+"]") {
			t.Errorf("%s's usage does not list %v:\n%s", cmd, kinds, out)
		}
		for _, k := range kinds {
			if !strings.Contains(out.String(), "Lock kind: ") || !strings.Contains(out.String()[strings.Index(out.String(), "Lock kind: "):], k) {
				t.Errorf("%s's --kind help does not name %s", cmd, k)
			}
		}
	}
}
