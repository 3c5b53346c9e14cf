package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rebootwatch/rebootwatch/sources/sim"
)

// --demo's values come from sources/sim's scenario list (the two it plays
// and each registered coordinator kind's), for the flag and its completion
// alike; an unknown one is refused naming them all.
func TestDemoValuesFromRegistry(t *testing.T) {
	names := sim.ScenarioNames()
	for _, want := range []string{"fleetlock", "kured", "suc", "flatcar"} {
		if !strings.Contains(","+strings.Join(names, ",")+",", ","+want+",") {
			t.Fatalf("scenarios %v lack %s", names, want)
		}
	}
	env, out, errb := testEnv(demoStart)
	if code := run(context.Background(), []string{"__complete", "--demo="}, env); code != ExitOK {
		t.Fatalf("__complete: exit %d %s", code, errb)
	}
	for _, n := range names {
		if !strings.Contains(out.String(), "--demo="+n+"\t") && !strings.Contains(out.String(), n+"\t") {
			t.Errorf("completion lacks %s:\n%s", n, out)
		}
	}
	env, _, errb = testEnv(demoStart)
	if code := run(context.Background(), []string{"--demo=nope", "--snapshot"}, env); code != ExitError || !strings.Contains(errb.String(), strings.Join(names, ", ")) {
		t.Errorf("--demo=nope: exit %d, stderr %s", code, errb)
	}
}

// --demo=suc and --demo=flatcar with --snapshot: text and JSON name the
// headline wedge as a blocker with its evidence, and exit with attention
// (2, DESIGN §7).
func TestCoordinatorDemoSnapshots(t *testing.T) {
	for _, tc := range []struct {
		demo, at, node string
		kinds          []string
	}{
		{"suc", "0s", "k3s-agent-1", []string{"drain"}},
		{"suc", "5m", "k3s-agent-1", []string{"job-failed", "stuck-cordon"}},
		{"flatcar", "6m", "flatcar-worker-1", []string{"agent-stopped"}},
	} {
		t.Run(tc.demo+"@"+tc.at, func(t *testing.T) {
			args := []string{"--demo=" + tc.demo, "--speed", "0", "--demo-at", tc.at, "--snapshot"}
			env, out, errb := testEnv(demoStart)
			if code := run(context.Background(), append(args, "-o", "json"), env); code != ExitAttention {
				t.Fatalf("json: exit %d; stderr %s", code, errb)
			}
			var snap struct {
				Nodes []struct {
					Name     string `json:"name"`
					Blockers []struct {
						Kind     string            `json:"kind"`
						Reason   string            `json:"reason"`
						Evidence []json.RawMessage `json:"evidence"`
					} `json:"blockers"`
				} `json:"nodes"`
			}
			if err := json.Unmarshal(out.Bytes(), &snap); err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, n := range snap.Nodes {
				if n.Name == tc.node {
					for _, b := range n.Blockers {
						got[b.Kind] = len(b.Evidence)
					}
				}
			}
			for _, k := range tc.kinds {
				if got[k] == 0 {
					t.Errorf("%s: no %s blocker with evidence (%v)", tc.node, k, got)
				}
			}
			env, out, errb = testEnv(demoStart)
			if code := run(context.Background(), args, env); code != ExitAttention {
				t.Fatalf("text: exit %d; stderr %s", code, errb)
			}
			for _, k := range tc.kinds {
				if !strings.Contains(out.String(), tc.node+"  "+k) {
					t.Errorf("text lacks %s's %s:\n%s", tc.node, k, out)
				}
			}
		})
	}
}
