package scalebench_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/kubeconfig"
	"github.com/rebootwatch/rebootwatch/internal/live"
	"github.com/rebootwatch/rebootwatch/internal/testenv/scalefixture"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// BenchmarkScale is the scale benchmark of issue 14. Run it with
//
//	make bench-scale
//
// which is
//
//	REBOOTWATCH_INTEGRATION=1 go test -run '^$' -bench Scale -benchtime 1x -timeout 60m ./internal/testenv/scalebench/
//
// Per case (1,000 nodes + 3,000 volumes, then 5,000 + 10,000 on the same
// apiserver) it reports, each over REBOOTWATCH_BENCH_RUNS runs (default 5)
// as min/median/max:
//
//   - server: what the apiserver alone needs to serve the lists a snapshot
//     reads (the volumes as the whole JSON list and as the snapshot reads
//     them, a Table of longhorn-system's beside the other namespaces' JSON
//     list; the nodes as protobuf; gzip, nothing decoded), each and the
//     snapshot's at once: the floor under the snapshot's wall time (see
//     server_test.go);
//   - snapshot: `rebootwatch --snapshot -o json` built from this tree, as a
//     subprocess under /usr/bin/time: wall time until it exits with the full
//     report, its CPU time (user+sys), its peak RSS (ru_maxrss) and the
//     requests it made; each run starts once the apiserver and etcd are
//     idle (testcluster's WaitIdle);
//   - dashboard: the dashboard's model (internal/live, as `rebootwatch`
//     opens it, in this process): wall time until the model is synced with
//     every node and volume, and when it first held every node, every
//     volume, each source ok and the sync; CPU time and allocations of this
//     process, the heap the open session retains; each run starts once the
//     apiserver and etcd are idle (the previous run's informer list must
//     not compete with it), and the wait is reported; then, with the last
//     session still open,
//     the requests per minute it makes for REBOOTWATCH_BENCH_STEADY
//     (default 60s);
//   - agent: `rebootwatch-agent` built from this tree, once: time to the
//     first heartbeat with every node and volume, peak RSS, and over the
//     steady window its RSS, CPU and requests per minute; at its end the
//     RSS split into anonymous and file-backed (the binary's own pages);
//   - terminal: `rebootwatch` built from this tree, in a real terminal
//     (a tmux pane): time to the first node row on the screen, to the full
//     picture on the screen, peak RSS and CPU; and the same of k9s when
//     REBOOTWATCH_BENCH_K9S names a k9s binary (see terminal_test.go);
//   - runbook: the six kubectl commands run one after another (when
//     a kubectl is found: bin/kubectl, else $PATH), total wall time.
//
// Requests are the apiserver's own count (apiserver_request_total, scraped
// before and after): a WATCH is counted only when it ends, so the watches a
// run holds open are listed as OPEN-WATCH (apiserver_longrunning_requests)
// instead, and "objects listed" (apiserver_storage_list_returned_objects_total)
// tells a limit=1 freshness probe (one object) from a relist (every object).
//
// Each case's lines are also logged as a table (and appended to the file
// REBOOTWATCH_BENCH_TABLE names, when set).
//
// Knobs for working on one part: REBOOTWATCH_BENCH_CASES=terminal,agent
// runs only those of server, snapshot, dashboard, agent, runbook and terminal
// (default all); REBOOTWATCH_BENCH_SIZES=5000 measures only the sizes whose
// node count is listed (the fixture still grows through the smaller ones);
// REBOOTWATCH_BENCH_SNAPSHOT_BASE=BIN pairs each snapshot run with one of
// another rebootwatch build (snapshot);
// REBOOTWATCH_BENCH_PROFILE=DIR writes a CPU profile and an allocation
// profile of the dashboard's first run per size into DIR
// (dashboard-NODES.cpu.pprof; dashboard-NODES.allocs.pprof, to read against
// dashboard-NODES.allocs-base.pprof with go tool pprof -base), and the
// agent's in-use heap at the end of its steady window (agent-NODES.heap.pprof,
// from an agent built with -tags heapprofile).
func BenchmarkScale(b *testing.B) {
	if !testcluster.Integration() {
		b.Skip("seeds a real apiserver with 15,000 objects (minutes): set " + testcluster.EnvIntegration + "=1 to run")
	}
	if f := flag.Lookup("test.benchtime"); f == nil || f.Value.String() != "1x" {
		b.Fatal("run with -benchtime 1x: every case runs its own REBOOTWATCH_BENCH_RUNS runs")
	}
	runs := envInt(b, "REBOOTWATCH_BENCH_RUNS", 5)
	steady := envDuration(b, "REBOOTWATCH_BENCH_STEADY", time.Minute)
	var caseNames, sizeNames []string
	for _, r := range (&scaleCase{}).cases() {
		caseNames = append(caseNames, r.name)
	}
	for _, k := range scaleSizes {
		sizeNames = append(sizeNames, strconv.Itoa(k.nodes))
	}
	cases := envSet(b, "REBOOTWATCH_BENCH_CASES", caseNames...)
	sizes := envSet(b, "REBOOTWATCH_BENCH_SIZES", sizeNames...)

	c := testcluster.Start(b)
	c.InstallLonghornCRD(b)
	cs := c.Client(b)
	fx := &scalefixture.Fixture{Client: cs, Dynamic: c.Dynamic(b), Config: c.Admin}
	bins := buildBinaries(b, os.Getenv("REBOOTWATCH_BENCH_PROFILE") != "")
	tab := &table{}
	tab.add("load average at start: %s", loadavg())
	defer func() {
		tab.add("load average at end: %s", loadavg())
		tab.flush(b)
	}()

	for _, k := range scaleSizes {
		name := fmt.Sprintf("nodes=%d,volumes=%d", k.nodes, k.volumes)
		if !sizes[strconv.Itoa(k.nodes)] {
			continue
		}
		b.Run(name, func(b *testing.B) {
			start := time.Now()
			if err := fx.Grow(context.Background(), k.nodes, k.volumes); err != nil {
				b.Fatal(err)
			}
			b.Logf("seeded up to %d nodes and %d volumes in %s", k.nodes, k.volumes, time.Since(start).Round(time.Millisecond))
			sc := scaleCase{name: name, nodes: k.nodes, volumes: k.volumes, runs: runs, steady: steady,
				c: c, cs: cs, bins: bins, tab: tab, profile: os.Getenv("REBOOTWATCH_BENCH_PROFILE")}
			for _, r := range sc.cases() {
				if cases[r.name] {
					b.Run(r.name, r.f)
				}
			}
		})
	}
}

