package fleet

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testprom"
)

// The scale fixture (issue 25 §4): 300 clusters × 1,000 nodes, as a
// central Prometheus would hold them after remote write: every agent's
// series with a cluster label, and kured_reboot_required per node. The
// clusters are in every state: ghosts, orphans, blocked, stale agents
// (their last judgement an hour old, their other series gone), clusters
// without the agent (kured and kube-state-metrics only), in progress and
// done.
const (
	scaleClusters = 300
	scaleNodes    = 1000
	scalePoints   = 3 // samples per series, a minute apart
)

// writeScaleOpenMetrics writes the fixture as OpenMetrics, the last
// samples at end.
func writeScaleOpenMetrics(path string, end time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	ts := func(i int) float64 { return float64(end.Add(-time.Duration(scalePoints-1-i) * time.Minute).Unix()) }
	series := func(name, labels string, v func(i int) float64) {
		for i := 0; i < scalePoints; i++ {
			fmt.Fprintf(w, "%s{%s} %g %g\n", name, labels, v(i), ts(i))
		}
	}
	constant := func(x float64) func(int) float64 { return func(int) float64 { return x } }
	kind := func(c int) string {
		switch {
		case c%50 == 7:
			return "no-agent"
		case c%50 == 11:
			return "stale"
		case c%30 == 3:
			return "ghost"
		case c%30 == 5:
			return "orphaned"
		case c%10 == 1:
			return "blocked"
		case c%3 == 0:
			return "in-progress"
		}
		return "done"
	}
	phaseOf := func(c, n int) string {
		switch kind(c) {
		case "done":
			return "done"
		case "in-progress", "blocked", "ghost", "orphaned":
			switch {
			case n < 400:
				return "done"
			case n == 400:
				return "rebooting"
			case n < 700:
				return "pending"
			}
		}
		return "idle"
	}
	agent := func(c int) bool { k := kind(c); return k != "no-agent" && k != "stale" }
	cl := func(c int) string { return fmt.Sprintf(`cluster="c%03d",job="rebootwatch-agent"`, c) }
	families := []struct {
		name string
		emit func(c int)
	}{
		{"rebootwatch_agent_last_success_timestamp_seconds", func(c int) {
			if kind(c) == "no-agent" {
				return
			}
			if kind(c) == "stale" { // an hour ago: only its history is left
				for i := 0; i < scalePoints; i++ {
					fmt.Fprintf(w, "rebootwatch_agent_last_success_timestamp_seconds{%s} %g %g\n", cl(c), ts(i)-3600, ts(i)-3600)
				}
				return
			}
			series("rebootwatch_agent_last_success_timestamp_seconds", cl(c), func(i int) float64 { return ts(i) - 5 })
		}},
		{"rebootwatch_agent_leader", func(c int) {
			// One replica, leading (as without leader election); the
			// stale ones led until they stopped.
			switch kind(c) {
			case "no-agent":
			case "stale":
				for i := 0; i < scalePoints; i++ {
					fmt.Fprintf(w, "rebootwatch_agent_leader{%s} 1 %g\n", cl(c), ts(i)-3600)
				}
			default:
				series("rebootwatch_agent_leader", cl(c), constant(1))
			}
		}},
		{"rebootwatch_fleet_nodes", func(c int) {
			if !agent(c) {
				return
			}
			count := map[string]int{}
			for n := 0; n < scaleNodes; n++ {
				count[phaseOf(c, n)]++
			}
			for _, p := range []string{"idle", "pending", "draining", "rebooting", "recovering", "done", "down", "unknown"} {
				series("rebootwatch_fleet_nodes", cl(c)+`,phase="`+p+`"`, constant(float64(count[p])))
			}
		}},
		{"rebootwatch_fleet_upgraded_nodes", func(c int) {
			if agent(c) {
				up := 0
				for n := 0; n < scaleNodes; n++ {
					if phaseOf(c, n) == "done" {
						up++
					}
				}
				series("rebootwatch_fleet_upgraded_nodes", cl(c), constant(float64(up)))
			}
		}},
		{"rebootwatch_fleet_reboot_required_nodes", func(c int) {
			if agent(c) {
				req := 0
				for n := 0; n < scaleNodes; n++ {
					if p := phaseOf(c, n); p == "pending" || p == "rebooting" {
						req++
					}
				}
				series("rebootwatch_fleet_reboot_required_nodes", cl(c), constant(float64(req)))
			}
		}},
		{"rebootwatch_fleet_blocked_seconds", func(c int) {
			if agent(c) {
				v := 0.0
				if kind(c) == "blocked" {
					v = 2400
				}
				series("rebootwatch_fleet_blocked_seconds", cl(c), constant(v))
			}
		}},
		{"rebootwatch_fleet_blocked", func(c int) {
			if !agent(c) {
				return
			}
			for _, k := range []string{"stuck-cordon", "slow-reboot", "drain", "release-delay", "reboot-window", "blocking-alert", "blocking-pod", "lock-held", "longhorn", "reboot-required-unknown"} {
				v := 0.0
				if (kind(c) == "blocked" && k == "drain") || (kind(c) == "ghost" && k == "lock-held") {
					v = 1
				}
				series("rebootwatch_fleet_blocked", cl(c)+`,kind="`+k+`"`, constant(v))
			}
		}},
		{"rebootwatch_lock_verdict", func(c int) {
			if !agent(c) {
				return
			}
			want := map[string]string{"ghost": "ghost", "orphaned": "orphaned", "in-progress": "held", "blocked": "free", "done": "free"}[kind(c)]
			for _, v := range []string{"free", "held", "ghost", "orphaned", "expired", "ambiguous", "unknown"} {
				x := 0.0
				if v == want {
					x = 1
				}
				series("rebootwatch_lock_verdict", cl(c)+`,kind="kured",lock="kube-system/kured",verdict="`+v+`"`, constant(x))
			}
		}},
		{"rebootwatch_lock_holder", func(c int) {
			// holder id and node: a ghost's holder maps to no node.
			holder := map[string][2]string{"ghost": {"node-gone", ""}, "orphaned": {"node-0399", "node-0399"}, "in-progress": {"node-0400", "node-0400"}}
			if h, ok := holder[kind(c)]; ok && agent(c) {
				series("rebootwatch_lock_holder", cl(c)+fmt.Sprintf(`,kind="kured",lock="kube-system/kured",holder=%q,holder_node=%q`, h[0], h[1]),
					constant(ts(0)-600))
			}
		}},
		{"rebootwatch_node_phase", func(c int) {
			if !agent(c) {
				return
			}
			for n := 0; n < scaleNodes; n++ {
				series("rebootwatch_node_phase", cl(c)+fmt.Sprintf(`,node="node-%04d",phase="%s"`, n, phaseOf(c, n)), constant(1))
			}
		}},
		{"rebootwatch_node_blocked", func(c int) {
			if !agent(c) {
				return
			}
			for n := 0; n < scaleNodes; n++ {
				if phaseOf(c, n) == "pending" && n < 450 {
					series("rebootwatch_node_blocked", cl(c)+fmt.Sprintf(`,node="node-%04d",kind="lock-held"`, n), constant(1))
				}
			}
		}},
		{"kured_reboot_required", func(c int) {
			for n := 0; n < scaleNodes; n++ {
				v := 0.0
				if p := phaseOf(c, n); p == "pending" || p == "rebooting" {
					v = 1
				}
				series("kured_reboot_required", fmt.Sprintf(`cluster="c%03d",job="kured",node="node-%04d"`, c, n), constant(v))
			}
		}},
		{"kube_node_spec_unschedulable", func(c int) {
			if kind(c) != "no-agent" {
				return
			}
			for n := 0; n < scaleNodes; n++ {
				series("kube_node_spec_unschedulable", fmt.Sprintf(`cluster="c%03d",job="kube-state-metrics",node="node-%04d"`, c, n), constant(0))
			}
		}},
	}
	for _, fam := range families {
		fmt.Fprintf(w, "# TYPE %s gauge\n", fam.name)
		for c := 0; c < scaleClusters; c++ {
			fam.emit(c)
		}
	}
	fmt.Fprintln(w, "# EOF")
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// scaleProm starts a real Prometheus over the fixture's blocks (made once
// per day and kept under the temporary directory: promtool takes minutes)
// and returns its URL, the fixture's time and its process id.
func scaleProm(b testing.TB) (string, time.Time, int) {
	b.Helper()
	bin := testprom.Binary(b)
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		b.Skipf("promtool not installed: %v", err)
	}
	day := time.Now().UTC().Truncate(24 * time.Hour)
	end := day.Add(time.Hour) // inside retention, one block
	cache := filepath.Join(os.TempDir(), fmt.Sprintf("rebootwatch-fleet-scale-v3-%dx%d-%s", scaleClusters, scaleNodes, day.Format("20060102")))
	blocks := filepath.Join(cache, "blocks")
	if _, err := os.Stat(filepath.Join(cache, "done")); err != nil {
		_ = os.RemoveAll(cache)
		if err := os.MkdirAll(blocks, 0o755); err != nil {
			b.Fatal(err)
		}
		om := filepath.Join(cache, "fixture.om")
		if err := writeScaleOpenMetrics(om, end); err != nil {
			b.Fatal(err)
		}
		if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", "-q", om, blocks).CombinedOutput(); err != nil {
			b.Fatalf("promtool: %v\n%s", err, out)
		}
		_ = os.Remove(om)
		if err := os.WriteFile(filepath.Join(cache, "done"), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	// A copy of the blocks: Prometheus compacts and writes into its data
	// directory.
	data := b.TempDir()
	if out, err := exec.Command("cp", "-r", blocks+"/.", data).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v\n%s", err, out)
	}
	port, err := testcluster.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global: {}\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+data, "--web.listen-address="+addr,
		"--storage.tsdb.retention.time=30d", "--log.level=warn")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	logf, _ := os.Create(filepath.Join(dir, "log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait(); logf.Close() })
	url := "http://" + addr
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if resp, err := http.Get(url + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatal("prometheus over the scale fixture not ready")
		}
		time.Sleep(200 * time.Millisecond)
	}
	return url, end, cmd.Process.Pid
}

