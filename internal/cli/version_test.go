package cli

import (
	"context"
	"encoding/json"
	"runtime"
	"testing"
)

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