// scaleSizes are the fleets measured, in the order the fixture grows to
// them; REBOOTWATCH_BENCH_SIZES picks among their node counts.
var scaleSizes = []struct{ nodes, volumes int }{{1000, 3000}, {5000, 10000}}

// namedCase is one case of a size.
type namedCase struct {
	name string
	f    func(*testing.B)
}

// cases are sc's cases in the order they run; REBOOTWATCH_BENCH_CASES
// picks among their names.
func (sc *scaleCase) cases() []namedCase {
	return []namedCase{{"server", sc.server}, {"snapshot", sc.snapshot}, {"dashboard", sc.dashboard}, {"agent", sc.agent}, {"runbook", sc.runbook},
		// Last: k9s's requests still in flight when it quits must not
		// count in another case's steady window.
		{"terminal", sc.terminal}}
}

type scaleCase struct {
	name           string
	nodes, volumes int
	runs           int
	steady         time.Duration
	c              *testcluster.Cluster
	cs             kubernetes.Interface
	bins           binaries
	tab            *table
	profile        string // directory for the dashboard's profiles, or ""
}

// snapshot runs `rebootwatch --snapshot -o json` runs times. With
// REBOOTWATCH_BENCH_SNAPSHOT_BASE naming another build of rebootwatch (the
// tree before a change), each run of the tree's binary is paired with one
// of that binary, alternating which goes first, and both are reported
// ("snapshot (base)"): on a shared machine whose load drifts over minutes,
// pairs measured a second apart compare far better than two benchmarks.
func (sc *scaleCase) snapshot(b *testing.B) {
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		b.Skip("needs GNU time at /usr/bin/time for the child's peak RSS")
	}
	base := os.Getenv("REBOOTWATCH_BENCH_SNAPSHOT_BASE")
	type sample struct{ wall, cpu, rss []float64 }
	var tree, old sample
	before := sc.requests(b)
	for i := range sc.runs {
		bins := []string{sc.bins.rebootwatch}
		into := []*sample{&tree}
		if base != "" {
			bins, into = append(bins, base), append(into, &old)
			if i%2 == 1 {
				bins[0], bins[1], into[0], into[1] = bins[1], bins[0], into[1], into[0]
			}
		}
		for k, bin := range bins {
			sc.settle(b)
			w, c, r := sc.snapshotOnce(b, bin)
			into[k].wall, into[k].cpu, into[k].rss = append(into[k].wall, w), append(into[k].cpu, c), append(into[k].rss, r)
		}
	}
	reqs := delta(before, sc.requests(b))
	sc.report(b, "snapshot", "wall s", tree.wall)
	sc.report(b, "snapshot", "CPU s", tree.cpu)
	sc.report(b, "snapshot", "peak RSS MiB", tree.rss)
	if base != "" {
		sc.report(b, "snapshot (base)", "wall s", old.wall)
		sc.report(b, "snapshot (base)", "CPU s", old.cpu)
		sc.report(b, "snapshot (base)", "peak RSS MiB", old.rss)
		sc.reportRequests(b, "snapshot + base", "requests per pair of runs", reqs, float64(sc.runs))
		return
	}
	sc.reportRequests(b, "snapshot", "requests per run", reqs, float64(sc.runs))
}