// cpuSeconds is the user and system CPU time a process has used.
func cpuSeconds(b testing.TB, pid int) float64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command's closing parenthesis; utime and stime are
	// the 14th and 15th of the whole line.
	s := string(raw)
	rest := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseFloat(rest[11], 64)
	st, _ := strconv.ParseFloat(rest[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// BenchmarkFleetSnapshotScale is one fleet refresh (the queries and the
// rows) against a real Prometheus holding 300 clusters × 1,000 nodes; it
// reports the queries per refresh. Issue 25 §4: ≤ 1.0 s, ≤ 6 queries.
func BenchmarkFleetSnapshotScale(b *testing.B) {
	url, end, pid := scaleProm(b)
	rd, err := NewReader(Options{URL: url, Timeout: 5 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	f := rd.Read(ctx, end) // warm: the first read loads the blocks' index
	if f.Err != nil || len(f.Rows) != scaleClusters {
		b.Fatalf("read: %v, %d rows", f.Err, len(f.Rows))
	}
	queries := 0
	cpu0 := cpuSeconds(b, pid)
	n := 0
	for b.Loop() {
		f = rd.Read(ctx, end)
		queries = f.Queries
		n++
	}
	b.ReportMetric(float64(queries), "queries/refresh")
	// The endpoint's CPU per refresh: what the wall time comes to on an
	// idle machine with as many cores as queries run at once.
	b.ReportMetric((cpuSeconds(b, pid)-cpu0)/float64(n), "prom-CPU-s/refresh")
	counts := map[Status]int{}
	for _, r := range f.Rows {
		counts[r.Status]++
	}
	b.Logf("rows by status: %v; first %s (%s)", counts, f.Rows[0].Cluster, f.Rows[0].Status)
}

// BenchmarkFleetSnapshotBinaryScale runs the real `rebootwatch fleet
// --snapshot` against the scale Prometheus and reports its peak RSS (the
// child's ru_maxrss) and wall time. Issue 25 §4: ≤ 60 MiB. It reads at
// the fixture's moment (the hidden --at); it exits 1, as the fixture has
// clusters without the agent.
func BenchmarkFleetSnapshotBinaryScale(b *testing.B) {
	url, end, _ := scaleProm(b)
	bin := filepath.Join(b.TempDir(), "rebootwatch")
	build := exec.Command("go", "build", "-o", bin, "./cmd/rebootwatch")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	var peak int64
	var wall time.Duration
	b.ResetTimer()
	for b.Loop() {
		cmd := exec.Command(bin, "fleet", "--snapshot", "-o", "json", "--prometheus-url", url, "--at", end.Format(time.RFC3339))
		start := time.Now()
		out, err := cmd.Output()
		wall += time.Since(start)
		if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) || !strings.Contains(string(out), `"no-agent": 6`) {
			b.Fatalf("fleet --snapshot: %v\n%.2000s", err, out)
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > peak {
			peak = ru.Maxrss
		}
	}
	b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
	b.ReportMetric(wall.Seconds()/float64(b.N), "wall-s/run")
}
