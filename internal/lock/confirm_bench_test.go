package lock_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock/fleetlocktest"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured/kuredtest"
	"github.com/rebootwatch/rebootwatch/internal/live"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/testenv/scalefixture"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// BenchmarkConfirmToDone is what a confirmed action costs from the
// operator's confirm to `done` (issue 22 §1: at most 0.6 s at 5,000 nodes
// and 10,000 volumes), on a real apiserver seeded by internal/testenv/scalefixture
// with 1,000 nodes + 3,000 Longhorn volumes, then 5,000 + 10,000, all
// volumes healthy (or detached) so that the gates pass. Once the session
// is open, the benchmark waits until the apiserver and etcd are idle (the
// session's own start-up list of every volume done, as on a dashboard an
// operator has been looking at), then runs. Per run, the ghost
// holder takes fleetlock's Lease again and the dashboard's model (a live
// session, informers) sees it; then, timed: the confirm's judgement again
// on the model as it is now (as the dialog does), and the actor's Do as the
// CLI, the dashboard and the agent wire it — the fresh read of
// every gate's input (nodes, lock objects, volumes; no Prometheus here), the
// Lease's update and its Event. Each size reports min/median/max over
// REBOOTWATCH_BENCH_RUNS runs (default 10), with its parts, and the load
// average, as a table in the log (-v). Run it with
//
//	REBOOTWATCH_INTEGRATION=1 go test -run '^$' -bench ConfirmToDone -benchtime 1x -timeout 60m -v ./internal/lock/
func BenchmarkConfirmToDone(b *testing.B) {
	if !testcluster.Integration() {
		b.Skip("seeds a real apiserver with 15,000 objects (minutes): set " + testcluster.EnvIntegration + "=1 to run")
	}
	runs := 10
	if v := os.Getenv("REBOOTWATCH_BENCH_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("REBOOTWATCH_BENCH_RUNS=%q", v)
		}
		runs = n
	}
	c := testcluster.Start(b)
	c.InstallLonghornCRD(b)
	// Healthy or detached volumes only: a degraded one fails the volume
	// gate, and a refused plan is never acted on.
	scalefixture.Robustness = []string{"healthy", "healthy", "unknown"}
	fx := &scalefixture.Fixture{Client: c.Client(b), Dynamic: c.Dynamic(b), Config: c.Admin}
	fc, err := fleetlocktest.Client(c.Admin)
	if err != nil {
		b.Fatal(err)
	}
	var table []string
	defer func() {
		for _, l := range table {
			b.Log(l)
		}
	}()
	only := os.Getenv("REBOOTWATCH_BENCH_SIZES") // e.g. "5000": only the sizes with these node counts
	for _, size := range []struct{ nodes, volumes int }{{1000, 3000}, {5000, 10000}} {
		if only != "" && !slices.Contains(strings.Split(only, ","), strconv.Itoa(size.nodes)) {
			continue
		}
		b.Run(fmt.Sprintf("nodes=%d,volumes=%d", size.nodes, size.volumes), func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
			defer cancel()
			if err := fx.Grow(ctx, size.nodes, size.volumes); err != nil {
				b.Fatal(err)
			}
			ghostKured(b, ctx, fx)
			s, err := live.Open(ctx, live.Options{Config: c.Admin, Context: "bench", RequestTimeout: time.Minute,
				SyncTimeout: 5 * time.Minute, KuredDaemonSet: scalefixture.KuredNamespace + "/" + scalefixture.KuredName,
				FleetlockNamespace: scalefixture.FleetlockNS})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			cl := s.NewCluster()
			eng := s.Engine()
			var reads readTimes
			actor := &lock.Actor{Client: s.Client, Who: "bench", Timeout: time.Minute, Fresh: reads.wrap(s.FreshReaders()),
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			ref := model.LockRef{Kind: model.LockFleetlock, Namespace: scalefixture.FleetlockNS, Name: "fleetlock-default"}
			// The operator confirms on an open dashboard, not within a
			// second of its first picture: wait until the session's start
			// (its informer's list of every volume, right after that
			// picture) no longer loads the apiserver. Once, not before
			// every run: the session's steady audits and probes stay in.
			// The model keeps applying what arrives meanwhile, as the
			// dashboard does (a session nobody drains holds its sources).
			idle := make(chan bool, 1)
			go func() { _, ok := c.WaitIdle(time.Minute); idle <- ok }()
		settle:
			for {
				select {
				case ev := <-s.Events:
					cl.Apply(ev, s.Clock())
				case ok := <-idle:
					if !ok {
						b.Logf("the apiserver and etcd did not settle in 1m after the session opened; measuring anyway")
					}
					break settle
				}
			}
			s.Drain(cl)
			cl.Recompute(s.Clock())
			var took, plans, does []float64
			for run := 0; run < runs; run++ {
				l, err := fleetlocktest.Lock(ctx, fc, scalefixture.FleetlockNS, "default", ghostID, "")
				if err != nil {
					b.Fatal(err)
				}
				follow(b, ctx, s, cl, func() bool {
					o, ok := cl.Lock(ref)
					return ok && cl.Synced() && o.ResourceVersion == l.ResourceVersion
				})
				p, err := eng.Plan(cl, ref, "", model.ActionReap, s.Clock())
				if err != nil || !p.Allowed {
					b.Fatalf("plan %+v %v", p.Refusal, err)
				}
				// The operator confirms: the dialog judges again on the
				// model (kept current by the dashboard's event loop), then
				// the actor acts.
				t0 := time.Now()
				again, err := eng.Plan(cl, ref, "", model.ActionReap, s.Clock())
				if err != nil || !again.SameDecision(p) {
					b.Fatalf("the decision changed: %+v %v", again.Refusal, err)
				}
				t1 := time.Now()
				r := actor.Do(ctx, again, lock.DoOptions{})
				t2 := time.Now()
				if r.Outcome != model.OutcomeDone {
					b.Fatalf("%s: %s", r.Outcome, r.Message)
				}
				took = append(took, t2.Sub(t0).Seconds())
				plans = append(plans, t1.Sub(t0).Seconds())
				does = append(does, t2.Sub(t1).Seconds())
			}
			load := loadAverage()
			row := func(what string, xs []float64) {
				slices.Sort(xs)
				table = append(table, fmt.Sprintf("| %d nodes + %d volumes | %s s | %.3f / %.3f / %.3f | load %s |",
					size.nodes, size.volumes, what, xs[0], xs[len(xs)/2], xs[len(xs)-1], load))
			}
			row(fmt.Sprintf("confirm → done (%d runs)", runs), took)
			b.ReportMetric(took[0], "s-min")
			b.ReportMetric(took[len(took)/2], "s-med")
			b.ReportMetric(took[len(took)-1], "s-max")
			row("of which the plan again", plans)
			row("of which the actor's Do", does)
			row("of which the fresh read of the nodes", reads.nodes)
			row("of which the fresh read of the lock objects", reads.locks)
			row("of which the fresh read of the volumes", reads.volumes)
		})
	}
}

