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

// TestRealClusterStalledWatch runs the dashboard through a proxy that
// passes every list and probe but holds the DaemonSet watch (issue 22 §1).
// kured's lock changes hands meanwhile. The kured pill must not stay ✓ nor
// the release dialog pass fresh-data on the cached lock: the audit finds
// the watch behind the server, the header says kured stale and the
// fresh-data gate fails naming it — with the default audit interval. Once
// the watch delivers, the pill is ✓ again and the new holder is on screen.
func TestRealClusterStalledWatch(t *testing.T) {
	tc := testcluster.SharedAlone(t)
	cs := tc.Client(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	for _, n := range []struct {
		name  string
		since time.Duration
	}{{"n1", 20 * time.Minute}, {"n2", 3 * time.Hour}} {
		createReadyNode(t, cs, n.name, now.Add(-n.since), now, "boot-"+n.name, "0123456789abcdef0123456789abcde"+n.name[1:])
	}
	value := `{"nodeID":"n1","metadata":{"unschedulable":false},"created":"` + now.Add(-40*time.Minute).Format(time.RFC3339) + `","TTL":0}`
	createKured(t, cs, map[string]string{"name": "kured"}, value)

	p := tc.StallingProxy(t, tc.Admin)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A short orphan grace: the holder's uncordon is not dated, so the
	// dashboard counts it steady from when it first saw it (issue 27 §3).
	s, err := live.Open(sctx, live.Options{Config: p.Config, Context: "testcluster", RequestTimeout: 3 * time.Second, OrphanGrace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cl := s.NewCluster()
	wall := &clock{now: time.Now()}
	m := New(Options{Cluster: cl, Events: s.Events, Clock: s.Clock, WallClock: wall.Now, Context: sctx,
		Actions: LockActions{Engine: s.Engine(), Actor: &lock.Actor{Client: s.Client, Who: "tui-test", Timeout: 3 * time.Second}}})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 44})
	pump := sessionPump(t, sctx, m, s.Events)
	source := func(name model.SourceName) model.SourceStatus {
		h, _ := m.c.Source(name)
		return h.Status
	}
	pump("the orphaned lock, kured ok", func(sc string) bool {
		return strings.Contains(sc, "orphaned") && source(model.SourceKured) == model.StatusOK
	})

	p.Hold("daemonsets")
	pump("the DaemonSet watch held", func(string) bool { return p.Holding("daemonsets") > 0 })
	ds, err := cs.AppsV1().DaemonSets("kube-system").Get(ctx, "kured", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ds.Annotations[kured.Annotation] = strings.Replace(value, `"n1"`, `"n2"`, 1)
	if _, err := cs.AppsV1().DaemonSets("kube-system").Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	pump("kured stale in the header", func(sc string) bool {
		header, _, _ := strings.Cut(sc, "\n")
		h, _ := m.c.Source(model.SourceKured)
		return h.Status == model.StatusStale && strings.Contains(h.Message, "watch not delivering") &&
			strings.Contains(h.Message, "DaemonSet kube-system/kured") && strings.Contains(header, "kured stale")
	})
	t.Logf("MEASURED kured changed behind a held watch → dashboard pill stale after %s (default audit)", time.Since(changed).Round(100*time.Millisecond))
	press(m, "tab")
	press(m, "r")
	if m.dialog == nil {
		t.Fatalf("r opened no dialog:\n%s", screen(m))
	}
	for _, g := range m.dialog.Plan.Gates {
		if g.Name == lock.GateFreshData && (g.Passed || !strings.Contains(g.Reason, "kured stale")) {
			t.Fatalf("fresh-data on a stalled kured watch: %+v", g)
		}
	}
	if m.dialog.Plan.Allowed {
		t.Fatalf("a release allowed on a stalled watch:\n%s", screen(m))
	}
	press(m, "esc")

	p.Release("daemonsets")
	pump("kured ok again, n2 holding", func(sc string) bool {
		header, _, _ := strings.Cut(sc, "\n")
		l, ok := m.c.Lock(model.LockRef{Kind: model.LockKured, Namespace: "kube-system", Name: "kured"})
		spec, isKured := l.Spec.(*kured.Spec)
		return source(model.SourceKured) == model.StatusOK && strings.Contains(header, "kured ✓") &&
			ok && isKured && strings.Contains(spec.Value, `"n2"`)
	})
}