// snapshotOnce runs one `--snapshot -o json` of bin: its wall time, CPU
// (user + sys) and peak RSS.
func (sc *scaleCase) snapshotOnce(b *testing.B, bin string) (wall, cpu, rss float64) {
	out := filepath.Join(b.TempDir(), "time")
	cmd := exec.Command("/usr/bin/time", "-f", "%M", "-o", out, bin,
		"--snapshot", "-o", "json", "--kubeconfig", sc.c.Kubeconfig)
	cmd.Env = cleanEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Run()
	wall = time.Since(t0).Seconds()
	if code := cmd.ProcessState.ExitCode(); err != nil && code != 2 { // 2: faulted volumes need attention
		b.Fatalf("%s --snapshot: %v\n%s", bin, err, stderr.String())
	}
	// wait4's rusage of /usr/bin/time includes the child it reaped.
	cpu = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	raw, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	kib, err := strconv.ParseFloat(strings.TrimSpace(lastLine(string(raw))), 64)
	if err != nil {
		b.Fatalf("/usr/bin/time output %q: %v", raw, err)
	}
	sc.checkSnapshot(b, stdout.Bytes())
	return wall, cpu, kib / 1024
}

// checkSnapshot fails unless the report holds every node and volume with
// every source ok.
func (sc *scaleCase) checkSnapshot(b *testing.B, out []byte) {
	var snap struct {
		Fleet   struct{ Nodes int }
		Volumes *struct{ Total int }
		Sources []struct{ Name, Status, Message string }
		Locks   []struct{ Kind, Verdict string }
	}
	if err := json.Unmarshal(out, &snap); err != nil {
		b.Fatalf("snapshot JSON: %v\n%.500s", err, out)
	}
	if snap.Fleet.Nodes != sc.nodes || snap.Volumes == nil || snap.Volumes.Total != sc.volumes {
		b.Fatalf("snapshot saw %d nodes, volumes %+v", snap.Fleet.Nodes, snap.Volumes)
	}
	for _, s := range snap.Sources {
		// The fixture runs neither the system-upgrade-controller nor the
		// Flatcar update operator: read by default, they are not-installed.
		absent := (s.Name == "suc" || s.Name == "flatcar") && s.Status == "not-installed"
		if s.Name != "prometheus" && s.Status != "ok" && !absent {
			b.Fatalf("snapshot: source %s is %s: %s", s.Name, s.Status, s.Message)
		}
	}
	if len(snap.Locks) != 2 {
		b.Fatalf("snapshot: want the kured and the fleetlock lock, got %+v", snap.Locks)
	}
}

