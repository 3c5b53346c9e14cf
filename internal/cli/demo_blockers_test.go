package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// onlyFleetWideAfter checks that fleet blockers after the first (the one
// that stops the fleet) are blockers of the fleet as a whole (no node): the
// kured demo's fleetlock Lease held by a ghost is one.
func onlyFleetWideAfter(t *testing.T, fleet []map[string]any) {
	t.Helper()
	for _, b := range fleet[1:] {
		if b["node"] != nil || b["others"] != nil {
			t.Errorf("a later fleet blocker names a node or counts others: %v", b)
		}
	}
}

// demoBlockers runs the kured demo frozen at a moment and returns its JSON
// snapshot's fleet blockers and each node's.
func demoBlockers(t *testing.T, at string) (fleet []map[string]any, nodes map[string][]map[string]any, text string) {
	t.Helper()
	env, out, errb := testEnv(demoStart)
	if code := run(context.Background(), []string{"--demo=kured", "--speed", "0", "--demo-at", at, "--snapshot", "-o", "json"}, env); code != ExitAttention {
		t.Fatalf("exit %d; stderr %s", code, errb)
	}
	var snap struct {
		Fleet struct {
			Blockers []map[string]any `json:"blockers"`
		} `json:"fleet"`
		Nodes []struct {
			Name     string           `json:"name"`
			Blockers []map[string]any `json:"blockers"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(out.Bytes(), &snap); err != nil {
		t.Fatal(err)
	}
	nodes = map[string][]map[string]any{}
	for _, n := range snap.Nodes {
		nodes[n.Name] = n.Blockers
	}
	env, out, _ = testEnv(demoStart)
	run(context.Background(), []string{"--demo=kured", "--speed", "0", "--demo-at", at, "--snapshot"}, env)
	return snap.Fleet.Blockers, nodes, out.String()
}

// The kured demo's second act, end to end through the kube source reading
// the demo's fake API (pods of the cordoned node, PodDisruptionBudgets,
// kured's args) and the blockers engine: 60 minutes in, worker-2's drain is
// held by shop/postgres; 80 minutes in, kured's reboot window is closed.
func TestDemoPlaysPDBBlockedDrainAndClosedWindow(t *testing.T) {
	fleet, nodes, text := demoBlockers(t, "60m")
	if len(fleet) == 0 || fleet[0]["kind"] != "drain" || fleet[0]["node"] != "worker-2" {
		t.Fatalf("fleet blockers at 60m: %v", fleet)
	}
	onlyFleetWideAfter(t, fleet)
	reason, _ := fleet[0]["reason"].(string)
	for _, want := range []string{"PodDisruptionBudget shop/postgres allows 0 disruptions", "shop/postgres-1"} {
		if !strings.Contains(reason, want) {
			t.Errorf("drain reason %q lacks %q", reason, want)
		}
	}
	if len(nodes["worker-2"]) == 0 || nodes["worker-2"][0]["kind"] != "drain" {
		t.Errorf("worker-2's blockers %v", nodes["worker-2"])
	}
	if !strings.Contains(text, "BLOCKED") || !strings.Contains(text, "shop/postgres-1") {
		t.Errorf("text report at 60m:\n%s", text)
	}

	fleet, nodes, text = demoBlockers(t, "80m")
	if len(fleet) == 0 || fleet[0]["kind"] != "reboot-window" || fleet[0]["node"] != "worker-3" {
		t.Fatalf("fleet blockers at 80m: %v", fleet)
	}
	onlyFleetWideAfter(t, fleet)
	reason, _ = fleet[0]["reason"].(string)
	if !strings.Contains(reason, "opens in") || !strings.Contains(reason, "22:00–04:10 Europe/Berlin") {
		t.Errorf("window reason %q", reason)
	}
	if len(nodes["worker-4"]) == 0 || nodes["worker-4"][0]["kind"] != "reboot-window" {
		t.Errorf("worker-4's blockers %v", nodes["worker-4"])
	}
	if !strings.Contains(text, "reboot window") {
		t.Errorf("text report at 80m:\n%s", text)
	}
}