// readTimes times each fresh read of the actor (their calls run at once).
type readTimes struct {
	mu                    sync.Mutex
	nodes, locks, volumes []float64
}

func (rt *readTimes) add(to *[]float64, t0 time.Time) {
	d := time.Since(t0).Seconds()
	rt.mu.Lock()
	*to = append(*to, d)
	rt.mu.Unlock()
}

func (rt *readTimes) wrap(f lock.FreshReaders) lock.FreshReaders {
	nodes, locks, volumes := f.Nodes, f.Locks, f.Volumes
	f.Nodes = func(ctx context.Context, sel string) ([]model.Node, error) {
		defer rt.add(&rt.nodes, time.Now())
		return nodes(ctx, sel)
	}
	f.Locks = func(ctx context.Context) ([]model.LockObject, error) {
		defer rt.add(&rt.locks, time.Now())
		return locks(ctx)
	}
	f.Volumes = func(ctx context.Context) ([]model.Volume, bool, error) {
		defer rt.add(&rt.volumes, time.Now())
		return volumes(ctx)
	}
	return f
}

// ghostID is the fleetlock holder no node maps to (scalefixture's).
const ghostID = "0123456789abcdef0123456789abcdef"

// ghostKured makes the fixture's kured lock a ghost's (it is node 1's, which
// has not rebooted: a held lock that fails every other lock's other-nodes
// gate).
func ghostKured(b *testing.B, ctx context.Context, fx *scalefixture.Fixture) {
	b.Helper()
	dsc := fx.Client.AppsV1().DaemonSets(scalefixture.KuredNamespace)
	ds, err := dsc.Get(ctx, scalefixture.KuredName, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ds.Annotations[kured.Annotation] = kuredtest.Single("gone-node", time.Now().Add(-time.Hour), 0, false)
	if _, err := dsc.Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
		b.Fatal(err)
	}
}

// follow applies the session's events to cl until cond holds.
func follow(b *testing.B, ctx context.Context, s *live.Session, cl *model.Cluster, cond func() bool) {
	b.Helper()
	for !cond() {
		select {
		case ev := <-s.Events:
			cl.Apply(ev, s.Clock())
			s.Drain(cl)
			cl.Recompute(s.Clock())
		case <-ctx.Done():
			b.Fatal("the model never caught up")
		}
	}
}

func loadAverage() string {
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