// dashboard opens the cluster as the dashboard does and waits for the model
// to hold every node and volume, runs times; the last session stays open for
// the steady window.
func (sc *scaleCase) dashboard(b *testing.B) {
	var wall, cpu, allocs, allocMiB, heap []float64
	milestoneAt := map[string][]float64{}
	var settled []float64
	before := sc.requests(b)
	var steadyRates, firstReqs []scalefixture.Count
	for i := range sc.runs {
		runtime.GC()
		debug.FreeOSMemory()
		var ms0 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		stopProfile := func() {}
		if i == 0 && sc.profile != "" {
			stopProfile = sc.startProfile(b, fmt.Sprintf("dashboard-%d", sc.nodes))
		}
		settled = append(settled, sc.settle(b).Seconds())
		cpu0 := selfCPU()
		t0 := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		s, err := live.Open(ctx, live.Options{Kube: kubeconfig.Loader{Kubeconfig: sc.c.Kubeconfig}, RequestTimeout: 20 * time.Second, SyncTimeout: 2 * time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		cl := s.NewCluster()
		deadline := time.After(3 * time.Minute)
		reached := map[string]float64{}
		for !cl.Synced() || cl.NodeCount() < sc.nodes || cl.VolumeCount() < sc.volumes {
			select {
			case ev := <-s.Events:
				cl.Apply(ev, s.Clock())
				milestones(cl, sc.nodes, sc.volumes, time.Since(t0).Seconds(), reached)
			case <-deadline:
				b.Fatalf("dashboard model: %d nodes, %d volumes, synced %v after 3m", cl.NodeCount(), cl.VolumeCount(), cl.Synced())
			}
		}
		cl.Recompute(s.Clock())
		wall = append(wall, time.Since(t0).Seconds())
		for k, v := range reached {
			milestoneAt[k] = append(milestoneAt[k], v)
		}
		cpu = append(cpu, selfCPU()-cpu0)
		stopProfile()
		if i == 0 {
			firstReqs = delta(before, sc.requests(b))
		}
		var ms1 runtime.MemStats
		runtime.ReadMemStats(&ms1)
		allocs = append(allocs, float64(ms1.Mallocs-ms0.Mallocs))
		allocMiB = append(allocMiB, float64(ms1.TotalAlloc-ms0.TotalAlloc)/(1<<20))
		for _, src := range []model.SourceName{model.SourceNodes, model.SourceKured, model.SourceFleetlock, model.SourceLonghorn} {
			if h, _ := cl.Source(src); h.Status != model.StatusOK {
				b.Fatalf("dashboard model: source %s is %s: %s", src, h.Status, h.Message)
			}
		}
		// What the open session keeps: informer caches and the model.
		runtime.GC()
		runtime.ReadMemStats(&ms1)
		heap = append(heap, float64(int64(ms1.HeapInuse)-int64(ms0.HeapInuse))/(1<<20))
		if i == sc.runs-1 {
			steadyRates = sc.steadyWindow(b, func() {
				// Keep applying what arrives, as the dashboard does.
				s.Drain(cl)
			})
		}
		cancel()
		s.Close()
		runtime.KeepAlive(cl)
	}
	sc.report(b, "dashboard", "wall s", wall)
	sc.report(b, "dashboard", "CPU s", cpu)
	sc.report(b, "dashboard", "wait for the server to settle before a run, s", settled)
	for _, k := range slices.Sorted(maps.Keys(milestoneAt)) {
		if len(milestoneAt[k]) == len(wall) {
			sc.report(b, "dashboard", "wall s to "+k, milestoneAt[k])
		}
	}
	sc.report(b, "dashboard", "allocs", allocs)
	sc.report(b, "dashboard", "alloc MiB", allocMiB)
	sc.report(b, "dashboard", "retained heap MiB", heap)
	sc.reportRequests(b, "dashboard", "requests to first picture (first run)", firstReqs, 1)
	sc.reportRequests(b, "dashboard", "steady requests per minute", steadyRates, 1)
}

// startProfile starts a CPU profile and writes the allocation counts so far
// (NAME.allocs-base.pprof); the returned stop ends the CPU profile and
// writes the counts again (NAME.allocs.pprof): their difference (go tool
// pprof -base) is what was allocated in between.
func (sc *scaleCase) startProfile(b *testing.B, name string) (stop func()) {
	if err := os.MkdirAll(sc.profile, 0o755); err != nil {
		b.Fatal(err)
	}
	base := filepath.Join(sc.profile, name)
	writeHeap := func(path string) {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			b.Fatal(err)
		}
	}
	writeHeap(base + ".allocs-base.pprof")
	cf, err := os.Create(base + ".cpu.pprof")
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(cf); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		cf.Close()
		runtime.GC() // the allocs profile is as of the last GC
		writeHeap(base + ".allocs.pprof")
		b.Logf("profiles: %s.cpu.pprof, %s.allocs.pprof (go tool pprof -sample_index=alloc_space -base %s.allocs-base.pprof %s.allocs.pprof)",
			base, base, base, base)
	}
}

// steadyWindow calls tick every second for the steady window and returns
// the requests per minute the apiserver counted meanwhile (ours only).
func (sc *scaleCase) steadyWindow(b *testing.B, tick func()) []scalefixture.Count {
	before := sc.requests(b)
	t0 := time.Now()
	for time.Since(t0) < sc.steady {
		tick()
		time.Sleep(time.Second)
	}
	el := time.Since(t0)
	var out []scalefixture.Count
	for _, d := range delta(before, sc.requests(b)) {
		d.N = d.N / el.Minutes()
		out = append(out, d)
	}
	return out
}

