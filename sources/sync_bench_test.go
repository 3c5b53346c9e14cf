package sources_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/internal/testenv/scalefixture"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
	"github.com/rebootwatch/rebootwatch/sources/kube"
	"github.com/rebootwatch/rebootwatch/sources/longhorn"
)

// Scale of the benchmark cluster (issue 3, "Done when").
const (
	benchNodes   = 5000
	benchVolumes = 10000
)

// BenchmarkFullSync seeds a real apiserver with 5,000 nodes and 10,000
// Longhorn volumes (once), then measures:
//
//   - sources/json, sources/protobuf: a full sync of the kube and longhorn
//     sources into a model in this process (typed client speaking JSON or
//     protobuf; CRDs are always JSON): wall time (ns/op), the LIST and WATCH
//     requests the apiserver counted (apiserver_request_total), the live heap
//     after sync with the sources still running, and the process's peak RSS
//     during the timed part;
//
//   - snapshot-command: `rebootwatch --snapshot -o json` as a separate
//     process against the cluster: wall time, requests, its max RSS.
//
//     REBOOTWATCH_INTEGRATION=1 go test -run '^$' -bench FullSync -benchtime 3x -timeout 30m ./sources/
func BenchmarkFullSync(b *testing.B) {
	if !testcluster.Integration() {
		b.Skip("seeds a real apiserver with 15,000 objects (minutes): set " + testcluster.EnvIntegration + "=1 to run")
	}
	c := testcluster.Start(b)
	cs := c.Client(b)
	dyn := c.Dynamic(b)
	c.InstallLonghornCRD(b)
	start := time.Now()
	fx := &scalefixture.Fixture{Client: cs, Dynamic: dyn, Config: c.Admin}
	if err := fx.Grow(context.Background(), benchNodes, benchVolumes); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d nodes and %d volumes in %s", benchNodes, benchVolumes, time.Since(start).Round(time.Millisecond))

	for _, ct := range []string{"json", "protobuf"} {
		b.Run("sources/"+ct, func(b *testing.B) {
			cfg := rest.CopyConfig(c.Admin)
			if ct == "protobuf" {
				cfg.ContentType = "application/vnd.kubernetes.protobuf"
				cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
			}
			typed, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			debug.FreeOSMemory()
			before := requestCounts(b, cs)
			resetPeakRSS()
			var heap uint64
			n := 0
			for b.Loop() {
				heap = syncOnce(b, typed, dyn)
				n++
			}
			reportRequests(b, before, requestCounts(b, cs), n)
			b.ReportMetric(float64(heap)/(1<<20), "heap-MiB-after-sync")
			if rss := peakRSS(); rss > 0 {
				b.ReportMetric(float64(rss)/(1<<10), "peak-RSS-MiB")
			}
		})
	}

	b.Run("snapshot-command", func(b *testing.B) {
		bin := rebootwatchBinary(b)
		before := requestCounts(b, cs)
		var maxRSS int64
		n := 0
		for b.Loop() {
			cmd := exec.Command(bin, "--snapshot", "-o", "json", "--kubeconfig", c.Kubeconfig)
			cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			// ru_maxrss of a child counts the parent's pages at fork time, so
			// the child's own peak is read from /proc while it runs.
			stop := make(chan struct{})
			peak := make(chan int64)
			go func() {
				var hwm int64
				path := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
				for {
					if v := vmHWM(path); v > hwm {
						hwm = v
					}
					select {
					case <-stop:
						peak <- hwm
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
			}()
			err := cmd.Wait()
			close(stop)
			if p := <-peak; p > maxRSS {
				maxRSS = p
			}
			code := cmd.ProcessState.ExitCode()
			if err != nil && code != 2 { // 2: something needs attention (faulted volumes)
				b.Fatalf("rebootwatch --snapshot: %v\n%s", err, errb.String())
			}
			var snap struct {
				Fleet   struct{ Nodes int }
				Volumes *struct{ Total int }
			}
			if err := json.Unmarshal(out.Bytes(), &snap); err != nil {
				b.Fatalf("snapshot JSON: %v\n%.500s", err, out.String())
			}
			if snap.Fleet.Nodes != benchNodes || snap.Volumes == nil || snap.Volumes.Total != benchVolumes {
				b.Fatalf("snapshot saw %d nodes, volumes %+v", snap.Fleet.Nodes, snap.Volumes)
			}
			n++
		}
		reportRequests(b, before, requestCounts(b, cs), n)
		b.ReportMetric(float64(maxRSS)/(1<<10), "peak-RSS-MiB")
	})
}

// rebootwatchBinary returns bin/rebootwatch when `make build` made it, else
// builds one into a temporary directory.
func rebootwatchBinary(b *testing.B) string {
	b.Helper()
	if dir, err := testcluster.BinDir(); err == nil {
		p := filepath.Join(dir, "rebootwatch")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p := filepath.Join(b.TempDir(), "rebootwatch")
	out, err := exec.Command("go", "build", "-o", p, "github.com/rebootwatch/rebootwatch/cmd/rebootwatch").CombinedOutput()
	if err != nil {
		b.Fatalf("go build rebootwatch: %v\n%s", err, out)
	}
	return p
}

// requestCounts reads apiserver_request_total, summed by "VERB resource".
func requestCounts(b *testing.B, cs kubernetes.Interface) map[string]float64 {
	b.Helper()
	m, err := scalefixture.RequestCounts(context.Background(), cs)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

func reportRequests(b *testing.B, before, after map[string]float64, n int) {
	var lists, watches, other float64
	for k, v := range after {
		d := v - before[k]
		verb, res, _ := strings.Cut(k, " ")
		ours := res == "nodes" || res == "daemonsets" || res == "leases" || res == "volumes"
		switch {
		case ours && verb == "LIST":
			lists += d
		case ours && verb == "WATCH":
			watches += d
		case d > 0:
			// Everything else, including the apiserver's own background
			// requests (its identity Lease renewals) and this benchmark's
			// /metrics reads: noise of a few per second.
			other += d
			b.Logf("other request: %s +%.0f", k, d)
		}
	}
	if n == 0 {
		n = 1
	}
	b.ReportMetric(lists/float64(n), "lists/op")
	b.ReportMetric(watches/float64(n), "watches/op")
	b.ReportMetric(other/float64(n), "other-requests/op")
}

// syncOnce starts both sources into a fresh model, waits until it holds
// every node and volume with every source ok, and returns the live heap.
func syncOnce(b *testing.B, cs kubernetes.Interface, dyn dynamic.Interface) uint64 {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	m := model.NewCluster("bench", model.Options{})
	sink := sources.Serial(func(ev model.Event) {
		mu.Lock()
		m.Apply(ev, time.Now())
		mu.Unlock()
	})
	ks, err := kube.Start(ctx, kube.Options{Client: cs}, sink)
	if err != nil {
		b.Fatal(err)
	}
	ls, err := longhorn.Start(ctx, longhorn.Options{Client: dyn}, sink)
	if err != nil {
		b.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Minute)
	defer wcancel()
	if err := ks.WaitForSync(wctx); err != nil {
		b.Fatal(err)
	}
	if err := ls.WaitForSync(wctx); err != nil {
		b.Fatal(err)
	}
	mu.Lock()
	m.Recompute(time.Now())
	n, v := m.NodeCount(), m.VolumeCount()
	nh, _ := m.Source(model.SourceNodes)
	lh, _ := m.Source(model.SourceLonghorn)
	mu.Unlock()
	if n != benchNodes || v != benchVolumes || nh.Status != model.StatusOK || lh.Status != model.StatusOK {
		b.Fatalf("after sync: %d nodes, %d volumes, nodes %s, longhorn %s", n, v, nh.Status, lh.Status)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// resetPeakRSS resets the kernel's peak-RSS mark of this process (Linux).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS returns this process's VmHWM in KiB (0 if unknown).
func peakRSS() int64 { return vmHWM("/proc/self/status") }

// vmHWM reads VmHWM (peak RSS, KiB) from a /proc/<pid>/status file.
func vmHWM(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				return n
			}
		}
	}
	return 0
}
