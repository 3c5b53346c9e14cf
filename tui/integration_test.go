package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/live"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// TestRealClusterReapGhost runs the dashboard's model on a live session
// against a real kube-apiserver: kured's lock is held by a node that does not
// exist; the screen shows it as a ghost, x → y → enter reaps it through the
// lock engine, and the DaemonSet loses its annotation.
func TestRealClusterReapGhost(t *testing.T) {
	tc := testcluster.SharedAlone(t)
	cs := tc.Client(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)

	createReadyNode(t, cs, "n1", now.Add(-time.Hour), now.Add(-time.Hour), "boot-1", "0123456789abcdef0123456789abcdef")
	value := fmt.Sprintf(`{"nodeID":"gone-node","metadata":{"unschedulable":false},"created":%q,"TTL":0}`, now.Add(-2*time.Hour).Format(time.RFC3339))
	createKured(t, cs, map[string]string{"app.kubernetes.io/name": "kured"}, value)

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := live.Open(sctx, live.Options{Config: tc.Admin, Context: "testcluster", RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	eng := s.Engine()
	cl := s.NewCluster()
	cl.Judge = eng.Judge
	wall := &clock{now: time.Now()}
	m := New(Options{Cluster: cl, Events: s.Events, Clock: s.Clock, WallClock: wall.Now, Context: sctx,
		Actions: LockActions{Engine: eng, Actor: &lock.Actor{Client: s.Client, Who: "tui-test", Fresh: s.FreshReaders()}}})
	m.Update(tea.WindowSizeMsg{Width: 140, Height: 40})

	// pump applies the session's events until cond holds on the screen.
	pump := func(what string, cond func(string) bool) {
		t.Helper()
		deadline := time.After(60 * time.Second)
		for !cond(screen(m)) {
			got := make(chan tea.Msg, 1)
			go func() { got <- waitEvents(s.Events)() }()
			select {
			case msg := <-got:
				m.Update(msg)
			case <-time.After(500 * time.Millisecond):
				m.Update(tickMsg(time.Now()))
			case <-deadline:
				t.Fatalf("timed out waiting for %s:\n%s", what, screen(m))
			}
		}
	}
	pump("the ghost lock", func(s string) bool { return strings.Contains(s, "ghost") && strings.Contains(s, "n1") })

	press(m, "tab", "x")
	if m.dialog == nil {
		t.Fatalf("x opened no dialog:\n%s", screen(m))
	}
	wall.Add(time.Second)
	if !m.dialog.Plan.Allowed {
		t.Fatalf("the engine refused the reap: %s\n%s", m.dialog.Plan.Refusal, screen(m))
	}
	cmd := press(m, "y")
	if cmd == nil {
		t.Fatal("confirm returned no command")
	}
	m.Update(cmd())
	if s := screen(m); !strings.Contains(s, "reap kured:kube-system/kured: done") {
		t.Fatalf("no done toast:\n%s", s)
	}
	got, err := cs.AppsV1().DaemonSets("kube-system").Get(ctx, "kured", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Annotations[kured.Annotation]; ok {
		t.Fatalf("the lock annotation is still there: %v", got.Annotations)
	}
	pump("the lock to be free", func(string) bool {
		sts := m.c.LockStatuses()
		return len(sts) == 1 && sts[0].Verdict == model.VerdictFree
	})
	// The timeline says who freed it (the actor), not the ghost holder.
	if s := screen(m); !strings.Contains(s, "nothing needs attention") || !strings.Contains(s, "held by gone-node reaped by tui-test") {
		t.Fatalf("screen after the reap:\n%s", s)
	}
}

// TestRealClustersList runs the cluster list over two live sessions, alpha
// against a real kube-apiserver and beta against a loopback port nothing
// listens on: alpha fills its row and its dashboard; beta's row says it is
// unreachable and why, and never holds up alpha.
func TestRealClustersList(t *testing.T) {
	alpha := testcluster.SharedAlone(t)
	port, err := testcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	beta := rest.CopyConfig(alpha.Admin)
	beta.Host = fmt.Sprintf("https://127.0.0.1:%d", port)
	cs := alpha.Client(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	createReadyNode(t, cs, "alpha-n1", now.Add(-time.Hour), now, "boot-1", "")

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var opts Options
	var sessions []*live.Session
	for _, c := range []struct {
		name string
		cfg  *rest.Config
	}{{"alpha", alpha.Admin}, {"beta", beta}} {
		s, err := live.Open(sctx, live.Options{Config: c.cfg, Context: c.name, RequestTimeout: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		sessions = append(sessions, s)
		eng := s.Engine()
		cl := s.NewCluster()
		cl.Judge = eng.Judge
		opts.Clusters = append(opts.Clusters, ClusterOptions{Cluster: cl, Events: s.Events, Clock: s.Clock,
			Actions: LockActions{Engine: eng, Actor: &lock.Actor{Client: s.Client, Who: "tui-test", Fresh: s.FreshReaders()}}})
	}
	mm := NewMulti(opts)
	mm.Update(tea.WindowSizeMsg{Width: 140, Height: 30})
	view := func() string { return ansi.Strip(mm.View().Content) }

	// One waiting goroutine per cluster, as the program runs the tagged
	// wait commands.
	msgs := make(chan tea.Msg, 16)
	for i, s := range sessions {
		go func(i int, ch <-chan model.Event) {
			for {
				msg := waitCluster(i, ch)()
				select {
				case msgs <- msg:
				case <-sctx.Done():
					return
				}
				if cm := msg.(clusterMsg); cm.msg == (streamClosedMsg{}) {
					return
				}
			}
		}(i, s.Events)
	}
	pump := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.After(90 * time.Second) // a guard against a hang
		for !cond() {
			select {
			case msg := <-msgs:
				mm.Update(msg)
			case <-time.After(500 * time.Millisecond):
				mm.Update(tickMsg(time.Now()))
			case <-deadline:
				t.Fatalf("timed out waiting for %s:\n%s", what, view())
			}
		}
	}
	start := time.Now()
	pump("alpha's node and beta unreachable", func() bool {
		rows := mm.list.Rows
		// alpha's first picture complete (while connecting it is listed
		// under attention, not all clear) and beta unreachable.
		return len(rows) == 2 && rows[0].Reachable && rows[0].Nodes == 1 && rows[0].Exit == 0 && !rows[1].Reachable && !rows[1].Connecting
	})
	s := view()
	t.Logf("both rows settled in %v", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(s, "│alpha ") || strings.Contains(s, "alpha              unreachable") {
		t.Fatalf("alpha row:\n%s", s)
	}
	if !strings.Contains(s, "beta               unreachable: ") || !strings.Contains(s, "1 of 2 need attention") {
		t.Fatalf("beta row:\n%s", s)
	}
	t.Logf("beta: %s", mm.list.Rows[1].Why)
	press := func(k string) { mm.Update(keyMsg(k)) }
	press("enter")
	if s := view(); mm.Active() != "alpha" || !strings.Contains(s, "alpha-n1") {
		t.Fatalf("alpha's dashboard:\n%s", s)
	}
	press("esc")
	press("j")
	press("enter")
	if s := view(); mm.Active() != "beta" || !strings.Contains(s, "nodes ✗") {
		t.Fatalf("beta's dashboard:\n%s", s)
	}
}