// agent runs rebootwatch-agent once until its first heartbeat with every
// node and volume, then for the steady window.
func (sc *scaleCase) agent(b *testing.B) {
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		b.Skip("needs GNU time at /usr/bin/time for the child's peak RSS")
	}
	out := filepath.Join(b.TempDir(), "time")
	// The metrics are scraped every 5 s of the steady window, as a
	// Prometheus that feeds the fleet view would (issue 35 §1): the
	// per-node series are made on each scrape.
	metricsPort, err := testcluster.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	cmd := exec.Command("/usr/bin/time", "-f", "%M", "-o", out, sc.bins.agent,
		"--kubeconfig="+sc.c.Kubeconfig, "--health-probe-bind-address=127.0.0.1:0",
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metricsPort),
		"--kured-daemonset="+scalefixture.KuredNamespace+"/"+scalefixture.KuredName, "--leader-election-namespace=default",
		"--dry-run")
	cmd.Env = append(cleanEnv(), "POD_NAME=scalebench-agent")
	heapProfile := ""
	if sc.profile != "" {
		heapProfile = filepath.Join(sc.profile, fmt.Sprintf("agent-%d.heap.pprof", sc.nodes))
		_ = os.Remove(heapProfile)
		cmd.Env = append(cmd.Env, "REBOOTWATCH_HEAPPROFILE="+heapProfile)
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	before := sc.requests(b)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); pw.Close(); close(exited) }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	}()
	type seen struct {
		at   time.Duration
		what string
	}
	firstPicture := make(chan seen, 1)
	var fullHeartbeats atomic.Int64
	var logMu sync.Mutex
	var tail []string
	go func() {
		scan := bufio.NewScanner(pr)
		scan.Buffer(make([]byte, 1<<20), 16<<20)
		sent := false
		for scan.Scan() {
			line := scan.Text()
			logMu.Lock()
			tail = append(tail, line)
			if len(tail) > 20 {
				tail = tail[1:]
			}
			logMu.Unlock()
			var hb struct {
				Msg     string `json:"msg"`
				Nodes   int    `json:"nodes"`
				Volumes int    `json:"volumes"`
				Sources []struct {
					Name   string `json:"name"`
					Status string `json:"status"`
				} `json:"sources"`
			}
			if json.Unmarshal([]byte(line), &hb) != nil {
				continue
			}
			if hb.Msg == "sources synced" && !sent {
				// Every source's informer delivered its first list: the
				// agent judges from here on (its next heartbeat is on its
				// interval or the next event).
				firstPicture <- seen{time.Since(t0), line}
				sent = true
				continue
			}
			if hb.Msg != "heartbeat" || hb.Nodes != sc.nodes || hb.Volumes != sc.volumes {
				continue
			}
			var bad []string
			for _, s := range hb.Sources {
				// The fixture has no Prometheus and no Flatcar operator or
				// system-upgrade-controller: "disabled" and "not-installed"
				// are those sources' true answers.
				if s.Name != "prometheus" && s.Status != "ok" && s.Status != "not-installed" {
					bad = append(bad, s.Name+" "+s.Status)
				}
			}
			if len(bad) > 0 {
				continue
			}
			fullHeartbeats.Add(1)
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	logTail := func() string {
		logMu.Lock()
		defer logMu.Unlock()
		return strings.Join(tail, "\n")
	}
	var first seen
	select {
	case first = <-firstPicture:
	case <-exited:
		b.Fatalf("agent exited:\n%s", logTail())
	case <-time.After(3 * time.Minute):
		b.Fatalf("agent: no heartbeat with %d nodes and %d volumes after 3m:\n%s", sc.nodes, sc.volumes, logTail())
	}
	pid := childOf(cmd.Process.Pid)
	if pid == 0 {
		b.Fatal("agent: cannot find its pid under /usr/bin/time")
	}
	firstReqs := delta(before, sc.requests(b))
	hwmAtFirst := procKiB(pid, "VmHWM")
	cpu0 := testcluster.ProcCPUSeconds(pid)
	var rssSamples, anonSamples, fileSamples []float64
	var scrapes, nodeSeries int
	majflt0 := procMajorFaults(pid)
	ticks := 0
	rates := sc.steadyWindow(b, func() {
		if ticks%5 == 0 {
			scrapes++
			nodeSeries = scrapeNodeSeries(b, metricsURL)
		}
		ticks++
		rssSamples = append(rssSamples, float64(procKiB(pid, "VmRSS"))/1024)
		anonSamples = append(anonSamples, float64(procKiB(pid, "RssAnon"))/1024)
		fileSamples = append(fileSamples, float64(procKiB(pid, "RssFile"))/1024)
	})
	majflt := procMajorFaults(pid) - majflt0
	if nodeSeries < sc.nodes {
		b.Fatalf("agent: the last of %d scrapes of its metrics had %d rebootwatch_node_phase series, want one per node (%d)", scrapes, nodeSeries, sc.nodes)
	}
	cpuSteady := testcluster.ProcCPUSeconds(pid) - cpu0
	// What the steady RSS is made of: the agent's own memory (heap,
	// stacks, the runtime's) and the pages of its binary it has touched.
	anonKiB, fileKiB := procKiB(pid, "RssAnon"), procKiB(pid, "RssFile")
	if heapProfile != "" {
		writeHeapProfile(b, pid, heapProfile)
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(time.Minute):
		b.Fatalf("agent did not stop on SIGTERM:\n%s", logTail())
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	kib, err := strconv.ParseFloat(strings.TrimSpace(lastLine(string(raw))), 64)
	if err != nil {
		b.Fatalf("/usr/bin/time output %q: %v", raw, err)
	}
	if fullHeartbeats.Load() == 0 && sc.steady >= time.Minute {
		b.Fatalf("agent: no heartbeat with %d nodes, %d volumes and every source ok in %s:\n%s", sc.nodes, sc.volumes, sc.steady, logTail())
	}
	sc.report(b, "agent", "to sources synced s", []float64{first.at.Seconds()})
	sc.report(b, "agent", "CPU s to first picture", []float64{cpu0})
	sc.report(b, "agent", "peak RSS MiB (to first picture)", []float64{float64(hwmAtFirst) / 1024})
	sc.report(b, "agent", "peak RSS MiB (whole run)", []float64{kib / 1024})
	if len(rssSamples) > 0 {
		sc.report(b, "agent", "steady RSS MiB", rssSamples)
		sc.report(b, "agent", "steady RSS MiB: anonymous", anonSamples)
		sc.report(b, "agent", "steady RSS MiB: file-backed", fileSamples)
	}
	sc.report(b, "agent", "RSS MiB at the end: anonymous", []float64{float64(anonKiB) / 1024})
	sc.report(b, "agent", "RSS MiB at the end: file-backed", []float64{float64(fileKiB) / 1024})
	sc.report(b, "agent", "steady CPU % of a core", []float64{100 * cpuSteady / sc.steady.Seconds()})
	sc.report(b, "agent", "major page faults to first picture", []float64{float64(majflt0)})
	sc.report(b, "agent", "steady major page faults", []float64{float64(majflt)})
	sc.reportRequests(b, "agent", "requests to first picture", firstReqs, 1)
	sc.reportRequests(b, "agent", "steady requests per minute", rates, 1)
}

// writeHeapProfile asks the agent built with -tags heapprofile for its
// in-use heap at the end of the steady window (after a GC: what it keeps, read
// with go tool pprof -top -inuse_space) and waits for the file.
func writeHeapProfile(b *testing.B, pid int, path string) {
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		b.Fatalf("agent: asking for its heap profile: %v", err)
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			b.Logf("agent heap profile: %s", path)
			return
		}
	}
	b.Fatalf("agent: no heap profile at %s after a minute", path)
}

