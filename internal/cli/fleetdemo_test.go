package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestFleetDemoSnapshot (issue 34 §3): fleet --demo --snapshot reads no
// endpoint: one cluster per demo scenario and a done one, the ghost first,
// exit 2; with the demo's clock two minutes on (--demo-at), flatcar's agent
// is stale. JSON says the same, with its exit code.
func TestFleetDemoSnapshot(t *testing.T) {
	now := time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)
	env, out, errb := testEnv(now)
	code := run(context.Background(), []string{"fleet", "--demo", "--snapshot"}, env)
	if code != ExitAttention {
		t.Fatalf("exit %d, want %d; stderr %s\n%s", code, ExitAttention, errb, out)
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.HasPrefix(lines[0], `fleet: 5 clusters by label "cluster" from demo:simulated-agents`) ||
		!strings.Contains(lines[0], "1 ghost, 1 orphaned, 2 blocked, 1 done") {
		t.Errorf("header %q", lines[0])
	}
	if !strings.HasPrefix(lines[2], "fleetlock ") || !strings.Contains(lines[2], "ghost") {
		t.Errorf("the ghost is not first:\n%s", out)
	}
	for _, c := range []string{"kured ", "suc ", "flatcar ", "done "} {
		if !strings.Contains(out.String(), "\n"+c) {
			t.Errorf("no row %q:\n%s", c, out)
		}
	}

	env, out, errb = testEnv(now)
	code = run(context.Background(), []string{"fleet", "--demo", "--snapshot", "--demo-at", "2m", "-o", "json"}, env)
	var d struct {
		Endpoint string
		ExitCode int
		Queries  int
		Counts   map[string]int
		Clusters []struct{ Cluster, Status string }
	}
	if err := json.Unmarshal(out.Bytes(), &d); err != nil {
		t.Fatalf("%v: %s\n%s", err, errb, out)
	}
	if code != ExitAttention || d.ExitCode != code || d.Endpoint != "demo:simulated-agents" || d.Queries != 0 || len(d.Clusters) != 5 ||
		d.Clusters[0].Cluster != "fleetlock" || d.Clusters[0].Status != "ghost" || d.Counts["stale"] != 1 {
		t.Errorf("exit %d, document %+v", code, d)
	}
	for _, c := range d.Clusters {
		if c.Cluster == "flatcar" && c.Status != "stale" {
			t.Errorf("two demo minutes in, flatcar is %q, want stale", c.Status)
		}
	}
}

// --demo with an endpoint, a single-cluster scenario or a context mapping
// is a usage error, on one line and the usage pointer.
func TestFleetDemoUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fleet", "--demo", "--snapshot", "--prometheus-url", "http://p"}, "--demo and --prometheus-url"},
		{[]string{"fleet", "--demo=kured", "--snapshot"}, "rebootwatch --demo=kured"},
		{[]string{"fleet", "--demo", "--snapshot", "--context-for", "a=b"}, "--demo and --context-for"},
		{[]string{"fleet", "--demo", "watch", "--prometheus-url", "http://p"}, "--demo and --prometheus-url"},
	} {
		env, out, errb := testEnv(time.Now())
		if code := run(context.Background(), tc.args, env); code != ExitError || !strings.Contains(errb.String(), tc.want) ||
			!strings.HasPrefix(errb.String(), "error: ") || out.Len() != 0 {
			t.Errorf("%q: exit %d, stderr %q; want 1 naming %s", tc.args, code, errb, tc.want)
		}
	}
}

// fleet --demo watch: every cluster once, then flatcar turning stale as
// the demo clock advances (--speed 60: a demo minute a second).
func TestFleetDemoWatch(t *testing.T) {
	env, _, errb := testEnv(time.Now())
	env.Now = time.Now
	out := &lockedBuffer{}
	env.Stdout = out
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		for !strings.Contains(out.String(), "flatcar stale (was blocked)") && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	code := run(ctx, []string{"fleet", "--demo", "--speed", "60", "watch", "--interval", "1s"}, env)
	if code != ExitInterrupted {
		t.Fatalf("exit %d, stderr %s\n%s", code, errb, out)
	}
	s := out.String()
	if !strings.Contains(s, " fleetlock ghost · lock 0f3a9c41d27b… ghost") || !strings.Contains(s, "flatcar stale (was blocked)") ||
		strings.Index(s, "fleetlock ghost") > strings.Index(s, "done done") {
		t.Errorf("watch output:\n%s", s)
	}
}
