package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

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

// Issue 32 §1: --demo=suc and --demo=flatcar show their slot, the node's
// draining or rebooting phase and honest progress in the text and the
// JSON snapshot. Before: SUC's demo said "4/4 upgraded", every node idle,
// "no reboot lock found"; FLUO's rebooting holder was "✗ critical node
// flatcar-worker-1 is NotReady outside a reboot cycle" (exit 2,
// holdsLock null).
func TestCoordinatorDemoSlotsAndPhases(t *testing.T) {
	for _, tc := range []struct {
		demo, at, node, phase, slot, step string
		upgraded                          int
		text                              []string
		exit                              int
	}{
		{"suc", "5m", "k3s-agent-1", "draining", "suc system-upgrade/agent-plan", "job failed", 1,
			[]string{"suc   system-upgrade/agent-plan   1/1   k3s-agent-1  job failed", "Fleet: 1/4 upgraded", "suc · job failed"}, ExitAttention},
		{"suc", "0s", "k3s-agent-1", "draining", "suc system-upgrade/agent-plan", "job running, node cordoned", 1,
			[]string{"1/1   k3s-agent-1  job running, node cordoned"}, ExitAttention},
		{"flatcar", "0s", "flatcar-worker-1", "rebooting", "flatcar", "rebooting", 1,
			[]string{"flatcar  —         1/1   flatcar-worker-1  rebooting", "1 rebooting", "nothing needs attention"}, ExitOK},
		{"flatcar", "6m", "flatcar-worker-1", "recovering", "flatcar", "rebooted, agent not running", 1,
			[]string{"1/1   flatcar-worker-1  rebooted, agent not running"}, ExitAttention},
	} {
		t.Run(tc.demo+"@"+tc.at, func(t *testing.T) {
			args := []string{"--demo=" + tc.demo, "--speed", "0", "--demo-at", tc.at, "--snapshot"}
			env, out, errb := testEnv(demoStart)
			if code := run(context.Background(), append(args, "-o", "json"), env); code != tc.exit {
				t.Fatalf("json: exit %d, want %d; stderr %s\n%s", code, tc.exit, errb, out)
			}
			var snap struct {
				Fleet struct {
					Nodes    int `json:"nodes"`
					Upgraded int `json:"upgraded"`
				} `json:"fleet"`
				Slots []struct {
					Kind     string `json:"kind"`
					Owner    string `json:"owner"`
					Capacity *int   `json:"capacity"`
					Known    bool   `json:"known"`
					Holders  []struct {
						Node *string `json:"node"`
						Step string  `json:"step"`
					} `json:"holders"`
				} `json:"slots"`
				Nodes []struct {
					Name      string  `json:"name"`
					Phase     string  `json:"phase"`
					HoldsLock *string `json:"holdsLock"`
					Slot      *string `json:"slot"`
					Step      *string `json:"step"`
				} `json:"nodes"`
			}
			if err := json.Unmarshal(out.Bytes(), &snap); err != nil {
				t.Fatal(err)
			}
			if snap.Fleet.Upgraded != tc.upgraded || snap.Fleet.Nodes != 4 {
				t.Errorf("fleet %d/%d upgraded, want %d/4", snap.Fleet.Upgraded, snap.Fleet.Nodes, tc.upgraded)
			}
			found := false
			for _, g := range snap.Slots {
				for _, h := range g.Holders {
					if h.Node != nil && *h.Node == tc.node && strings.TrimSpace(string(g.Kind)+" "+g.Owner) == tc.slot {
						found = g.Known && g.Capacity != nil && *g.Capacity == 1 && h.Step == tc.step
					}
				}
			}
			if !found {
				t.Errorf("slots %+v lack %s held by %s (%s), capacity 1", snap.Slots, tc.slot, tc.node, tc.step)
			}
			for _, n := range snap.Nodes {
				if n.Name != tc.node {
					continue
				}
				if n.Phase != tc.phase || n.HoldsLock == nil || *n.HoldsLock != tc.demo || n.Slot == nil || *n.Slot != tc.slot || n.Step == nil || *n.Step != tc.step {
					t.Errorf("%s: phase %s holdsLock %v slot %v step %v; want %s, %s, %s, %s", n.Name, n.Phase, n.HoldsLock, n.Slot, n.Step, tc.phase, tc.demo, tc.slot, tc.step)
				}
			}
			env, out, errb = testEnv(demoStart)
			if code := run(context.Background(), args, env); code != tc.exit {
				t.Fatalf("text: exit %d; stderr %s", code, errb)
			}
			for _, w := range tc.text {
				if !strings.Contains(out.String(), w) {
					t.Errorf("text lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out.String(), "outside a reboot cycle") {
				t.Errorf("a reboot in the coordinator's cycle is called down:\n%s", out)
			}
		})
	}
}

// Issue 32 §1: watch on --demo=suc and --demo=flatcar says the slot held
// and honest progress in its first line, and logs the slot. Before: "4/4
// upgraded · no lock held" for SUC; FLUO's holder was "down".
func TestCoordinatorDemoWatch(t *testing.T) {
	for _, tc := range []struct{ demo, at, start, slot string }{
		{"suc", "5m", "1/4 upgraded · holder k3s-agent-1 (suc: job failed)", "suc system-upgrade/agent-plan slot held by k3s-agent-1 (job failed)"},
		{"flatcar", "0s", "1/4 upgraded · holder flatcar-worker-1 (flatcar: rebooting)", "flatcar slot held by flatcar-worker-1 (rebooting)"},
	} {
		t.Run(tc.demo, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			env, out, errb := testEnv(demoStart)
			run(ctx, []string{"watch", "--demo=" + tc.demo, "--speed", "0", "--demo-at", tc.at}, env)
			s := out.String()
			if !strings.Contains(s, tc.start) || !strings.Contains(s, "slot    "+tc.slot) {
				t.Errorf("watch lacks %q or the slot line %q:\n%s\nstderr %s", tc.start, tc.slot, s, errb)
			}
			if strings.Contains(s, "outside a reboot cycle") {
				t.Errorf("the coordinator's reboot is called down:\n%s", s)
			}
		})
	}
}