// scrapeNodeSeries reads the agent's metrics once, as Prometheus does, and
// counts its rebootwatch_node_phase series.
func scrapeNodeSeries(b *testing.B, url string) int {
	resp, err := http.Get(url)
	if err != nil {
		b.Fatalf("scraping the agent's metrics: %v", err)
	}
	defer resp.Body.Close()
	n := 0
	scan := bufio.NewScanner(resp.Body)
	scan.Buffer(make([]byte, 64<<10), 1<<20)
	for scan.Scan() {
		if strings.HasPrefix(scan.Text(), "rebootwatch_node_phase{") {
			n++
		}
	}
	if err := scan.Err(); err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("scraping the agent's metrics: %s, %v", resp.Status, err)
	}
	return n
}

// childOf returns the first child of pid (0 if none).
func childOf(pid int) int {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(f[0])
	return n
}

// procKiB reads a "Name: N kB" line of /proc/pid/status.
func procKiB(pid int, name string) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, name+":") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				return n
			}
		}
	}
	return 0
}

// procMajorFaults is the process's count of major page faults (the
// tenth field after the command in /proc/PID/stat): faults that read a page
// from its file, such as a page of the binary that is no longer resident.
func procMajorFaults(pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 10 {
		return 0
	}
	n, _ := strconv.ParseInt(f[9], 10, 64)
	return n
}

// settle waits, up to 15 s, until the apiserver and etcd are idle
// (testcluster's WaitIdle), so that a run does not start while the server
// still serves what the run before it left: the dashboard's informer lists
// every volume as JSON right after its first picture, and the next run's
// reads would compete with it, which no user opening the dashboard meets.
// It returns how long it waited.
func (sc *scaleCase) settle(b *testing.B) time.Duration {
	waited, idle := sc.c.WaitIdle(15 * time.Second)
	if !idle {
		b.Logf("the apiserver and etcd did not settle in 15s; measuring anyway")
	}
	return waited
}

