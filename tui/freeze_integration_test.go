package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tea "charm.land/bubbletea/v2"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/live"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// TestRealClusterFrozenAPIServer freezes a real kube-apiserver (SIGSTOP)
// under a live dashboard (issue 11 §1). No pill may stay ✓, the release
// dialog may not say "✓ fresh-data nodes and lock data are fresh", and no
// confirmed release may be attempted on the cached picture.
//
//   - A release confirmed right after the freeze (the caches still look
//     fine) is refused by the actor's fresh quorum read of the node list:
//     "fresh-data", nothing written.
//   - Once the sources have heard nothing for their bound, the pills say
//     stale, and the dialog's fresh-data gate fails naming them.
//   - After SIGCONT the pills are ✓ again and the release goes through.
func TestRealClusterFrozenAPIServer(t *testing.T) {
	tc := testcluster.SharedToItself(t) // it freezes the apiserver; thawed when it ends
	cs := tc.Client(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)

	// n1 holds kured's lock, taken 40m ago; it rebooted (Ready since 20m),
	// so the lock is orphaned. n2 is steady.
	for _, n := range []struct {
		name  string
		since time.Duration
	}{{"n1", 20 * time.Minute}, {"n2", 3 * time.Hour}} {
		createReadyNode(t, cs, n.name, now.Add(-n.since), now, "boot-"+n.name, "0123456789abcdef0123456789abcde"+n.name[1:])
	}
	value := `{"nodeID":"n1","metadata":{"unschedulable":false},"created":"` + now.Add(-40*time.Minute).Format(time.RFC3339) + `","TTL":0}`
	createKured(t, cs, map[string]string{"name": "kured"}, value)
	annotation := func() (string, bool) {
		t.Helper()
		got, err := cs.AppsV1().DaemonSets("kube-system").Get(ctx, "kured", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, ok := got.Annotations[kured.Annotation]
		return v, ok
	}

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	const requestTimeout = 3 * time.Second
	// A short orphan grace: the holder's uncordon is not dated (no
	// managedFields entry), so the dashboard counts it steady from when it
	// first saw it schedulable (issue 27 §3).
	s, err := live.Open(sctx, live.Options{Config: tc.Admin, Context: "testcluster", RequestTimeout: requestTimeout,
		StaleAfter: 2 * time.Second, ProbeInterval: 200 * time.Millisecond, OrphanGrace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	thawed := false
	defer func() {
		if !thawed {
			_ = tc.Thaw()
		}
	}()
	eng := s.Engine()
	cl := s.NewCluster()
	wall := &clock{now: time.Now()}
	m := New(Options{Cluster: cl, Events: s.Events, Clock: s.Clock, WallClock: wall.Now, Context: sctx,
		Actions: LockActions{Engine: eng, Actor: &lock.Actor{Client: s.Client, Who: "tui-test", Timeout: requestTimeout, Fresh: s.FreshReaders()}}})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 44})

	pump := sessionPump(t, sctx, m, s.Events)
	source := func(name model.SourceName) model.SourceStatus {
		h, _ := m.c.Source(name)
		return h.Status
	}
	openRelease := func() {
		t.Helper()
		press(m, "r")
		if m.dialog == nil {
			t.Fatalf("r opened no dialog:\n%s", screen(m))
		}
		wall.Add(time.Second) // past the dialog's ignore window
	}
	gate := func(name string) lock.Gate {
		t.Helper()
		for _, g := range m.dialog.Plan.Gates {
			if g.Name == name {
				return g
			}
		}
		t.Fatalf("no gate %s in %+v", name, m.dialog.Plan.Gates)
		return lock.Gate{}
	}

	pump("the orphaned lock, every source ok", func(sc string) bool {
		return strings.Contains(sc, "orphaned") && source(model.SourceNodes) == model.StatusOK && source(model.SourceKured) == model.StatusOK
	})
	press(m, "tab")
	openRelease()
	if g := gate(lock.GateFreshData); !g.Passed || !m.dialog.Plan.Allowed {
		t.Fatalf("before the freeze the release must be allowed: %+v\n%s", m.dialog.Plan.Gates, screen(m))
	}

	// Freeze, and confirm at once: the caches still look fresh, so only the
	// actor's quorum read can tell.
	if err := tc.Freeze(); err != nil {
		t.Fatal(err)
	}
	cmd := press(m, "y")
	if cmd == nil {
		t.Fatalf("confirm returned no command:\n%s", screen(m))
	}
	done := cmd()
	m.Update(done)
	res := done.(actionDoneMsg).res
	if res.Outcome != model.OutcomeRefused || !strings.Contains(res.Message, "fresh-data") ||
		!strings.Contains(res.Message, "could not read the node list fresh") || !strings.Contains(res.Message, "nothing written") {
		t.Fatalf("a release on a frozen API server: %s: %s", res.Outcome, res.Message)
	}
	if sc := screen(m); !strings.Contains(sc, "fresh-data") {
		t.Fatalf("the refusal is not on screen:\n%s", sc)
	}

	// The sources notice the silence: the pills turn stale, with an age.
	pump("nodes and kured stale", func(sc string) bool {
		header, _, _ := strings.Cut(sc, "\n")
		return source(model.SourceNodes) == model.StatusStale && source(model.SourceKured) == model.StatusStale &&
			strings.Contains(header, "nodes stale") && strings.Contains(header, "kured stale")
	})
	openRelease()
	g := gate(lock.GateFreshData)
	if g.Passed || m.dialog.Plan.Allowed || !strings.Contains(g.Reason, "nodes stale") || !strings.Contains(g.Reason, "kured stale") {
		t.Fatalf("the fresh-data gate on a frozen API server: %+v\n%s", g, screen(m))
	}
	if sc := screen(m); !strings.Contains(sc, "✗ fresh-data") || strings.Contains(sc, "✓ fresh-data") {
		t.Fatalf("the dialog must show fresh-data failed:\n%s", sc)
	}
	press(m, "esc")

	// SIGCONT: the server answers again, nothing was written meanwhile,
	// and the release goes through.
	if err := tc.Thaw(); err != nil {
		t.Fatal(err)
	}
	thawed = true
	pump("every source ok again", func(sc string) bool {
		header, _, _ := strings.Cut(sc, "\n")
		return source(model.SourceNodes) == model.StatusOK && source(model.SourceKured) == model.StatusOK &&
			strings.Contains(header, "nodes ✓") && strings.Contains(header, "kured ✓") && !strings.Contains(header, "stale")
	})
	if v, ok := annotation(); !ok || v != value {
		t.Fatalf("the lock changed while the API server was frozen: %q %v", v, ok)
	}
	openRelease()
	if !m.dialog.Plan.Allowed {
		t.Fatalf("after the thaw the release must be allowed: %s", m.dialog.Plan.Refusal)
	}
	cmd = press(m, "y")
	if cmd == nil {
		t.Fatal("confirm returned no command")
	}
	done = cmd()
	m.Update(done)
	if res := done.(actionDoneMsg).res; res.Outcome != model.OutcomeDone {
		t.Fatalf("release after the thaw: %s: %s", res.Outcome, res.Message)
	}
	if _, ok := annotation(); ok {
		t.Fatal("the lock annotation is still there after the release")
	}
}