// runbook runs the six kubectl commands one after another, runs
// times.
func (sc *scaleCase) runbook(b *testing.B) {
	kubectl := findKubectl()
	if kubectl == "" {
		b.Skip("no kubectl (bin/kubectl or $PATH): runbook not measured")
	}
	cache := b.TempDir()
	cmds := [][]string{
		{"-n", "kured", "get", "ds,pod", "-o", "wide"},
		{"-n", "kured", "get", "ds", "kured", "-o", "jsonpath={.metadata.annotations}"},
		{"get", "nodes", "-o", "custom-columns=NAME:.metadata.name,UNSCHEDULABLE:.spec.unschedulable,TAINTS:.spec.taints"},
		{"get", "nodes", "-o", `custom-columns=NAME:.metadata.name,REBOOT:.metadata.annotations.weave\.works/kured-reboot-in-progress`},
		{"-n", "longhorn-system", "get", "volumes.longhorn.io", "-o", "custom-columns=NAME:.metadata.name,STATE:.status.state,ROBUSTNESS:.status.robustness"},
		{"get", "lease", "-A"},
	}
	run := func() (float64, float64) {
		var cpu time.Duration
		t0 := time.Now()
		for _, args := range cmds {
			cmd := exec.Command(kubectl, append([]string{"--kubeconfig", sc.c.Kubeconfig, "--cache-dir", cache}, args...)...)
			cmd.Env = cleanEnv()
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = io.Discard, &stderr
			if err := cmd.Run(); err != nil {
				b.Fatalf("kubectl %v: %v\n%s", args, err, stderr.String())
			}
			cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		return time.Since(t0).Seconds(), cpu.Seconds()
	}
	run() // warms kubectl's discovery cache, as an operator's is
	var wall, cpu []float64
	for range sc.runs {
		w, c := run()
		wall, cpu = append(wall, w), append(cpu, c)
	}
	b.Logf("kubectl: %s", kubectlVersion(kubectl))
	sc.report(b, "runbook", "wall s", wall)
	sc.report(b, "runbook", "CPU s", cpu)
}

func (sc *scaleCase) requests(b *testing.B) scalefixture.Metrics {
	b.Helper()
	m, err := scalefixture.Scrape(context.Background(), sc.cs)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// delta is what moved between two scrapes: requests, and objects listed
// (as "LISTED resource" counts).
func delta(before, after scalefixture.Metrics) []scalefixture.Count {
	out := scalefixture.Delta(before.Requests, after.Requests)
	for _, c := range scalefixture.Delta(before.Listed, after.Listed) {
		out = append(out, scalefixture.Count{Key: "LISTED " + c.Key, N: c.N})
	}
	for _, c := range scalefixture.Delta(before.OpenWatches, after.OpenWatches) {
		out = append(out, scalefixture.Count{Key: "OPEN-WATCH " + c.Key, N: c.N})
	}
	return out
}

// report records min/median/max of xs as benchmark metrics and a table line.
func (sc *scaleCase) report(b *testing.B, what, unit string, xs []float64) {
	slices.Sort(xs)
	lo, med, hi := xs[0], xs[len(xs)/2], xs[len(xs)-1]
	u := strings.ReplaceAll(unit, " ", "-")
	b.ReportMetric(lo, u+"-min")
	b.ReportMetric(med, u+"-med")
	b.ReportMetric(hi, u+"-max")
	sc.tab.add("| %s | %s | %s | %s / %s / %s |", sc.name, what, unit, num(lo), num(med), num(hi))
}

// reportRequests records requests (ours, divided by div) as a table line.
func (sc *scaleCase) reportRequests(b *testing.B, what, unit string, cs []scalefixture.Count, div float64) {
	var parts, listed []string
	var lists, total, objects float64
	for _, c := range cs {
		if strings.HasPrefix(c.Key, "OPEN-WATCH ") {
			if scalefixture.Ours(c.Key) {
				parts = append(parts, fmt.Sprintf("%s %s", c.Key, num(c.N/div)))
			}
			continue
		}
		if strings.HasPrefix(c.Key, "LISTED ") {
			if scalefixture.Ours(c.Key) {
				listed = append(listed, fmt.Sprintf("%s %s", strings.TrimPrefix(c.Key, "LISTED "), num(c.N/div)))
				objects += c.N / div
			}
			continue
		}
		if !scalefixture.Ours(c.Key) {
			b.Logf("%s: not ours: %s %.1f", what, c.Key, c.N/div)
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s", c.Key, num(c.N/div)))
		total += c.N / div
		if strings.HasPrefix(c.Key, "LIST ") {
			lists += c.N / div
		}
	}
	b.ReportMetric(lists, strings.ReplaceAll(unit, " ", "-")+"-LIST")
	b.ReportMetric(total, strings.ReplaceAll(unit, " ", "-"))
	b.ReportMetric(objects, strings.ReplaceAll(unit, " ", "-")+"-objects-listed")
	sc.tab.add("| %s | %s | %s | %s (%s); objects listed %s (%s) |", sc.name, what, unit, num(total), strings.Join(parts, ", "),
		num(objects), strings.Join(listed, ", "))
}

func num(x float64) string {
	switch {
	case x == 0:
		return "0"
	case x >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case x >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case x >= 0.1:
		return strconv.FormatFloat(x, 'f', 3, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// table collects the report's lines.
type table struct {
	mu    sync.Mutex
	lines []string
}

func (t *table) add(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, fmt.Sprintf(format, args...))
}

func (t *table) flush(b *testing.B) {
	t.mu.Lock()
	defer t.mu.Unlock()
	text := strings.Join(t.lines, "\n") + "\n"
	fmt.Print(text)
	if p := os.Getenv("REBOOTWATCH_BENCH_TABLE"); p != "" {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			b.Error(err)
			return
		}
		defer f.Close()
		_, _ = f.WriteString(text)
	}
}

type binaries struct{ rebootwatch, agent string }

// buildBinaries builds both binaries from this tree (not bin/, which may be
// another tree's).
//
// With heapProfile the agent is built with -tags heapprofile: on SIGUSR1 it
// writes its in-use heap to the file REBOOTWATCH_HEAPPROFILE names
// (cmd/rebootwatch-agent/heapprofile.go).
func buildBinaries(b *testing.B, heapProfile bool) binaries {
	b.Helper()
	dir := b.TempDir()
	out := binaries{filepath.Join(dir, "rebootwatch"), filepath.Join(dir, "rebootwatch-agent")}
	for bin, pkg := range map[string]string{out.rebootwatch: "./cmd/rebootwatch", out.agent: "./cmd/rebootwatch-agent"} {
		args := []string{"build", "-o", bin}
		if heapProfile && bin == out.agent {
			args = append(args, "-tags", "heapprofile")
		}
		cmd := exec.Command("go", append(args, pkg)...)
		cmd.Dir = moduleRoot(b)
		if o, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go build %s: %v\n%s", pkg, err, o)
		}
		// On disk before it runs, as an image's binary is: pages the
		// linker just wrote are dirty in the page cache, and the kernel
		// keeps dirty pages that the agent's --reclaim-startup-pages asks
		// it to reclaim.
		if err := syncFile(bin); err != nil {
			b.Fatal(err)
		}
	}
	return out
}

// syncFile flushes the file at path to disk.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	serr := f.Sync()
	if cerr := f.Close(); serr == nil {
		serr = cerr
	}
	return serr
}

func moduleRoot(b *testing.B) string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		b.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

func findKubectl() string {
	if dir, err := testcluster.BinDir(); err == nil {
		if p := filepath.Join(dir, "kubectl"); isFile(p) {
			return p
		}
	}
	p, _ := exec.LookPath("kubectl")
	return p
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func kubectlVersion(kubectl string) string {
	out, _ := exec.Command(kubectl, "version", "--client").CombinedOutput()
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}

// cleanEnv is this process's environment without anything that would point
// a child at another cluster.
func cleanEnv() []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "KUBECONFIG=") && !strings.HasPrefix(e, "KUBERNETES_SERVICE_") && !strings.HasPrefix(e, "POD_") {
			env = append(env, e)
		}
	}
	return env
}

// selfCPU is this process's user+sys CPU time in seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return tv(ru.Utime) + tv(ru.Stime)
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

func loadavg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// envSet reads a comma-separated subset of all (default: all of it).
func envSet(b *testing.B, name string, all ...string) map[string]bool {
	out := map[string]bool{}
	v := os.Getenv(name)
	if v == "" {
		for _, a := range all {
			out[a] = true
		}
		return out
	}
	for _, x := range strings.Split(v, ",") {
		x = strings.TrimSpace(x)
		if !slices.Contains(all, x) {
			b.Fatalf("%s=%q: %q is not one of %s", name, v, x, strings.Join(all, ", "))
		}
		out[x] = true
	}
	return out
}

func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		b.Fatalf("%s=%q: want a duration", name, v)
	}
	return d
}

// milestones records, in reached, the first time (seconds since the
// session opened) the model held every node, every volume, each source
// ok and the sync: where the dashboard's wait to its first full picture
// goes.
func milestones(cl *model.Cluster, nodes, volumes int, at float64, reached map[string]float64) {
	mark := func(k string, ok bool) {
		if _, seen := reached[k]; ok && !seen {
			reached[k] = at
		}
	}
	mark("every node", cl.NodeCount() >= nodes)
	mark("every volume", cl.VolumeCount() >= volumes)
	mark("synced", cl.Synced())
	for _, h := range cl.Sources() {
		mark("source "+string(h.Name)+" ok", h.Status == model.StatusOK)
	}
}
